"""The heap cap of long torch encodes (ragindex.encoders.heap), on this machine's real glibc malloc."""

from __future__ import annotations

import sys

import pytest

from heapkit import run_probe

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")

CAP = "from ragindex.encoders.heap import cap_heap_growth; result = cap_heap_growth()"


def test_without_the_cap_a_freed_large_block_sends_the_next_ones_to_the_heap() -> None:
    assert run_probe("pass") == ("None", 0)  # the premise: glibc's threshold moved above 4 MiB


def test_the_cap_serves_large_blocks_from_mmap_for_good() -> None:
    capped, mapped = run_probe(CAP)
    assert capped == "True"
    assert mapped >= 4 << 20


def test_a_threshold_the_user_set_is_kept() -> None:
    capped, _ = run_probe(CAP, MALLOC_MMAP_THRESHOLD_="33554432")
    assert capped == "False"
