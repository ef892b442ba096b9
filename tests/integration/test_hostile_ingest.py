"""Issue 23: hostile input never stalls an ingest, and one bad record, chunker run or folder fails alone.

Real files through the real engine (SQLite, Qdrant Edge, the shipped model). The crafted lines are the issue's own
shapes, made long enough that quadratic chunking would run past the default parse timeout (120 s) and fail the
file: they ingest under the default settings. The runaway chunker (``loaderkit.StallingChunker``) is a stand-in
for a third-party chunker, with a short timeout on purpose: that test is of the kill-and-fail-alone mechanism.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from test_file_failures import isolated_sync

from loaderkit import ClosureChunker, StallingChunker
from ragindex.engine import Engine
from ragindex.errors import MassDeleteError

pytestmark = pytest.mark.integration


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def bm25_files(engine: Engine, query: str) -> list[str]:
    return [h.filename for h in engine.search(query, mode="bm25", top_k=3, user_id=1, set_id=1).hits]


def test_the_issues_crafted_lines_ingest_under_the_default_settings(
    make_engine: Callable[..., Engine], tmp_path: Path
) -> None:
    folder = write(
        tmp_path / "src",
        {
            "spaces.txt": "# a" + " " * 400_000 + "b\n\nThe lighthouse keeper trims the wick at dusk.\n",
            "dots.txt": "." * 100_000 + "x\n\nA brass sextant measures the angle of the sun.\n",
            "heading.md": "## a" + " " * 200_000 + "b\n\nCopper kettles whistle on the stove.\n",
        },
    )
    with make_engine() as engine:
        assert engine.settings.parse_timeout_seconds == 120, "the default timeout"
        report = engine.ingest([folder])
        assert report.failures == [] and report.documents["added"] == 3
        assert bm25_files(engine, "brass sextant")[:1] == ["dots.txt"]
        assert bm25_files(engine, "copper kettles whistle")[:1] == ["heading.md"]
        assert engine.verify().ok


def test_a_runaway_chunker_fails_its_file_alone_naming_the_setting(
    make_engine: Callable[..., Engine], tmp_path: Path
) -> None:
    folder = write(
        tmp_path / "src",
        {
            "good.txt": "Honeybee colonies have one queen and thousands of workers.",
            "stall.txt": "This text makes the chunker STALL forever.",
            "after.txt": "Sourdough starters ferment flour and water with wild yeast.",
        },
    )
    with make_engine() as engine:
        report = isolated_sync(engine, 3, StallingChunker).run([folder], user_id=1, set_id=1)
        assert report.documents["added"] == 2 and report.documents["failed"] == 1
        [failure] = report.failures
        assert failure["path"].endswith("stall.txt")
        assert "stall.txt: chunking took longer than 3 s and was stopped" in failure["error"]
        assert "RAGINDEX_PARSE_TIMEOUT_SECONDS" in failure["error"]
        statuses = {d.filename: d.status for d in engine.store.list_documents()}
        assert statuses == {"good.txt": "SUCCESS", "after.txt": "SUCCESS", "stall.txt": "FAILED"}
        assert engine.verify().ok, "the failed file left nothing half done"


def test_a_chunker_that_does_not_pickle_still_chunks_in_the_ingest_process(
    make_engine: Callable[..., Engine], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = write(tmp_path / "src", {"bees.txt": "Honeybees dance to show where the flowers are."})
    with make_engine() as engine, caplog.at_level(logging.WARNING):
        report = isolated_sync(engine, 30, ClosureChunker).run([folder], user_id=1, set_id=1)
        assert report.failures == [] and report.documents["added"] == 1
    assert any("cannot run in the parse process" in r.getMessage() for r in caplog.records)


def test_a_bad_line_of_a_records_file_fails_alone(make_engine: Callable[..., Engine], tmp_path: Path) -> None:
    lines = [
        json.dumps({"_id": "a", "text": "Glaciers carve U-shaped valleys."}),
        '{"_id": "b", "text": "unterminated',
        json.dumps({"_id": "c", "text": "Tides follow the pull of the moon."}),
    ]
    folder = write(tmp_path / "src", {"notes.jsonl": "\n".join(lines) + "\n"})
    with make_engine() as engine:
        report = engine.ingest([folder])
        assert report.documents["added"] == 2 and report.documents["failed"] == 1
        [failure] = report.failures
        assert failure["path"].endswith("notes.jsonl") and failure["source"].endswith("notes.jsonl#line 2")
        assert "notes.jsonl: line 2: invalid JSON" in failure["error"] and "at at" not in failure["error"]
        assert bm25_files(engine, "pull of the moon")[:1] == ["notes.jsonl#c"]

        lines[1] = json.dumps({"_id": "b", "text": "Magma rises through volcanic vents."})
        (folder / "notes.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        again = engine.ingest([folder])
        assert again.failures == [] and again.documents["added"] == 1 and again.documents["unchanged"] == 2
        docs = engine.store.list_documents()
        assert sorted(d.source_uri.rsplit("#", 1)[1] for d in docs) == ["a", "b", "c"]
        assert {d.status for d in docs} == {"SUCCESS"} and engine.verify().ok


def test_a_record_whose_metadata_alone_changed_is_re_recorded_without_re_embedding(
    make_engine: Callable[..., Engine], tmp_path: Path
) -> None:
    def records(tag: str) -> str:
        return json.dumps({"_id": "r1", "text": "Espresso extraction depends on grind size.", "tag": tag}) + "\n"

    folder = write(tmp_path / "src", {"coffee.jsonl": records("draft")})
    with make_engine() as engine:
        first = engine.ingest([folder])
        assert first.documents["added"] == 1
        (folder / "coffee.jsonl").write_text(records("final"), encoding="utf-8")
        second = engine.ingest([folder])
        assert second.documents["changed"] == 1 and second.chunks["embedded"] == 0, "the vectors were kept"
        [doc] = engine.store.list_documents()
        assert doc.metadata["tag"] == "final"
        [hit] = engine.search("espresso grind", mode="bm25", top_k=1, user_id=1, set_id=1).hits
        assert hit.metadata["tag"] == "final"
        assert engine.ingest([folder]).documents["unchanged"] == 1
        assert engine.verify().ok


def test_emptying_a_subfolder_is_refused_like_emptying_the_folder(
    make_engine: Callable[..., Engine], tmp_path: Path
) -> None:
    notes = {f"notes/n{i:02d}.txt": f"Note {i} about the migration of arctic terns." for i in range(14)}
    manuals = {f"manuals/m{i:02d}.txt": f"Manual page {i} about the lathe's tailstock." for i in range(12)}
    folder = write(tmp_path / "src", {**notes, **manuals})
    with make_engine() as engine:
        assert engine.ingest([folder]).documents["added"] == 26
        for path in (folder / "manuals").iterdir():
            path.unlink()
        with pytest.raises(MassDeleteError, match=r"refusing to remove 12 of the 12 documents under .*manuals"):
            engine.ingest([folder])
        assert len(engine.store.list_documents()) == 26, "nothing removed"
        assert engine.ingest([folder], allow_mass_delete=True).documents["removed"] == 12
