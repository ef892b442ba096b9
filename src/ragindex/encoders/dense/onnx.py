"""The light dense encoder: the ONNX export of a local model, run by ONNX Runtime (no torch import).

The same pipeline as sentence-transformers for a mean-pooling model: the model's fast tokenizer
(``tokenizer.json`` through ``tokenizers``, truncated to ``max_seq_length``, padded to the longest text of
the batch), the transformer and the masked mean (both in the exported graph), then L2 normalisation.
Its vectors match the torch encoder's in float32 to a cosine of 0.99999 or better (tested).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragindex.encoders.dense.onnx_export import OnnxLayout
from ragindex.encoders.precision import PrecisionCacheKey
from ragindex.encoders.prompts import NO_PROMPTS, Prompts
from ragindex.errors import ConfigurationError, EncodingError
from ragindex.language import Script

log = logging.getLogger(__name__)


@dataclass(eq=False)
class OnnxDenseEncoder(PrecisionCacheKey):
    """A sentence-transformers model exported to ONNX, encoding in float32 on the CPU.

    Args:
        layout: The model directory's tokenizer and pooling facts (:func:`~.onnx_export.read_layout`).
        model_file: The exported graph (:func:`~.onnx_export.export_onnx`).
        fingerprint: The torch encoder's fingerprint (prompts included): the vector space is the same.
        languages: Scripts the model covers (the torch encoder's).
        prompts: The torch encoder's query and document prompts, put in front of the texts here.
        batch_size: Texts per ONNX Runtime call.
        threads: Intra-op threads, or None for ONNX Runtime's default (one per physical core).
    """

    precision = "float32"
    """These are float32 vectors, equal to torch's float32 ones (the cache key's precision)."""

    layout: OnnxLayout
    model_file: Path
    _: KW_ONLY
    fingerprint: str
    languages: frozenset[Script]
    prompts: Prompts = NO_PROMPTS
    batch_size: int = 64
    threads: int | None = None
    _session: Any = field(default=None, init=False, repr=False)
    _tokenizer: Any = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def dimension(self) -> int:
        """Embedding dimension (from the model's pooling config; no load)."""
        return self.layout.dimension

    def load(self) -> None:
        """Open the ONNX Runtime session and the tokenizer (idempotent).

        Raises:
            ConfigurationError: onnxruntime or tokenizers is missing, or the file cannot be loaded.
        """
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise ConfigurationError(f"the light dense encoder needs onnxruntime and tokenizers: {exc}") from exc
            try:
                tokenizer = Tokenizer.from_file(str(self.layout.model_dir / "tokenizer.json"))
                tokenizer.enable_truncation(self.layout.max_length)
                tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]") or 0)
                options = onnxruntime.SessionOptions()
                options.log_severity_level = 3
                # no busy-waiting workers: on 2 shared cores (load ~4) a query took a steady ~10 ms without
                # spinning and 8-45 ms with it; spinning threads also steal the CPU an ingest is using
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                if self.threads:
                    options.intra_op_num_threads = self.threads
                session = onnxruntime.InferenceSession(
                    str(self.model_file), options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:
                raise ConfigurationError(
                    f"cannot load the ONNX encoder {self.model_file}: {exc}", path=str(self.model_file)
                ) from exc
            self._tokenizer, self._session = tokenizer, session

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        self.load()
        if self.layout.lower_case:
            texts = [t.lower() for t in texts]
        # sort by length so that each call pads least, then put the vectors back in order
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        try:
            for start in range(0, len(order), self.batch_size):
                part = order[start : start + self.batch_size]
                encodings = self._tokenizer.encode_batch([texts[i] for i in part])
                feed = {
                    "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                    "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                    "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
                }
                out[part] = self._session.run(None, feed)[0]
        except Exception as exc:
            raise EncodingError(f"ONNX dense encoding with {self.model_file} failed: {exc}") from exc
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Chunk vectors (the document prompt in front of each text)."""
        return self._encode(self.prompts.documents(texts))

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors (the query prompt in front of each text)."""
        return self._encode(self.prompts.queries(texts))


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
) -> OnnxDenseEncoder | None:
    """The light encoder of a local model, exported first if its cache has no copy; None if unsupported.

    ``fingerprint`` (prompts included) is the encoder's; the export is the model's alone, kept under
    ``model_fingerprint`` (default ``fingerprint``), so changing the prompts does not export the model again.

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
    encoder = OnnxDenseEncoder(
        layout,
        target,
        fingerprint=fingerprint,
        languages=frozenset(languages),
        prompts=prompts,
        batch_size=batch_size,
        threads=threads,
    )
    encoder.load()
    return encoder
