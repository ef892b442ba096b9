"""A child Python that reports where glibc's malloc put a large block (tests of ragindex.encoders.heap).

The heap cap is process-wide and for good, so each check runs in its own interpreter: ``run_probe(setup)`` runs
``setup``, frees a 16 MiB block (which, uncapped, raises glibc's dynamic mmap threshold above 4 MiB, as a torch
forward pass does), allocates eight 4 MiB blocks and returns the last printed line: ``setup``'s ``result`` and the
bytes that came from mmap for them (``mallinfo2().hblkhd``). Eight, not one: malloc serves a block from a free
chunk of the heap before it asks mmap, whatever the threshold, and a setup that freed a large heap block before
the cap (imports, a model's files) left one such chunk now and then (the whole suite saw 0 bytes once).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

_PROBE = textwrap.dedent(
    """
    import ctypes

    class Mallinfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = Mallinfo2
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    result = None
    {setup}
    libc.free(libc.malloc(16 << 20))
    before = libc.mallinfo2().hblkhd
    blocks = [libc.malloc(4 << 20) for _ in range(8)]
    print(result, libc.mallinfo2().hblkhd - before)
    """
)


def run_probe(setup: str, **env: str) -> tuple[str, int]:
    """(``result`` as printed, bytes mmapped for a 4 MiB block) after ``setup`` ran in a fresh interpreter."""
    child_env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"} | env
    code = _PROBE.replace("{setup}", setup)
    lines = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=child_env, timeout=300
    ).stdout.splitlines()
    result, mapped = lines[-1].split()
    return result, int(mapped)
