"""`ragindex watch` logic without file events: debouncing, which paths count, and the per-change line."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragindex.cli.watch import describe
from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import InputError
from ragindex.watcher import Change, ChangeBatcher, Stat, Watcher


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_path_is_due_once_quiet_and_its_stat_is_stable() -> None:
    clock = FakeClock()
    stats: dict[Path, Stat] = {Path("/a.md"): (10, 1, False)}
    batcher = ChangeBatcher(0.3, clock=clock, stat=lambda p: stats.get(p))
    batcher.add(Path("/a.md"))
    clock.now += 0.2
    assert batcher.due() == {}, "due before its quiet period"
    clock.now += 0.2
    assert batcher.due() == {Path("/a.md"): 100.0}
    assert len(batcher) == 0


def test_each_event_restarts_the_quiet_period_and_keeps_the_first_event_time() -> None:
    clock = FakeClock()
    stats: dict[Path, Stat] = {Path("/a.md"): (10, 1, False)}
    batcher = ChangeBatcher(0.3, clock=clock, stat=lambda p: stats.get(p))
    batcher.add(Path("/a.md"))
    for _ in range(5):  # a writer writing every 0.2 s: never due while it writes
        clock.now += 0.2
        stats[Path("/a.md")] = (stats[Path("/a.md")][0] + 10, 1, False)  # type: ignore[index]
        batcher.add(Path("/a.md"))
        assert batcher.due() == {}
    clock.now += 0.31
    assert batcher.due() == {Path("/a.md"): 100.0}


def test_a_file_still_growing_without_events_waits_for_another_quiet_period() -> None:
    clock = FakeClock()
    stats: dict[Path, Stat] = {Path("/a.md"): (10, 1, False)}
    batcher = ChangeBatcher(0.3, clock=clock, stat=lambda p: stats.get(p))
    batcher.add(Path("/a.md"))
    clock.now += 0.35
    stats[Path("/a.md")] = (20, 2, False)  # grew, but no event reached us yet
    assert batcher.due() == {}
    clock.now += 0.35
    assert batcher.due() == {Path("/a.md"): 100.0}


def test_a_deleted_path_is_due_after_its_quiet_period() -> None:
    clock = FakeClock()
    batcher = ChangeBatcher(0.3, clock=clock, stat=lambda _p: None)
    batcher.add(Path("/gone.md"))
    clock.now += 0.31
    assert batcher.due() == {Path("/gone.md"): 100.0}


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return Engine(Settings(_env_file=None, data_dir=tmp_path / "data"))  # type: ignore[call-arg]


def test_only_watched_supported_visible_files_count(engine: Engine, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / ".git").mkdir(parents=True)
    (docs / "sub").mkdir()
    for name in ("a.md", "b.xyz", ".hidden.md", "sub/c.txt", ".git/d.md"):
        (docs / name).write_text("text")
    single = tmp_path / "single.txt"
    single.write_text("one")
    (tmp_path / "other.txt").write_text("not watched")
    try:
        watcher = Watcher(engine, [docs, single])
        assert watcher.wanted(docs / "a.md") and watcher.wanted(docs / "sub" / "c.txt") and watcher.wanted(single)
        assert not watcher.wanted(docs / "b.xyz"), "an unsupported suffix"
        assert not watcher.wanted(docs / ".hidden.md") and not watcher.wanted(docs / ".git" / "d.md")
        assert not watcher.wanted(tmp_path / "other.txt"), "a sibling of a watched file"
        assert watcher.wanted(docs / "sub", added=True) and not watcher.wanted(docs / "sub", added=False)
        assert watcher.wanted(docs / "gone"), "a gone path may have been a folder of documents"
        assert not watcher.wanted(engine.settings.data_dir / "x.md"), "the data dir is never a document"
    finally:
        engine.close()


def test_the_data_dir_inside_a_watched_folder_is_ignored(tmp_path: Path) -> None:
    engine = Engine(Settings(_env_file=None, data_dir=tmp_path / "docs" / "index-data"))  # type: ignore[call-arg]
    try:
        watcher = Watcher(engine, [tmp_path / "docs"])
        assert not watcher.wanted(tmp_path / "docs" / "index-data" / "ragindex.db")
        assert not watcher.wanted(tmp_path / "docs" / "index-data", added=True)
    finally:
        engine.close()


@pytest.mark.parametrize("paths", [[], [""], ["/no/such/folder"]])
def test_missing_or_empty_paths_are_input_errors(engine: Engine, paths: list[str]) -> None:
    try:
        with pytest.raises(InputError):
            Watcher(engine, paths)
    finally:
        engine.close()


def test_the_change_line() -> None:
    at = 1_700_000_000.0
    line = describe(Change("changed", "/x/notes.md", chunks=3, embedded=2, latency_s=0.414, at=at))
    assert line.endswith(" changed notes.md: 3 chunks (2 embedded) searchable in 0.41 s"), line
    moved = describe(Change("moved", "/x/new.md", chunks=1, embedded=0, latency_s=0.5, source="/x/old.md", at=at))
    assert moved.endswith(" moved old.md -> new.md: 1 chunks (0 embedded) searchable in 0.50 s"), moved
    removed = describe(Change("removed", "/x/old.md", latency_s=0.25, at=at))
    assert removed.endswith(" removed old.md: gone from search in 0.25 s"), removed
    assert Change("removed", "/x/old.md", latency_s=0.25, at=at).to_dict()["latency_ms"] == 250.0
