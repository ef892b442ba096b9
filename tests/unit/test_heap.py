"""The heap release after a torch encode of documents (ragindex.encoders.heap), on this machine's real glibc."""

from __future__ import annotations

import sys

import pytest

from heapkit import run_probe

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")

RELEASE = "from ragindex.encoders.heap import release_heap; result = release_heap()"


def test_freed_blocks_in_the_heap_stay_resident_without_a_release() -> None:
    _, released = run_probe("pass")
    assert released < 16 << 20  # the premise: 128 MiB freed below the top stay in the process


def test_a_release_gives_the_freed_heap_back() -> None:
    released_any, released = run_probe(RELEASE)
    assert released_any == "True"
    assert released >= 100 << 20
