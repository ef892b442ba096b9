"""The light dense encoder: the ONNX export of a local model, run by ONNX Runtime (no torch import).

The same pipeline as sentence-transformers for a mean-pooling model: the model's fast tokenizer
(``tokenizer.json`` through ``tokenizers``, truncated to ``max_seq_length``, padded to the longest text of
the batch), the transformer and the masked mean (both in the exported graph), then L2 normalisation.
Its vectors match the torch encoder's in float32 to a cosine of 0.99999 or better (tested).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ragindex.encoders.dense.onnx_export import OnnxLayout
from ragindex.encoders.precision import PrecisionCacheKey
from ragindex.encoders.prompts import NO_PROMPTS, Prompts
from ragindex.errors import ConfigurationError, EncodingError
from ragindex.language import Script

log = logging.getLogger(__name__)

QueryPrecision = Literal["auto", "float32", "int8"]
"""``RAGINDEX_QUERY_PRECISION``: which graph encodes queries (:func:`int8_query_file`)."""


@dataclass(eq=False)
class OnnxDenseEncoder(PrecisionCacheKey):
    """A sentence-transformers model exported to ONNX, encoding on the CPU (float32, or its int8 copy).

    Args:
        layout: The model directory's tokenizer and pooling facts (:func:`~.onnx_export.read_layout`).
        model_file: The exported graph (:func:`~.onnx_export.export_onnx`): documents and queries unless
            ``document_model_file`` or ``query_model_file`` says otherwise.
        query_model_file: The graph that encodes queries, if another (the int8 copy,
            :func:`~.onnx_export.quantize_onnx`).
        document_model_file: The graph that encodes documents, if another: the int8 copy with
            ``RAGINDEX_DENSE_PRECISION=int8`` (:attr:`precision` is then ``int8``, and so is the cache key).
        fingerprint: The torch encoder's fingerprint (prompts included): the vector space is the same.
        languages: Scripts the model covers (the torch encoder's).
        prompts: The torch encoder's query and document prompts, put in front of the texts here.
        batch_size: Texts per ONNX Runtime call.
        threads: Intra-op threads, or None for ONNX Runtime's default (one per physical core).
    """

    layout: OnnxLayout
    model_file: Path
    _: KW_ONLY
    fingerprint: str
    languages: frozenset[Script]
    query_model_file: Path | None = None
    document_model_file: Path | None = None
    prompts: Prompts = NO_PROMPTS
    batch_size: int = 64
    threads: int | None = None
    _sessions: dict[Path, Any] = field(default_factory=dict, init=False, repr=False)
    _tokenizer: Any = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def query_file(self) -> Path:
        """The graph that encodes queries."""
        return self.query_model_file or self.model_file

    @property
    def document_file(self) -> Path:
        """The graph that encodes documents."""
        return self.document_model_file or self.model_file

    @property
    def precision(self) -> str:
        """The documents' precision (the cache key's): ``float32`` (torch's float32 vectors) or ``int8``."""
        return "float32" if self.document_file == self.model_file else "int8"

    @property
    def dimension(self) -> int:
        """Embedding dimension (from the model's pooling config; no load)."""
        return self.layout.dimension

    def load(self) -> None:
        """Open the tokenizer and the query graph's ONNX Runtime session (idempotent).

        The document graph, when it is another file, is opened on the first :meth:`encode_documents`.

        Raises:
            ConfigurationError: onnxruntime or tokenizers is missing, or a file cannot be loaded.
        """
        self._session_for(self.query_file)

    def _session_for(self, model_file: Path) -> Any:
        with self._lock:
            session = self._sessions.get(model_file)
            if session is not None:
                return session
            try:
                import onnxruntime
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise ConfigurationError(f"the light dense encoder needs onnxruntime and tokenizers: {exc}") from exc
            try:
                if self._tokenizer is None:
                    tokenizer = Tokenizer.from_file(str(self.layout.model_dir / "tokenizer.json"))
                    tokenizer.enable_truncation(self.layout.max_length)
                    tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]") or 0)
                    self._tokenizer = tokenizer
                options = onnxruntime.SessionOptions()
                options.log_severity_level = 3
                # no busy-waiting workers: on 2 shared cores (load ~4) a query took a steady ~10 ms without
                # spinning and 8-45 ms with it; spinning threads also steal the CPU an ingest is using
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                if self.threads:
                    options.intra_op_num_threads = self.threads
                session = onnxruntime.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
            except Exception as exc:
                raise ConfigurationError(
                    f"cannot load the ONNX encoder {model_file}: {exc}", path=str(model_file)
                ) from exc
            self._sessions[model_file] = session
            return session

    def _encode(self, texts: Sequence[str], model_file: Path) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        session = self._session_for(model_file)
        if self.layout.lower_case:
            texts = [t.lower() for t in texts]
        # sort by length so that each call pads least, then put the vectors back in order
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        # the int8 graph quantizes its activations with one scale per call, taken over every text of the batch and
        # its padding: batched, a query's vector would depend on the queries beside it (cosine ~0.99 to itself
        # alone), so a search's scores on the traffic around it. One text a call keeps a query's vector its own.
        batch = self.batch_size if model_file == self.model_file else 1
        try:
            for start in range(0, len(order), batch):
                part = order[start : start + batch]
                encodings = self._tokenizer.encode_batch([texts[i] for i in part])
                feed = {
                    "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                    "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                    "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
                }
                out[part] = session.run(None, feed)[0]
        except Exception as exc:
            raise EncodingError(f"ONNX dense encoding with {model_file} failed: {exc}") from exc
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Chunk vectors (the document prompt in front of each text), from the document graph."""
        return self._encode(self.prompts.documents(texts), self.document_file)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors (the query prompt in front of each text), from the query graph."""
        return self._encode(self.prompts.queries(texts), self.query_file)

    def encode_queries_with(self, model_file: Path, texts: Sequence[str]) -> np.ndarray:
        """Query vectors from another graph of the same model (the int8 check compares the two)."""
        return self._encode(self.prompts.queries(texts), model_file)


