"""What every local Hugging Face model of ragindex shares: quiet offline loading and one load per process."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

# One loaded model per key and process: engines, the service and tests share it.
_LOADED: dict[Hashable, Any] = {}
_LOCK = threading.Lock()


def quiet_hub(*, offline: bool) -> None:
    """No progress bars or info logs from the hub libraries; no hub access when ``offline``."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    # oneDNN caches a primitive (with reordered bf16 weights) per input shape; length-sorted batches have many
    # shapes, and the default cache of 1024 grew a SciFact ingest to 2.9 GB. 16 costs no measurable speed.
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "16")
    if offline:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def load_once(key: Hashable, build: Callable[[], T]) -> T:
    """``build()`` the first time ``key`` is asked for in this process, the same object afterwards."""
    with _LOCK:
        if key not in _LOADED:
            _LOADED[key] = build()
        loaded: T = _LOADED[key]
    return loaded


def local_model_dir(source: str) -> Path | None:
    """The local directory of a model given by path or Hugging Face name (from the local cache only), or None."""
    path = Path(source).expanduser()
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id=source, local_files_only=True))
    except Exception:  # not cached, not a valid repo id, or huggingface_hub missing: all mean "not local"
        return None
