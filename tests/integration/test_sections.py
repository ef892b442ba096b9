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
