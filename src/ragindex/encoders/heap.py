"""Keep torch forward passes (encoders, reranker) from growing the heap with every batch shape (glibc only).

glibc serves a block from ``mmap`` only above its mmap threshold, and it raises that threshold (up to 32 MiB) each
time such a block is freed. After the first batches, a torch forward pass gets its activation tensors (a few MiB
each, of a new size at every batch, as texts differ in length) from the heap, where the freed ones leave holes that
the next shapes do not fit, and the process keeps them. A fixed threshold (which ``mallopt`` also makes static) sends
every block of 1 MiB or more to ``mmap`` and back to the system when freed. Measured on cold ingests of 1,000
SciFact records (MiniLM, float32, 2 threads): peak RSS 1,293-1,338 MiB as glibc sets it, 964-971 MiB with the cap,
for about twice the minor page faults and no wall-time cost beyond the noise (docs/explanation/performance.md).
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3  # glibc's <malloc.h>
MMAP_THRESHOLD_BYTES = 1 << 20
_ENV_OVERRIDE = "MALLOC_MMAP_THRESHOLD_"  # glibc's own tunable: a user who set it keeps their value

_capped = False


def cap_heap_growth() -> bool:
    """Serve allocations of 1 MiB and more from ``mmap`` for the rest of the process; True if it is (now) so.

    Idempotent and cheap. Does nothing (False) off Linux, where the C library refuses (musl's ``mallopt`` is a stub),
    or where the user set ``MALLOC_MMAP_THRESHOLD_``.
    """
    global _capped
    if _capped:
        return True
    if not sys.platform.startswith("linux") or _ENV_OVERRIDE in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own C library (no ldconfig lookup)
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    if mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) != 1:
        log.debug("mallopt(M_MMAP_THRESHOLD) refused; the heap grows as glibc sets it")
        return False
    _capped = True
    return True
