"""Give the heap that a torch forward pass of documents freed back to the system (glibc only).

glibc serves a block from ``mmap`` only above its mmap threshold, and it raises that threshold (up to 32 MiB) each
time such a block is freed. After the first batches, a torch forward pass gets its activation tensors (a few MiB
each, of a new size at every batch, as texts differ in length) from the heap, where the freed ones leave holes that
the next shapes do not fit, and the process keeps them: peak RSS of a cold ingest of 1,000 SciFact records climbed
to 1,293-1,338 MiB (MiniLM, float32).

The first fix fixed the threshold at 1 MiB, so that every such tensor came from ``mmap`` and went back when freed:
964-971 MiB, but a fresh mapping for every tensor of every layer, each page faulted in anew. On a host where page
faults are dear that was 1.3-1.5x the encode's time (2026-12-07, AVX2 host: 4,596 chunks in 125 s against 92 s,
58 s of it in the kernel). :func:`release_heap` instead runs ``malloc_trim(0)`` after each call that encoded
documents: the layers of a batch reuse each other's blocks, and what the batch left free goes back to the system
before the next one. The same chunks: 100 s, 763 MiB peak (1,092 MiB without it; docs/explanation/performance.md).
Queries are not trimmed: a search's encode is small, and its time is the search's.
"""

from __future__ import annotations

import ctypes
import logging
import sys
from collections.abc import Callable

log = logging.getLogger(__name__)

_trim: Callable[[int], int] | None = None
_looked_up = False


def _malloc_trim() -> Callable[[int], int] | None:
    global _trim, _looked_up
    if not _looked_up:
        _looked_up = True
        if sys.platform.startswith("linux"):
            try:
                trim = ctypes.CDLL(None).malloc_trim  # the process's own C library (musl has none)
            except (OSError, AttributeError):
                log.debug("no malloc_trim in this C library: the heap is left as it grows")
            else:
                trim.argtypes = [ctypes.c_size_t]
                trim.restype = ctypes.c_int
                _trim = trim
    return _trim


def release_heap() -> bool:
    """Return the heap's free pages to the system (``malloc_trim(0)``); True if the C library has it.

    Cheap next to a forward pass (a walk of the heap's free chunks): called after each batch of documents a local
    torch model encoded.
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
