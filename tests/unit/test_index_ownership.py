"""The embedded index's owner lock waits for another process, never for an Engine of its own process."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ragindex.errors import IndexLockedError
from ragindex.index.ownership import IndexOwnership


def test_a_lock_held_by_this_process_is_refused_without_waiting(tmp_path: Path) -> None:
    first = IndexOwnership(tmp_path / "index")
    first.acquire()
    try:
        second = IndexOwnership(tmp_path / "index", wait_s=60)
        started = time.monotonic()
        with pytest.raises(IndexLockedError, match="same process"):
            second.acquire()
        assert time.monotonic() - started < 30  # it would wait the whole minute for another process
        assert not second.held
    finally:
        first.release()
    again = IndexOwnership(tmp_path / "index", wait_s=60)
    again.acquire()  # released: taken at once
    assert again.held
    again.release()
