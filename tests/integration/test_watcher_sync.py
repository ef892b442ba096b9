"""`ragindex watch`'s batches without file events: what one batch of due paths does and reports.

The event side (watchfiles, debouncing, signals) is tested end to end in ``tests/e2e/test_watch.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ragindex.engine import Engine
from ragindex.watcher import Change, Watcher

pytestmark = pytest.mark.integration


def notes(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    topics = ["beekeeping", "sourdough", "tides", "glaciers", "comets", "violins"]
    for i in range(n):
        (folder / f"n{i}.md").write_text(f"# Note {i}\n\nA short note about {topics[i]}.\n", encoding="utf-8")
    return folder


def summary(changes: list[Change]) -> set[tuple[str, str, str | None]]:
    return {(c.action, Path(c.path).name, Path(c.source).name if c.source else None) for c in changes}


def test_one_batch_moves_removes_adds_and_reports_each(make_engine: Callable[..., Engine], tmp_path: Path) -> None:
    folder = notes(tmp_path / "docs", 3)
    with make_engine() as engine:
        changes: list[Change] = []
        watcher = Watcher(engine, [folder], on_change=changes.append)
        assert watcher._first_sync().documents["added"] == 3
        (folder / "n0.md").rename(folder / "moved.md")
        (folder / "n1.md").unlink()
        (folder / "new.md").write_text("# New\n\nA note about otters.\n", encoding="utf-8")
        (folder / "n2.md").touch()
        now = time.monotonic()
        watcher._sync({folder / name: now for name in ("n0.md", "moved.md", "n1.md", "new.md", "n2.md")})
        assert summary(changes) == {
            ("moved", "moved.md", "n0.md"),
            ("removed", "n1.md", None),
            ("added", "new.md", None),
            ("unchanged", "n2.md", None),
        }
        moved = next(c for c in changes if c.action == "moved")
        assert moved.embedded == 1 and moved.chunks == 1, "only the new file's chunk was embedded"
        names = sorted(d.filename for d in engine.store.list_documents())
        assert names == ["moved.md", "n2.md", "new.md"]


def test_keep_missing_reports_no_removal(make_engine: Callable[..., Engine], tmp_path: Path) -> None:
    folder = notes(tmp_path / "docs", 2)
    with make_engine() as engine:
        changes: list[Change] = []
        watcher = Watcher(engine, [folder], keep_missing=True, on_change=changes.append)
        watcher._first_sync()
        (folder / "n0.md").unlink()
        watcher._sync({folder / "n0.md": time.monotonic()})
        assert changes == []
        assert len(engine.store.list_documents()) == 2


def test_a_refused_deletion_keeps_the_documents_and_syncs_the_other_files(
    make_engine: Callable[..., Engine], tmp_path: Path
) -> None:
    folder = notes(tmp_path / "docs", 5)
    with make_engine(remove_guard_min_documents=4) as engine:
        changes: list[Change] = []
        watcher = Watcher(engine, [folder], on_change=changes.append)
        watcher._first_sync()
        gone = [folder / f"n{i}.md" for i in range(4)]
        for path in gone:
            path.unlink()
        (folder / "n4.md").write_text("# Note 4\n\nNow about falcons.\n", encoding="utf-8")
        now = time.monotonic()
        watcher._sync(dict.fromkeys([*gone, folder / "n4.md"], now))
        assert [c.action for c in changes] == ["refused", "changed"], changes
        assert "refusing to remove 4 of the 5 documents" in (changes[0].error or "")
        assert len(engine.store.list_documents()) == 5, "the guard kept them"
