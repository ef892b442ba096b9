"""Cross-encoder rerank of fused candidates (seed 002: BGE-Reranker, top 50 pairs, sigmoid scores in [0, 1]).

A cross-encoder reads the query and one candidate text together (``[CLS] query [SEP] text [SEP]``) and
returns one relevance logit per pair; :class:`CrossEncoderReranker` turns it into a probability with the
logistic sigmoid, so rerank scores are always in [0, 1] whatever the model. The model loads on the first
rerank (never at start-up), from a local directory or the Hugging Face cache only (downloads are off), and
one loaded model per (source, device, max length) is shared by every engine of the process.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ragindex.encoders._hf import load_once, quiet_hub
from ragindex.errors import RerankerUnavailableError, RetrievalConfigurationError, RetrievalEncodingError

__all__ = ["MODEL_SETTING", "CrossEncoderReranker", "Reranker", "sigmoid"]

log = logging.getLogger(__name__)

MODEL_SETTING = "RAGINDEX_RERANK_MODEL"
"""The environment name of the setting that chooses the rerank model (named in load errors)."""


class Reranker(Protocol):
    """Scores (query, text) pairs: higher is more relevant, every score in [0, 1].

    Failures raise :class:`ragindex.errors.RetrievalEncodingError`; a model that cannot be loaded raises
    :class:`ragindex.errors.RetrievalConfigurationError`.
    """

    @property
    def name(self) -> str:
        """Identity of the rerank model (no model load)."""
        ...

    def load(self) -> None:
        """Load the model now (no-op once loaded), so callers can time the load apart from scoring."""
        ...

    def ensure_available(self) -> None:
        """Cheaply check that the model can be loaded (no load); :class:`RerankerUnavailableError` if not."""
        ...

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """One score in [0, 1] per text, in the order of ``texts``."""
        ...


def sigmoid(logits: np.ndarray) -> np.ndarray:
    """The logistic function, computed as ``(1 + tanh(x / 2)) / 2`` so that no logit overflows."""
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * np.asarray(logits, dtype=np.float64))))


def _unavailable(model: str, why: str) -> RerankerUnavailableError:
    return RerankerUnavailableError(
        f"rerank was requested but no reranker model is available: {MODEL_SETTING}={model!r} {why}. Set "
        f"{MODEL_SETTING} to a local cross-encoder directory (or a model name in the Hugging Face cache), "
        "or search without rerank.",
        field="rerank",
        setting=MODEL_SETTING,
        model=model,
    )


def _in_hub_cache(name: str) -> bool:
    """Whether the Hugging Face cache holds model ``name`` (its config.json); no network access."""
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(repo_id=name, filename="config.json")
    except Exception:  # not a valid repo id (a path that does not exist, say): not in the cache
        return False
    return isinstance(found, str)


def _resolve_source(name_or_path: str) -> str:
    path = Path(name_or_path).expanduser()
    return str(path.resolve()) if path.is_dir() else name_or_path


@dataclass(eq=False)
class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` with one output label, loaded on first use.

    Args:
        model_name: Hugging Face name (present in the local cache) or local directory of the cross-encoder.
        device: torch device.
        batch_size: Pairs per forward pass.
        max_length: Tokens per (query, text) pair; longer pairs are truncated.
        offline: Load from local files only (no hub access).
    """

    model_name: str
    _: KW_ONLY
    device: str = "cpu"
    batch_size: int = 32
    max_length: int = 512
    offline: bool = True
    source: str = field(init=False)
    """Where the model loads from: ``model_name`` or the local directory it names."""
    _model: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise RetrievalConfigurationError(f"rerank batch size must be >= 1, got {self.batch_size}")
        if self.max_length < 2:
            raise RetrievalConfigurationError(f"rerank max length must be >= 2 tokens, got {self.max_length}")
        self.source = _resolve_source(self.model_name)

    @property
    def name(self) -> str:
        """``ce:<model name or path>``."""
        return f"ce:{self.model_name}"

    def load(self) -> None:
        """Load the cross-encoder (once per process for the same source, device and max length)."""
        self._load()

    def ensure_available(self) -> None:
        """The model is a local directory, already loaded, or in the Hugging Face cache (offline), else raise.

        Raises:
            RerankerUnavailableError: It is none of these (a 422 over HTTP, exit code 3 in the CLI).
        """
        if self._model is not None or Path(self.source).is_dir() or not self.offline:
            return
        if not _in_hub_cache(self.source):
            raise _unavailable(
                self.model_name, "is neither a local directory nor in the Hugging Face cache (downloads are off)"
            )

    def _load(self) -> Any:
        if self._model is None:
            self._model = load_once(("cross-encoder", self.source, self.device, self.max_length), self._build)
        return self._model

    def _build(self) -> Any:
        quiet_hub(offline=self.offline)
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise RetrievalConfigurationError(
                "the cross-encoder reranker needs sentence-transformers and torch: pip install 'torch==2.13.0' "
                "ragindex",
                setting=MODEL_SETTING,
            ) from exc
        try:
            model = CrossEncoder(
                self.source, device=self.device, local_files_only=self.offline, max_length=self.max_length
            )
        except Exception as exc:
            raise _unavailable(
                self.model_name,
                f"cannot be loaded from {self.source!r} ({exc}; downloads are off: RAGINDEX_HF_OFFLINE)",
            ) from exc
        if model.num_labels != 1:
            raise _unavailable(
                self.model_name,
                f"has {model.num_labels} output labels; a reranker has one relevance logit "
                "(e.g. BAAI/bge-reranker-v2-m3)",
            )
        model.eval()
        log.info("loaded rerank model %s (%s, max length %d)", self.model_name, self.device, self.max_length)
        return model

    def logits(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """The model's raw relevance logits, one per text (no activation), as float64.

        Raises:
            RetrievalEncodingError: The model failed or returned a wrong number of finite scores.
        """
        if not texts:
            return np.zeros(0, dtype=np.float64)
        model = self._load()
        import torch

        pairs = [(query, text) for text in texts]
        try:
            with torch.inference_mode():
                # Identity: CrossEncoder's default activation for one label is already a sigmoid, and we apply
                # ours exactly once below, whatever activation a saved model configures.
                raw = model.predict(
                    pairs,
                    batch_size=self.batch_size,
                    activation_fn=torch.nn.Identity(),
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
        except Exception as exc:
            raise RetrievalEncodingError(
                f"rerank with {self.model_name!r} failed: {exc}", source="rerank", model=self.model_name
            ) from exc
        out = np.asarray(raw, dtype=np.float64).reshape(-1)
        if out.shape[0] != len(texts) or not np.isfinite(out).all():
            raise RetrievalEncodingError(
                f"rerank with {self.model_name!r} returned {out.shape[0]} scores for {len(texts)} texts "
                "or a non-finite score",
                source="rerank",
                model=self.model_name,
            )
        return out

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """Sigmoid of the cross-encoder logit of each (query, text) pair: one score in [0, 1] per text, in order."""
        return [float(score) for score in sigmoid(self.logits(query, texts))]
