"""Sections (the lexical unit) and chunks (the dense unit) through ingest, change, delete, repair, verify and reindex.

Real engines: SQLite, Qdrant Edge and the shipped MiniLM model. A section row is a ``chunks`` row with
``unit="section"``: BM25 on it, no dense copy; its chunks point at it with ``section_id``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ragindex.engine import Engine
from ragindex.store.records import ChunkRow
from ragindex.types import Unit

GUIDE = """# Beekeeping guide

## The colony

A honeybee colony has one queen, thousands of female workers and a few hundred drones in summer.
The queen lays up to two thousand eggs a day during the spring build-up, and the workers feed the larvae.

Workers live about six weeks in summer: cleaners first, then nurses, wax builders, guards and foragers.
Drones do not sting; they leave the hive to mate and are driven out before winter.

## Harvest

Honey is harvested in late summer, once the frames are capped with wax by the workers.
A strong hive can give twenty kilograms of surplus honey in a good year, more on heather.

The frames are uncapped with a hot knife, spun in an extractor and the honey is strained into buckets.
Leave enough stores for the winter: a colony needs about fifteen kilograms to survive until spring.
"""

NOTES = " ".join(  # ~9,000 characters with no heading: over twice the default section limit (4,000)
    f"Note {i}: the tide tables for harbour {i} list high water at {i % 12} o'clock and low water six hours later."
    for i in range(90)
)


@pytest.fixture
def corpus_files() -> dict[str, str]:
    return {"guide.md": GUIDE, "notes.txt": NOTES}


def rows(engine: Engine, name: str, unit: str) -> list[ChunkRow]:
    doc = next(d for d in engine.store.list_documents() if d.filename == name)
    return engine.store.chunks_of_document(doc.doc_id, unit=unit)


def points(engine: Engine, row: ChunkRow) -> frozenset[str] | None:
    collection = engine.read_collection()
    assert collection is not None
    return engine.index.vectors_present(collection, row.bucket_id).get(row.chunk_id)


def test_sections_carry_bm25_and_chunks_carry_dense(engine: Engine) -> None:
    sections, chunks = rows(engine, "guide.md", Unit.SECTION), rows(engine, "guide.md", Unit.CHUNK)
    assert len(sections) >= 2 and sections[-1].section == "Harvest"  # the recursive chunker's heading
    assert {c.section_id for c in chunks} == {s.chunk_id for s in sections}
    for section in sections:
        assert (section.dense_status, section.bm25_status) == (None, "SUCCESS")
        assert points(engine, section) == frozenset({"bm25"})
    for chunk in chunks:
        assert (chunk.dense_status, chunk.bm25_status) == ("SUCCESS", None)
        assert points(engine, chunk) == frozenset({"dense"})
    # a plain text without headings still gets sections, cut by size at chunk boundaries
    notes = rows(engine, "notes.txt", Unit.SECTION)
    assert len(notes) >= 2 and all(len(s.content) <= engine.settings.section_max_chars for s in notes)
    assert engine.verify().ok


def test_context_line_is_indexed_but_never_returned(engine: Engine) -> None:
    harvest = next(c for c in rows(engine, "guide.md", Unit.CHUNK) if "capped with wax" in c.content)
    # the document title; not the heading, which the chunk's own text opens with ("## Harvest")
    assert harvest.content.startswith("## Harvest") and harvest.context == "Beekeeping guide"
    assert harvest.indexed_text.startswith("Beekeeping guide\n## Harvest")
    hits = engine.search("beekeeping harvest honey", user_id=1, set_id=1, mode="dense").hits
    assert hits[0].chunk_id == harvest.chunk_id and hits[0].text == harvest.content


def test_lexical_hits_are_the_best_matching_chunk_of_a_section(engine: Engine) -> None:
    result = engine.search("queen eggs spring", user_id=1, set_id=1, mode="bm25")
    top = result.hits[0]
    assert "queen lays" in top.text and top.section == "The colony"  # the heading above its text, not the title
    hybrid = engine.search("how much surplus honey does a hive give", user_id=1, set_id=1, mode="hybrid").hits[0]
    assert "twenty kilograms" in hybrid.text
    assert set(hybrid.scores) == {"dense", "bm25"}  # its own dense evidence and its section's lexical evidence


def test_a_changed_section_alone_gets_new_rows(engine: Engine, corpus: Path) -> None:
    before = {s.section: s for s in rows(engine, "guide.md", Unit.SECTION)}
    (corpus / "guide.md").write_text(GUIDE.replace("twenty kilograms", "thirty kilograms"), encoding="utf-8")
    report = engine.ingest([corpus])
    assert report.documents["changed"] == 1 and report.chunks["embedded"] == 1
    after = {s.section: s for s in rows(engine, "guide.md", Unit.SECTION)}
    colony, harvest = "The colony", "Harvest"
    assert after[colony].chunk_id == before[colony].chunk_id  # unchanged: same id, same vectors
    assert after[harvest].chunk_id != before[harvest].chunk_id and "thirty" in after[harvest].content
    assert points(engine, before[harvest]) is None  # the old section's point is purged
    hit = engine.search("thirty kilograms", user_id=1, set_id=1, mode="bm25").hits[0]
    assert "thirty kilograms" in hit.text
    assert engine.verify().ok


def test_a_deleted_file_takes_its_sections_out_of_the_index(engine: Engine, corpus: Path) -> None:
    sections = rows(engine, "guide.md", Unit.SECTION)
    (corpus / "guide.md").unlink()
    engine.ingest([corpus])
    assert all(points(engine, s) is None for s in sections)
    hits = engine.search("queen eggs harbour tide", user_id=1, set_id=1, mode="bm25").hits
    assert {h.filename for h in hits} == {"notes.txt"}
    assert engine.verify().ok


def test_repair_rewrites_a_lost_section_point_and_a_stale_section_claim(engine: Engine) -> None:
    section = rows(engine, "guide.md", Unit.SECTION)[0]
    collection = engine.read_collection()
    assert collection is not None
    engine.index.delete_points(collection, section.bucket_id, [section.chunk_id])
    report = engine.verify()
    assert not report.ok and report.buckets[0].missing["bm25"] == [section.chunk_id]
    assert engine.repair().indexed["bm25"] == 1
    assert points(engine, section) == frozenset({"bm25"}) and engine.verify().ok

    engine.store.reset_status([section.chunk_id], ["bm25"], from_statuses=("SUCCESS",))
    assert engine.store.claim("bm25", [section.chunk_id]).complete  # a worker took it ... and died
    time.sleep(0.05)
    report = engine.repair(stale_seconds=0.01)
    assert report.stale["bm25"] == 1 and report.indexed["bm25"] == 1
    assert engine.verify().ok


def test_reindex_copies_sections_into_the_new_collection(engine: Engine) -> None:
    before = [h.chunk_id for h in engine.search("queen eggs", user_id=1, set_id=1, mode="bm25").hits]
    report = engine.reindex_into("v2")
    assert report.switched and report.embedded == 0
    assert engine.read_collection() == "v2"
    assert [h.chunk_id for h in engine.search("queen eggs", user_id=1, set_id=1, mode="bm25").hits] == before
    assert engine.verify().ok


def test_changed_chunking_settings_rechunk_without_full(
    make_engine: Callable[..., Engine], corpus: Path, corpus_files: dict[str, str]
) -> None:
    with make_engine() as engine:
        assert engine.ingest([corpus]).documents["added"] == len(corpus_files)
        sizes = {len(c.content) for c in rows(engine, "notes.txt", Unit.CHUNK)}
    with make_engine(chunk_size=256, chunk_overlap=32) as engine:
        report = engine.ingest([corpus])
        assert report.documents["rechunked"] == len(corpus_files) and report.documents["unchanged"] == 0
        resized = rows(engine, "notes.txt", Unit.CHUNK)
        assert max(len(c.content) for c in resized) <= 256 < max(sizes)
        assert engine.ingest([corpus]).documents["unchanged"] == len(corpus_files)  # settled
        assert engine.verify().ok
    with make_engine(chunk_size=256, chunk_overlap=32, contextual_chunks=False) as engine:
        report = engine.ingest([corpus])
        assert report.documents["rechunked"] == len(corpus_files)
        assert all(c.context is None for c in rows(engine, "guide.md", Unit.CHUNK))
    with make_engine() as engine:  # back to the first settings: every vector comes from the embedding cache
        report = engine.ingest([corpus])
        assert report.documents["rechunked"] == len(corpus_files) and report.chunks["embedded"] == 0
        assert engine.verify().ok


def test_without_sections_every_kind_is_on_the_chunks(make_engine: Callable[..., Engine], corpus: Path) -> None:
    with make_engine(section_max_chars=0) as engine:
        engine.ingest([corpus])
        assert rows(engine, "guide.md", Unit.SECTION) == []
        chunks = rows(engine, "guide.md", Unit.CHUNK)
        assert {(c.dense_status, c.bm25_status, c.section_id) for c in chunks} == {("SUCCESS", "SUCCESS", None)}
        assert "queen lays" in engine.search("queen eggs", user_id=1, set_id=1, mode="bm25").hits[0].text
        assert engine.verify().ok


def test_turning_sections_off_and_on_moves_the_lexical_copies(
    make_engine: Callable[..., Engine], corpus: Path, corpus_files: dict[str, str]
) -> None:
    with make_engine() as engine:
        engine.ingest([corpus])
        before = {c.chunk_id for c in rows(engine, "guide.md", Unit.CHUNK)}
    with make_engine(section_max_chars=0) as engine:
        report = engine.ingest([corpus])
        assert report.documents["rechunked"] == len(corpus_files) and report.chunks["embedded"] == 0
        chunks = rows(engine, "guide.md", Unit.CHUNK)
        assert {c.chunk_id for c in chunks} == before  # same texts: same rows, same dense vectors
        assert {(c.dense_status, c.bm25_status) for c in chunks} == {("SUCCESS", "SUCCESS")}
        assert rows(engine, "guide.md", Unit.SECTION) == [] and not engine.store.removed_unpurged()
        assert "queen lays" in engine.search("queen eggs", user_id=1, set_id=1, mode="bm25").hits[0].text
        assert engine.verify().ok
    with make_engine() as engine:
        engine.ingest([corpus])
        chunks = rows(engine, "guide.md", Unit.CHUNK)
        assert {(c.dense_status, c.bm25_status) for c in chunks} == {("SUCCESS", None)}
        assert all(s.bm25_status == "SUCCESS" for s in rows(engine, "guide.md", Unit.SECTION))
        assert "queen lays" in engine.search("queen eggs", user_id=1, set_id=1, mode="bm25").hits[0].text
        assert engine.verify().ok


# ---------------------------------------------------------------------------------------------- edits keep sections
LIGHTHOUSE = "Lighthouse keepers trim the lamp wicks at dusk and polish the great lens at dawn."


def chunk_with(engine: Engine, name: str, needle: str) -> ChunkRow:
    (row,) = [c for c in rows(engine, name, Unit.CHUNK) if needle in c.content]
    return row


def bm25_texts(engine: Engine, query: str) -> list[str]:
    return [h.text for h in engine.search(query, user_id=1, set_id=1, mode="bm25").hits]


def section_of(engine: Engine, chunk: ChunkRow) -> ChunkRow:
    assert chunk.section_id is not None
    return engine.store.get_chunks([chunk.section_id])[0]


def test_an_edited_chunk_rewrites_the_lexical_copy_of_its_section(engine: Engine) -> None:
    chunk = chunk_with(engine, "notes.txt", "Note 17:")  # one of the eight chunks of the first section
    assert bm25_texts(engine, "lighthouse lamp wicks lens") == []
    result = engine.update_chunk(chunk.chunk_id, LIGHTHOUSE)
    assert bm25_texts(engine, "lighthouse lamp wicks lens")[0] == LIGHTHOUSE  # found at once
    section = section_of(engine, chunk)
    assert LIGHTHOUSE in section.content and "Note 17:" not in section.content and "Note 14:" in section.content
    assert points(engine, section) == frozenset({"bm25"})  # rewritten under the same point id
    assert result.reembedded and result.ok and result.section_id == chunk.section_id
    assert result.section_statuses["bm25"] == "SUCCESS" and result.statuses["bm25"] is None
    assert engine.verify().ok
    again = engine.update_chunk(chunk.chunk_id, LIGHTHOUSE)  # the same text again: nothing to rewrite
    assert not again.content_changed and again.embedded == 0 and again.ok


def test_an_edit_gives_the_chunk_and_its_section_the_context_line_ingest_gives(engine: Engine) -> None:
    harvest = chunk_with(engine, "guide.md", "capped with wax")
    assert harvest.context == "Beekeeping guide"  # its text opened with "## Harvest"
    engine.update_chunk(harvest.chunk_id, "Propolis is a resin the workers collect from buds to seal cracks.")
    edited = engine.store.get_chunks([harvest.chunk_id])[0]
    section = section_of(engine, edited)
    # the text no longer opens with its heading: the heading joins the title, as with_sections would write it
    assert edited.context == section.context == "Beekeeping guide > Harvest"
    assert bm25_texts(engine, "propolis resin buds")[0].startswith("Propolis")
    assert bm25_texts(engine, "extractor heather surplus") == []
    assert engine.verify().ok


def test_a_deleted_chunk_leaves_its_section_and_a_section_without_chunks_is_removed(engine: Engine) -> None:
    chunk = chunk_with(engine, "notes.txt", "Note 17:")
    engine.delete_chunks([chunk.chunk_id])
    section = section_of(engine, chunk)
    assert section.lifecycle_status == "ACTIVE" and "Note 17:" not in section.content and "Note 20:" in section.content
    assert engine.verify().ok

    harvest = chunk_with(engine, "guide.md", "capped with wax")  # its section's only chunk
    result = engine.delete_chunks([harvest.chunk_id])
    assert result.removed == 1 and result.purge_failed == 0
    gone = section_of(engine, harvest)
    assert gone.lifecycle_status == "REMOVED" and points(engine, gone) is None
    assert bm25_texts(engine, "extractor heather surplus") == []
    assert engine.verify().ok and not engine.store.removed_unpurged()


def drift_by_the_old_edit(engine: Engine, chunk: ChunkRow) -> None:
    """What update-chunk did before sections followed edits: the chunk's text and dense copy only."""
    assert engine.store.update_chunk_content(chunk.chunk_id, LIGHTHOUSE, engine.kinds)
    assert engine.reindex_chunks([chunk.chunk_id]).failed == {"dense": 0, "bm25": 0}


