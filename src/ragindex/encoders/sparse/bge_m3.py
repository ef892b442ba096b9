"""Local BGE-M3 lexical weights (the ``bge_m3`` sparse provider), computed in-process with transformers.

A BGE-M3 checkpoint directory (``BAAI/bge-m3``) holds the XLM-RoBERTa encoder, its tokenizer and
``sparse_linear.pt``, the head ``torch.nn.Linear(hidden_size, 1)``. The lexical weights are those of
FlagEmbedding's ``BGEM3FlagModel`` (``M3Embedder.encode(..., return_sparse=True)``):

1. ``token_weights = relu(sparse_linear(last_hidden_state))``, one weight per token;
2. per text, over its tokens that are not special (cls, eos/sep, pad, unk) and weigh more than 0,
   the MAX weight per token id (``{token_id: weight}``, BGE-M3's ``lexical_weights``);
3. the cleaning shared by every provider, :func:`~ragindex.encoders.sparse.cleaning.clean_lexical_weights`
   (``top_k`` largest, ``>= min_weight``, indices ascending).

Queries and documents go through the same computation (BGE-M3's sparse side is symmetric).
Nothing heavy is imported until the first encode; the checkpoint loads offline (local files only)
unless offline loading is switched off.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragindex.encoders._hf import load_once, quiet_hub
from ragindex.encoders.heap import release_heap
from ragindex.encoders.sparse.cleaning import clean_lexical_weights
from ragindex.errors import ConfigurationError, EncodingError
from ragindex.types import SparseVector

log = logging.getLogger(__name__)

__all__ = ["SPARSE_LINEAR_FILE", "BgeM3SparseEncoder"]

SPARSE_LINEAR_FILE = "sparse_linear.pt"
_SPECIAL_TOKENS = ("cls_token", "eos_token", "sep_token", "pad_token", "unk_token")


class _Loaded:
    """A loaded checkpoint: tokenizer, transformer, sparse head and the token ids that never count."""

    def __init__(self, tokenizer: Any, model: Any, sparse_linear: Any, unused: frozenset[int]) -> None:
        self.tokenizer = tokenizer
        self.model = model
        self.sparse_linear = sparse_linear
        self.unused = unused


def _hub_offline(offline: bool) -> bool:
    """Offline when asked to, or when the environment says so (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``)."""
    flags = (os.environ.get("HF_HUB_OFFLINE", ""), os.environ.get("TRANSFORMERS_OFFLINE", ""))
    return offline or any(f.strip().lower() in {"1", "true", "yes", "on"} for f in flags)


def _looks_like_path(model: str) -> bool:
    """A filesystem path rather than a hub name (``owner/name``)."""
    return model.startswith((".", "~", "/")) or model.count("/") > 1 or "\\" in model


class BgeM3SparseEncoder:
    """BGE-M3 lexical weights from a local checkpoint directory (or a hub name already in the HF cache).

    Args:
        model: Checkpoint directory (model files, tokenizer and ``sparse_linear.pt``), or a Hugging Face
            name such as ``BAAI/bge-m3`` resolved in the local Hugging Face cache.
        device: torch device (``cpu``, ``cuda``, ``cuda:1``, ...).
        batch_size: Texts per forward pass.
        max_length: Tokens read per text (longer texts are truncated).
        top_k: Keep at most this many weights per text (the largest).
        min_weight: Drop weights below this value.
        offline: Never contact the Hugging Face hub (``HF_HUB_OFFLINE=1`` forces it too).
        threads: torch intra-op threads, or None for torch's default.
    """

    def __init__(
        self,
        model: str,
        *,
        device: str = "cpu",
        batch_size: int = 16,
        max_length: int = 512,
        top_k: int = 256,
        min_weight: float = 0.0,
        offline: bool = True,
        threads: int | None = None,
    ) -> None:
        if batch_size < 1 or max_length < 2 or top_k < 1:
            raise ConfigurationError(
                f"BGE-M3 needs batch_size >= 1, max_length >= 2 and top_k >= 1; got {batch_size}, {max_length}, {top_k}"
            )
        self.model_name = str(model)
        self.device = device
        self.batch_size = batch_size
        self.max_length = max_length
        self.top_k = top_k
        self.min_weight = float(min_weight)
        self.offline = offline
        self.threads = threads
        self._loaded: _Loaded | None = None

    @property
    def name(self) -> str:
        """``bge-m3:<model>|top_k=<k>|min_weight=<w>`` (recorded in the index metadata; no model load)."""
        return f"bge-m3:{self.model_name}|top_k={self.top_k}|min_weight={self.min_weight:g}"

    # ------------------------------------------------------------------ loading
    def resolve_checkpoint(self) -> Path:
        """The checkpoint directory: the given directory, or the hub name's snapshot in the local cache."""
        candidate = Path(self.model_name).expanduser()
        if candidate.is_dir():
            return candidate.resolve()
        if _looks_like_path(self.model_name):
            raise ConfigurationError(
                f"BGE-M3 checkpoint directory {str(candidate)!r} does not exist; set RAGINDEX_SPARSE_MODEL to a "
                f"directory holding the model, its tokenizer and {SPARSE_LINEAR_FILE}",
                path=str(candidate),
            )
        offline = _hub_offline(self.offline)
        try:
            from huggingface_hub import snapshot_download

            folder = snapshot_download(
                self.model_name, local_files_only=offline, ignore_patterns=["onnx/*", "*.onnx", "imgs/*"]
            )
        except Exception as exc:
            where = "in the local Hugging Face cache (downloads are off)" if offline else "on the Hugging Face hub"
            raise ConfigurationError(
                f"cannot find the BGE-M3 model {self.model_name!r} {where}: {exc}. Set RAGINDEX_SPARSE_MODEL to a "
                f"local checkpoint directory (model, tokenizer and {SPARSE_LINEAR_FILE}).",
                path=self.model_name,
            ) from exc
        return Path(folder)

    def _load(self) -> _Loaded:
        if self._loaded is not None:
            return self._loaded
        folder = self.resolve_checkpoint()
        self._loaded = load_once(("bge-m3", str(folder), self.device), lambda: self._build(folder))
        return self._loaded

    def _build(self, folder: Path) -> _Loaded:
        head = folder / SPARSE_LINEAR_FILE
        if not head.is_file():
            raise ConfigurationError(
                f"{str(folder)!r} is not a BGE-M3 checkpoint: {SPARSE_LINEAR_FILE} is missing (the sparse head "
                "saved next to the model by FlagEmbedding / BAAI/bge-m3)",
                path=str(folder),
            )
        quiet_hub(offline=False)  # offline mode is decided per call below (local_files_only)
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise ConfigurationError("the local BGE-M3 provider needs torch and transformers") from exc
        if self.threads:
            torch.set_num_threads(self.threads)
        from transformers.utils import logging as transformers_logging

        hf_logging: Any = transformers_logging  # its progress-bar switches are untyped
        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # no tqdm bar in the middle of the CLI's own progress display
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
            model = AutoModel.from_pretrained(str(folder), local_files_only=True)
            state = torch.load(head, map_location="cpu", weights_only=True)
            weight = state["weight"]
            sparse_linear = torch.nn.Linear(int(weight.shape[1]), 1, bias="bias" in state)
            sparse_linear.load_state_dict(state)
        except Exception as exc:
            raise ConfigurationError(
                f"cannot load the BGE-M3 checkpoint at {str(folder)!r}: {exc}", path=str(folder)
            ) from exc
        finally:
            if bars:
                hf_logging.enable_progress_bar()
        hidden = int(getattr(model.config, "hidden_size", sparse_linear.in_features))
        if hidden != sparse_linear.in_features:
            raise ConfigurationError(
                f"{SPARSE_LINEAR_FILE} in {str(folder)!r} expects width {sparse_linear.in_features} but the model's "
                f"hidden size is {hidden}",
                path=str(folder),
            )
        model.to(self.device).float().eval()
        sparse_linear.to(self.device).float().eval()
        unused: set[int] = set()
        for attr in _SPECIAL_TOKENS:
            token_id = getattr(tokenizer, f"{attr}_id", None)
            if isinstance(token_id, int):
                unused.add(token_id)
        log.info("loaded BGE-M3 checkpoint %s (%s)", folder, self.device)
        return _Loaded(tokenizer, model, sparse_linear, frozenset(unused))

    # ------------------------------------------------------------------ encoding
    def lexical_weights(self, texts: Sequence[str]) -> list[dict[int, float]]:
        """BGE-M3's raw ``lexical_weights`` (token id -> max weight over the text's tokens), before cleaning."""
        if not texts:
            return []
        loaded = self._load()
        import numpy as np
        import torch

        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # similar lengths together: less padding
        out: list[dict[int, float]] = [{} for _ in texts]
        unused = torch.tensor(sorted(loaded.unused), dtype=torch.long, device=self.device)
        try:
            with torch.inference_mode():
                for start in range(0, len(order), self.batch_size):
                    positions = order[start : start + self.batch_size]
                    inputs = loaded.tokenizer(
                        [texts[i] for i in positions],
                        padding=True,
                        truncation=True,
                        max_length=self.max_length,
                        return_tensors="pt",
                    ).to(self.device)
                    hidden = loaded.model(**inputs).last_hidden_state
                    weights = torch.relu(loaded.sparse_linear(hidden)).squeeze(-1)
                    ids = inputs["input_ids"]
                    keep = inputs["attention_mask"].bool() & ~torch.isin(ids, unused) & (weights > 0)
                    ids_np = ids.cpu().numpy()
                    weights_np = weights.float().cpu().numpy()
                    keep_np = keep.cpu().numpy()
                    for row, position in enumerate(positions):
                        tokens = ids_np[row][keep_np[row]]
                        values = weights_np[row][keep_np[row]]
                        unique, inverse = np.unique(tokens, return_inverse=True)
                        best = np.zeros(len(unique), dtype=values.dtype)
                        np.maximum.at(best, inverse, values)
                        out[position] = dict(zip(unique.tolist(), best.tolist(), strict=True))
        except Exception as exc:
            raise EncodingError(f"BGE-M3 sparse encoding with {self.model_name!r} failed: {exc}") from exc
        return out

    def _encode(self, texts: Sequence[str]) -> list[SparseVector]:
        raw = self.lexical_weights(texts)
        return [clean_lexical_weights(w, top_k=self.top_k, min_weight=self.min_weight) for w in raw]

    def encode_documents(self, texts: Sequence[str]) -> list[SparseVector]:
        """Cleaned lexical weights of document chunks; the heap their forward pass freed, released."""
        try:
            return self._encode(texts)
        finally:
            release_heap()

    def encode_queries(self, texts: Sequence[str]) -> list[SparseVector]:
        """Cleaned lexical weights of queries (the same computation as documents)."""
        return self._encode(texts)
