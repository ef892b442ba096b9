"""A child Python that reports what ``malloc_trim`` gives back (tests of ragindex.encoders.heap).

Each check runs in its own interpreter, on this machine's real glibc malloc: ``run_probe(setup)`` frees a 16 MiB
block (which raises glibc's dynamic mmap threshold above 4 MiB, as a torch forward pass does), so that 32 blocks of
4 MiB then come from the heap; it writes them (their pages become resident), allocates a block above them that stays
(the heap's top cannot shrink past it, as the model's own allocations do), frees the 32, runs ``setup`` and returns
the last printed line: ``setup``'s ``result`` and the bytes by which the resident set shrank while ``setup`` ran.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

_PROBE = textwrap.dedent(
    """
    import ctypes, os

    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    page = os.sysconf("SC_PAGE_SIZE")

    def resident():
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * page

    result = None
    libc.free(libc.malloc(16 << 20))
    blocks = [libc.malloc(4 << 20) for _ in range(32)]
    for block in blocks:
        ctypes.memset(block, 1, 4 << 20)
    pin = libc.malloc(2 << 20)
    for block in blocks:
        libc.free(block)
    before = resident()
    {setup}
    print(result, before - resident())
    """
)


def run_probe(setup: str) -> tuple[str, int]:
    """(``result`` as printed, bytes the resident set shrank by during ``setup``) in a fresh interpreter."""
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    code = _PROBE.replace("{setup}", setup)
    lines = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=child_env, timeout=300
    ).stdout.splitlines()
    result, released = lines[-1].split()
    return result, int(released)
