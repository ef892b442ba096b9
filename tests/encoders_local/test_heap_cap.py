"""The local torch encoder caps the heap before its first forward pass (ragindex.encoders.heap), for real."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc"),
]

# a child, since the cap is process-wide: the shipped model encodes a batch, then a 4 MiB block is allocated after a
# freed 16 MiB one (which, uncapped, would have raised glibc's threshold above it); it prints the bytes mmapped for it
_CHILD = textwrap.dedent(
    """
    import ctypes
    from ragindex.encoders.dense.sentence_transformers import SentenceTransformerDenseEncoder

    class Mallinfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = Mallinfo2
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    encoder = SentenceTransformerDenseEncoder("sentence-transformers/all-MiniLM-L6-v2", precision="float32")
    vectors = encoder.encode_documents(["the lighthouse keeper logged the fog"] * 64)
    libc.free(libc.malloc(16 << 20))
    before = libc.mallinfo2().hblkhd
    block = libc.malloc(4 << 20)
    print(vectors.shape[0], libc.mallinfo2().hblkhd - before)
    """
)


def test_the_torch_encoder_serves_large_blocks_from_mmap_after_building_its_model() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True, env=env, timeout=300
    ).stdout.split()
    assert int(out[-2]) == 64
    assert int(out[-1]) >= 4 << 20
