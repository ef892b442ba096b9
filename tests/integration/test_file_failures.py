"""One bad file fails alone (issue 11, item 3) and a re-run retries it (item 4): real files, the real engine.

Every kind of per-file failure the issue names, each from a real file on disk: deep JSON (RecursionError), binary
bytes in text formats, invalid JSON, the size and chunk limits, a file deleted or replaced by a directory after
discovery (OSError). Parser hangs, crashes and MemoryError come from the misbehaving loaders of ``loaderkit``
(stand-ins for third-party parsers) through :class:`SourceSync`, with a short timeout on purpose: that test is of
the kill-and-replace mechanism, the default timeout is 120 s.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loaderkit import MisbehavingLoader
from ragindex.chunking.protocol import Chunker
from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import InputError
from ragindex.loaders.registry import LoaderRegistry
from ragindex.pipeline import faults
from ragindex.pipeline.sync import IngestReport, SourceSync, SyncLimits

pytestmark = pytest.mark.integration

GOOD = {
    "bees.txt": "Honeybee colonies have one queen, thousands of female workers and a few male drones.",
    "bread.md": "# Sourdough\n\nA sourdough starter is flour and water fermented by wild yeast and lactobacilli.",
}
LONG = " ".join(f"Sentence {i} of a long document about tidal energy and the pull of the moon." for i in range(25))


def elf_header() -> bytes:
    return b"\x7fELF\x02\x01\x01" + bytes(57) + b"some text after the header"


BAD: dict[str, bytes] = {
    "deep.json": b"[" * 100_000 + b"]" * 100_000,
    "binary.md": b"\x1b[2J\x00\x00\x01\x02 looks like a document \x00\x1b]0;title\x07",
    "program.txt": elf_header(),
    "image.json": b"\x89PNG\r\n\x1a\n" + bytes(range(256)),
    "broken.json": b'{"_id": "1", "text": "unterminated',
    "huge.txt": b"x" * 400_000,
    "long.txt": LONG.encode(),
    "vanishes.txt": b"this file is deleted after discovery",
    "becomes_dir.txt": b"this file becomes a directory after discovery",
}
EXPECTED_ERRORS = {
    "deep.json": "RecursionError",
    "binary.md": "binary content (NUL bytes)",
    "program.txt": "binary content (the bytes of an ELF executable)",
    "image.json": "binary content (the bytes of a PNG image)",
    "broken.json": "invalid JSON",
    "huge.txt": "RAGINDEX_MAX_FILE_BYTES",
    "long.txt": "RAGINDEX_MAX_CHUNKS_PER_DOCUMENT",
    "vanishes.txt": "FileNotFoundError",
    "becomes_dir.txt": "IsADirectoryError",
}
LIMITS = {"max_file_bytes": 300_000, "max_chunks_per_document": 3}


def write(folder: Path, files: dict[str, str] | dict[str, bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / name).write_bytes(content.encode() if isinstance(content, str) else content)
    return folder


def sabotage(folder: Path) -> Callable[[str, dict[str, Any]], None]:
    """A progress hook that, once discovery is done, deletes one file and replaces another by a directory."""

    def progress(event: str, _data: dict[str, Any]) -> None:
        if event == "discovered":
            (folder / "vanishes.txt").unlink()
            (folder / "becomes_dir.txt").unlink()
            (folder / "becomes_dir.txt").mkdir()

    return progress


def by_name(report: IngestReport) -> dict[str, str]:
    return {Path(f["path"]).name: f["error"] for f in report.failures}


def assert_nothing_left_half_done(engine: Engine) -> None:
    """No document or run PROCESSING, no chunk waiting to be indexed, and the index agrees with the truth."""
    store = engine.store
    assert [d.filename for d in store.list_documents() if d.status == "PROCESSING"] == []
    assert store.runs(status="PROCESSING") == []
    for kind in engine.kinds:
        assert store.pending_chunks(kind, user_id=1, set_id=1, max_attempts=99) == []
    assert engine.verify().ok


def test_each_bad_file_fails_alone_then_a_rerun_retries_it(make_engine: Callable[..., Engine], tmp_path: Path) -> None:
    folder = write(write(tmp_path / "src", GOOD), BAD)
    with make_engine(**LIMITS) as engine:
        report = engine.ingest([folder], progress=sabotage(folder))

        assert report.documents["added"] == 2
        assert report.documents["failed"] == len(BAD) == len(report.failures)
        errors = by_name(report)
        assert sorted(errors) == sorted(BAD)
        for name, phrase in EXPECTED_ERRORS.items():
            assert phrase in errors[name], (name, errors[name])
        assert_nothing_left_half_done(engine)
        docs = {d.filename: d for d in engine.store.list_documents()}
        expected = {**dict.fromkeys(GOOD, "SUCCESS"), **dict.fromkeys(BAD, "FAILED")}
        assert {n: d.status for n, d in docs.items()} == expected
        assert all(EXPECTED_ERRORS[n] in (docs[n].error or "") for n in BAD)
        stages = {n: engine.store.runs(doc_id=docs[n].doc_id)[0].failed_stage for n in BAD}
        assert stages == {**dict.fromkeys(BAD, "LOADING"), "long.txt": "CHUNKING"}
        assert engine.search("queen and drones", user_id=1, set_id=1, top_k=1).hits[0].filename == "bees.txt"

        # the next run parses the failed files again and lists them as failed, never as unchanged
        again = engine.ingest([folder])
        assert again.documents["unchanged"] == 2
        assert again.documents["failed"] == len(BAD) - 2
        assert again.documents["removed"] == 2, "the vanished file and the one that became a directory"
        assert sorted(by_name(again)) == sorted(set(BAD) - {"vanishes.txt", "becomes_dir.txt"})
        assert by_name(again)["deep.json"] == errors["deep.json"]

    # fixed files and a raised limit: the retried documents succeed
    write(folder, {"deep.json": '[{"_id": "a", "text": "Tidal range is largest at spring tides."}]'})
    write(folder, {"binary.md": "# Fixed\n\nNow a real markdown document about lighthouses."})
    with make_engine(**{**LIMITS, "max_chunks_per_document": 100}) as engine:
        fixed = engine.ingest([folder])
        assert sorted(by_name(fixed)) == ["broken.json", "huge.txt", "image.json", "program.txt"]
        assert (fixed.documents["retried"], fixed.documents["added"], fixed.documents["removed"]) == (2, 1, 0)
        statuses = {d.source_uri.rsplit("/", 1)[-1]: d.status for d in engine.store.list_documents()}
        assert statuses["long.txt"] == statuses["binary.md"] == statuses["deep.json#a"] == "SUCCESS"
        assert "deep.json" not in statuses, "the FAILED stand-in of the file is replaced by its record"
        assert_nothing_left_half_done(engine)


def test_a_document_that_failed_to_index_is_failed_then_retried(
    make_engine: Callable[..., Engine], corpus: Path
) -> None:
    with make_engine() as engine:
        faults.arm("dense.after_claim")
        first = engine.ingest([corpus])
        faults.disarm_all()
        assert first.documents["failed"] == 3 and first.documents["added"] == 0
        assert {f["stage"] for f in first.failures} == {"DENSE"}
        assert all("injected fault at dense.after_claim" in f["error"] for f in first.failures)
        assert any("ragindex reindex --failed" in note for note in first.notes)

        second = engine.ingest([corpus])
        assert (second.documents["retried"], second.documents["unchanged"], second.documents["failed"]) == (3, 0, 0)
        assert second.chunks["embedded"] == 3
        assert {d.status for d in engine.store.list_documents()} == {"SUCCESS"}
        third = engine.ingest([corpus])
        assert third.documents["unchanged"] == 3 and third.failures == []


def isolated_sync(engine: Engine, timeout: float, chunker: Callable[[], Chunker] | None = None) -> SourceSync:
    """The engine's own sync with the misbehaving loaders added (the Engine has no hook for extra loaders), and
    another chunker when given."""
    return SourceSync(
        engine.store,
        engine.indexer,
        LoaderRegistry(extra=[MisbehavingLoader()]),
        chunker or (lambda: engine.chunker),
        kinds=engine.kinds,
        bucket_count=engine.settings.bucket_count,
        max_attempts=engine.settings.max_attempts,
        limits=SyncLimits(parse_timeout_seconds=timeout),
        chunking_fingerprint=engine.settings.chunking_fingerprint,
        section_max_chars=engine.settings.section_max_chars,
        per_file=True,
    )


def test_hang_crash_and_memory_error_fail_their_file_only(make_engine: Callable[..., Engine], tmp_path: Path) -> None:
    folder = write(
        tmp_path / "src",
        {**GOOD, "stuck.hang": "x", "segfault.crash": "x", "greedy.oom": "x", "talks.chatty": "a chatty parser's text"},
    )
    with make_engine() as engine:
        report = isolated_sync(engine, timeout=2).run([folder], user_id=1, set_id=1)
        errors = by_name(report)
        assert sorted(errors) == ["greedy.oom", "segfault.crash", "stuck.hang"]
        assert "parsing took longer than 2 s" in errors["stuck.hang"]
        assert "parser process died while parsing it (killed by SIGSEGV)" in errors["segfault.crash"]
        assert "MemoryError" in errors["greedy.oom"]
        assert report.documents["added"] == 3
        assert report.files is not None
        outcomes = {f["filename"]: f["status"] for f in report.files}
        assert outcomes == {
            "bees.txt": "succeeded",
            "bread.md": "succeeded",
            "talks.chatty": "succeeded",
            "stuck.hang": "failed",
            "segfault.crash": "failed",
            "greedy.oom": "failed",
        }
        assert_nothing_left_half_done(engine)


def test_a_file_name_that_is_not_utf8_fails_alone(make_engine: Callable[..., Engine], tmp_path: Path) -> None:
    folder = write(tmp_path / "src", GOOD)
    (folder / os.fsdecode(b"caf\xe9.txt")).write_text("a file named in Latin-1 by an old system", encoding="utf-8")
    with make_engine() as engine:
        report = engine.ingest([folder])
        assert report.documents["added"] == 2 and report.documents["failed"] == 1
        [failure] = report.failures
        assert failure["path"].endswith("caf\\xe9.txt") and failure["doc_id"] is None
        assert "the file name is not valid UTF-8; rename the file" in failure["error"]
        json.dumps(report.to_dict(), ensure_ascii=False).encode("utf-8")  # --json prints: no lone surrogate
        assert_nothing_left_half_done(engine)


def test_discovery_skips_the_data_dir_and_refuses_an_empty_path(tmp_path: Path) -> None:
    folder = write(tmp_path / "src", GOOD)
    data = folder / "index-data"  # a data dir inside the source, not hidden: its files must never be documents
    with Engine(Settings(data_dir=data)) as engine:
        engine.ingest([folder])
        (data / "notes.txt").write_text("a text file inside the data dir")
        report = engine.ingest([folder])
        assert report.documents["unchanged"] == 2 and report.failures == []
        assert sorted(d.filename for d in engine.store.list_documents()) == sorted(GOOD)
        with pytest.raises(InputError, match="a directory of ragindex itself"):
            engine.ingest([data])
        with pytest.raises(InputError, match="an empty path was given"):
            engine.ingest([""])
        elsewhere = write(tmp_path / "blobs", {"upload.txt": "an uploaded file"})
        assert engine.ingest([tmp_path], exclude=[elsewhere]).failures == []
        assert "upload.txt" not in {d.filename for d in engine.store.list_documents()}


def test_per_file_outcomes_and_sample_corpus(make_engine: Callable[..., Engine], tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[2] / "examples"
    copy = shutil.copytree(examples, tmp_path / "examples")
    with make_engine() as engine:
        report = engine.ingest([copy], per_file=True)
    assert report.failures == []
    assert report.files is not None
    assert {f["status"] for f in report.files} == {"succeeded"}
    assert len(report.files) == len([p for p in copy.iterdir() if p.is_file()])


def test_the_engine_parser_child_serves_every_ingest(make_engine: Callable[..., Engine], tmp_path: Path) -> None:
    """A resident engine (`ragindex watch`, the service's jobs) starts the parser process once, not per ingest."""
    folder = write(tmp_path / "src", GOOD)
    with make_engine() as engine:
        assert engine.ingest([folder]).documents["added"] == len(GOOD)
        parser = engine._parser
        assert parser is not None and parser.started == 1
        (folder / "bees.txt").write_text("Bees dance to show the hive where the flowers are.", encoding="utf-8")
        assert engine.ingest([folder]).documents["changed"] == 1
        assert engine._parser is parser and parser.started == 1, "the second ingest started another parser"
    assert parser._child is None, "closing the engine ends the parser's child"