def prepare_onnx_encoder(
    model_dir: Path | None,
    *,
    fingerprint: str,
    languages: Iterable[Script],
    prompts: Prompts = NO_PROMPTS,
    model_fingerprint: str | None = None,
    cache_dir: Path | None = None,
    batch_size: int = 64,
    threads: int | None = None,
    query_precision: QueryPrecision = "float32",
    document_precision: Literal["float32", "int8"] = "float32",
) -> OnnxDenseEncoder | None:
    """The light encoder of a local model, exported first if its cache has no copy; None if unsupported.

    ``fingerprint`` (prompts included) is the encoder's; the export is the model's alone, kept under
    ``model_fingerprint`` (default ``fingerprint``), so changing the prompts does not export the model again.
    Queries are encoded by an int8 copy of the export (:func:`int8_query_file`) with ``query_precision`` ``int8``,
    or ``auto`` once that copy has passed its check against float32. Documents use the float32 graph, or with
    ``document_precision`` ``int8`` (``RAGINDEX_DENSE_PRECISION=int8``) the int8 copy, and then queries do too.

    Unsupported (None, logged at info): no local directory, or a pipeline the export does not reproduce
    (see :func:`~.onnx_export.read_layout`).

    Raises:
        ConfigurationError: The export or the load failed (read-only or full cache dir, onnx missing, ...).
    """
    from ragindex.encoders.dense.onnx_export import export_onnx, onnx_model_path, read_layout

    layout = read_layout(model_dir) if model_dir is not None else None
    if layout is None:
        log.info("the dense model %s has no ONNX equivalent here; torch encodes every text", fingerprint)
        return None
    target = onnx_model_path(model_fingerprint or fingerprint, layout.model_dir, cache_dir)
    if not target.is_file():
        export_onnx(layout, target)

    def build(query_file: Path | None, document_file: Path | None = None) -> OnnxDenseEncoder:
        return OnnxDenseEncoder(
            layout,
            target,
            fingerprint=fingerprint,
            languages=frozenset(languages),
            query_model_file=query_file,
            document_model_file=document_file,
            prompts=prompts,
            batch_size=batch_size,
            threads=threads,
        )

    if document_precision == "int8":  # one graph for both sides: a query meets chunks of its own precision
        int8 = int8_query_file(target, "int8", build, side="documents", setting="RAGINDEX_DENSE_PRECISION")
        encoder = build(int8, int8)
    else:
        encoder = build(int8_query_file(target, query_precision, build) if query_precision != "float32" else None)
    encoder.load()
    return encoder


def int8_query_file(
    target: Path,
    precision: QueryPrecision,
    build: Callable[[Path | None], OnnxDenseEncoder],
    *,
    side: str = "queries",
    setting: str = "RAGINDEX_QUERY_PRECISION",
) -> Path | None:
    """The int8 copy of the export ``target`` that should encode queries (and chunks too), or None for float32.

    The copy is written on first use (:func:`~.onnx_export.quantize_onnx`) and checked once against the float32
    graph (:mod:`~.int8_check`). ``auto`` takes it only if the check passed; ``int8`` takes it anyway, with a
    warning if it did not. A copy that cannot be written (read-only cache) means float32 queries: with a warning
    when ``int8`` was asked for, at info level for ``auto``. ``side`` and ``setting`` name, in those messages, what
    the copy encodes and the setting that asked for it.
    """
    from ragindex.encoders.dense.int8_check import keep_agreement, measure_agreement, read_agreement
    from ragindex.encoders.dense.onnx_export import INT8_MODEL_FILE, quantize_onnx

    asked = precision == "int8"
    int8 = target.with_name(INT8_MODEL_FILE)
    if not int8.is_file():
        try:
            quantize_onnx(target, int8)
        except ConfigurationError as exc:  # e.g. a read-only cache prepared without it: float32 still serves
            (log.warning if asked else log.info)("%s are encoded in float32: %s", side, exc.message)
            return None
    agreement = read_agreement(int8)
    if agreement is None:
        try:
            agreement = measure_agreement(build(int8))
        except ConfigurationError as exc:  # a damaged copy (truncated, half-copied): write it once more
            log.warning("the int8 query encoder cannot be loaded, writing it again: %s", exc.message)
            try:
                quantize_onnx(target, int8)
                agreement = measure_agreement(build(int8))
            except ConfigurationError as again:
                log.warning("%s are encoded in float32: %s", side, again.message)
                return None
        keep_agreement(int8, agreement)
        log.info("int8 query encoder %s: %s", int8, agreement.describe())
    if agreement.accepted:
        return int8
    if asked:
        log.warning("int8 vectors stray from float32 (%s); used as %s=int8 asks", agreement.describe(), setting)
        return int8
    log.info("queries are encoded in float32: the int8 copy strays from it (%s)", agreement.describe())
    return None
