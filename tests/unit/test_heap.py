"""The heap cap of long torch encodes (ragindex.encoders.heap), on this machine's real glibc malloc."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")

# in a child: the cap is process-wide and for good. It prints how many bytes of a fresh 4 MiB block came from mmap,
# after a freed 16 MiB block has raised glibc's dynamic threshold the way a torch forward pass does.
_CHILD = textwrap.dedent(
    """
    import ctypes, sys
    from ragindex.encoders.heap import cap_heap_growth

    class Mallinfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = Mallinfo2
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    capped = cap_heap_growth() if sys.argv[1] == "cap" else False
    libc.free(libc.malloc(16 << 20))
    before = libc.mallinfo2().hblkhd
    block = libc.malloc(4 << 20)
    print(capped, libc.mallinfo2().hblkhd - before)
    """
)


def _run(mode: str, **env: str) -> tuple[str, int]:
    child_env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"} | env
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, mode], capture_output=True, text=True, check=True, env=child_env
    ).stdout.split()
    return out[0], int(out[1])


def test_without_the_cap_a_freed_large_block_sends_the_next_ones_to_the_heap() -> None:
    assert _run("plain") == ("False", 0)  # the premise: glibc's threshold moved above 4 MiB


def test_the_cap_serves_large_blocks_from_mmap_for_good() -> None:
    capped, mapped = _run("cap")
    assert capped == "True"
    assert mapped >= 4 << 20


def test_a_threshold_the_user_set_is_kept() -> None:
    capped, _ = _run("cap", MALLOC_MMAP_THRESHOLD_="33554432")
    assert capped == "False"