def test_verify_reports_a_drifted_section_and_repair_derives_it_again(engine: Engine) -> None:
    chunk = chunk_with(engine, "notes.txt", "Note 17:")
    drift_by_the_old_edit(engine, chunk)
    assert bm25_texts(engine, "lighthouse lamp wicks lens") == []  # the bug: the section never heard of it
    report = engine.verify()
    assert not report.ok and report.buckets[0].drifted == [chunk.section_id]
    payload = report.to_dict()["buckets"][0]
    assert payload["drifted_sections"] == [chunk.section_id] and payload["drifted_count"] == 1

    dry = engine.repair(dry_run=True)
    assert dry.drifted_sections == 1 and dry.found >= 1 and not engine.verify().ok
    fixed = engine.repair()
    assert fixed.ok and fixed.drifted_sections == 1 and fixed.indexed["bm25"] == 1
    assert LIGHTHOUSE in section_of(engine, chunk).content
    assert bm25_texts(engine, "lighthouse lamp wicks lens")[0] == LIGHTHOUSE
    assert engine.verify().ok and engine.repair().drifted_sections == 0

    # a section's stored text corrupted behind the store's back: the same report, the same fix
    harvest = section_of(engine, chunk_with(engine, "guide.md", "capped with wax"))
    with engine.store.engine.begin() as conn:  # type: ignore[attr-defined]
        conn.exec_driver_sql("UPDATE chunks SET content = 'garbage' WHERE chunk_id = ?", (harvest.chunk_id,))
    assert engine.verify().buckets[0].drifted == [harvest.chunk_id]
    assert engine.repair().ok and engine.verify().ok
    assert "twenty kilograms" in section_of(engine, chunk_with(engine, "guide.md", "capped with wax")).content


def test_cli_verify_exits_1_on_a_drifted_section_and_repair_fixes_it(
    make_engine: Callable[..., Engine], corpus: Path, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from ragindex.cli import commands as _commands  # noqa: F401 - registers verify
    from ragindex.cli import manage as _manage  # noqa: F401 - registers repair
    from ragindex.cli.app import app

    with make_engine() as engine:
        engine.ingest([corpus])
        drift_by_the_old_edit(engine, chunk_with(engine, "notes.txt", "Note 17:"))
    data = str(tmp_path / "d")
    verify = CliRunner().invoke(app, ["--data-dir", data, "verify", "--json"])
    assert verify.exit_code == 1 and '"drifted_count": 1' in verify.stdout
    table = CliRunner().invoke(app, ["--data-dir", data, "verify"])
    assert table.exit_code == 1 and "drifted" in table.stdout
    repair = CliRunner().invoke(app, ["--data-dir", data, "repair", "--json"])
    assert repair.exit_code == 0 and '"drifted_sections": 1' in repair.stdout
    assert CliRunner().invoke(app, ["--data-dir", data, "verify", "--json"]).exit_code == 0
