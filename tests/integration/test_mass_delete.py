"""The mass-deletion guard (issue 11, item 8): a sync removing too much of a folder refuses and writes nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ragindex.engine import Engine
from ragindex.errors import MassDeleteError

pytestmark = pytest.mark.integration

TOPICS = [
    "honeybees and their queen",
    "sourdough starters and wild yeast",
    "TCP slow start and congestion windows",
    "photosynthesis in chloroplasts",
    "spring and neap tides",
    "volcanic eruptions and magma",
    "espresso extraction and grind size",
    "the printing press of Gutenberg",
    "Rust ownership and borrowing",
    "the rings of Saturn",
    "glaciers carving valleys",
    "migratory birds and magnetism",
]


def corpus(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i, topic in enumerate(TOPICS[:n]):
        (folder / f"doc{i:02d}.txt").write_text(f"A short note about {topic}.", encoding="utf-8")
    return folder


def active(engine: Engine) -> list[str]:
    return sorted(d.filename for d in engine.store.list_documents())


def test_removing_most_of_a_folder_is_refused_before_anything_is_written(
    make_engine: Callable[..., Engine], tmp_path: Path
) -> None:
    folder = corpus(tmp_path / "src", 12)
    with make_engine() as engine:
        assert engine.ingest([folder]).documents["added"] == 12
        runs_before = len(engine.store.runs())
        for path in sorted(folder.iterdir())[:7]:
            path.unlink()
        (folder / "doc11.txt").write_text("A changed note about glaciers and fjords.", encoding="utf-8")

        with pytest.raises(MassDeleteError) as caught:
            engine.ingest([folder])
        message = caught.value.message
        assert "refusing to remove 7 of the 12 documents" in message
        assert "RAGINDEX_MAX_REMOVE_FRACTION=0.5" in message and "--allow-mass-delete" in message
        assert caught.value.exit_code == 2
        assert len(active(engine)) == 12, "nothing removed"
        assert len(engine.store.runs()) == runs_before, "nothing staged: the changed file waits too"
        assert engine.search("glaciers carving valleys", user_id=1, set_id=1, top_k=1).hits[0].filename == "doc10.txt"

        kept = engine.ingest([folder], keep_missing=True)
        assert kept.documents["removed"] == 0 and kept.documents["changed"] == 1
        assert len(active(engine)) == 12

        allowed = engine.ingest([folder], allow_mass_delete=True)
        assert allowed.documents["removed"] == 7
        assert active(engine) == [f"doc{i:02d}.txt" for i in range(7, 12)]
        assert engine.verify().ok


def test_small_folders_and_fraction_one_are_not_guarded(make_engine: Callable[..., Engine], tmp_path: Path) -> None:
    small = corpus(tmp_path / "small", 3)
    with make_engine() as engine:
        engine.ingest([small])
        for path in small.iterdir():
            path.unlink()
        assert engine.ingest([small]).documents["removed"] == 3, "3 documents are under remove_guard_min_documents"
    big = corpus(tmp_path / "big", 12)
    with make_engine(max_remove_fraction=1.0) as engine:
        engine.ingest([big])
        for path in big.iterdir():
            path.unlink()
        assert engine.ingest([big]).documents["removed"] == 12


def test_vanished_paths_are_removed_under_the_guard_of_their_watched_folder(
    make_engine: Callable[..., Engine], tmp_path: Path
) -> None:
    """`ragindex watch` passes deletions as ``vanished``: the same guard, counted per watched folder."""
    folder = corpus(tmp_path / "src", 12)
    with make_engine() as engine:
        engine.ingest([folder])
        one = folder / "doc00.txt"
        one.unlink()
        report = engine.ingest([], vanished=[one], vanished_within=[folder])
        assert report.documents["removed"] == 1 and "doc00.txt" not in active(engine)

        gone = sorted(folder.iterdir())[:7]
        for path in gone:
            path.unlink()
        with pytest.raises(MassDeleteError) as caught:
            engine.ingest([], vanished=gone, vanished_within=[folder])
        assert "refusing to remove 7 of the 11 documents" in caught.value.message
        assert len(active(engine)) == 11, "nothing removed"
        assert engine.ingest([], vanished=gone, vanished_within=[folder], keep_missing=True).documents["removed"] == 0
        report = engine.ingest([], vanished=gone, vanished_within=[folder], allow_mass_delete=True)
        assert report.documents["removed"] == 7 and len(active(engine)) == 4


def test_a_vanished_path_that_exists_again_removes_nothing(make_engine: Callable[..., Engine], tmp_path: Path) -> None:
    folder = corpus(tmp_path / "src", 3)
    with make_engine() as engine:
        engine.ingest([folder])
        back = folder / "doc01.txt"  # deleted, then saved again before the watcher's batch ran
        report = engine.ingest([back], vanished=[back, folder / "doc09.txt"], vanished_within=[folder])
        assert report.documents["removed"] == 0 and report.documents["unchanged"] == 1
        assert len(active(engine)) == 3
