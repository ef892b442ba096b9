"""Context expansion (``expand``, ``context_chars``) and grouping (``group_by``) of search hits, on the real engine.

SQLite, Qdrant Edge and the shipped MiniLM model; 200-character chunks overlapping by 40 so that every document has
several chunks and consecutive chunks repeat text.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragindex.engine import Engine
from ragindex.errors import ValidationError
from ragindex.store.records import ChunkRow
from ragindex.types import Unit

pytestmark = pytest.mark.integration

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

## Winter

In winter the bees form a cluster around the queen and shiver their flight muscles to keep it warm.
The beekeeper checks the weight of the hive by lifting it from behind and feeds fondant if it is light.
"""

TIDES = " ".join(
    f"Note {i}: the tide tables for harbour {i} list high water at {i % 12} o'clock and low water six hours later."
    for i in range(30)
)

FILES = {
    "guide.md": GUIDE,
    "tides.txt": TIDES,
    "wax.txt": "Beeswax is secreted by young worker bees from glands under the abdomen and shaped into comb.",
    "mead.txt": "Mead is an alcoholic drink made by fermenting honey with water, sometimes with fruit or spices.",
}


@pytest.fixture
def engine_settings() -> dict[str, Any]:
    return {"chunk_size": 200, "chunk_overlap": 40}


@pytest.fixture
def corpus_files() -> dict[str, str]:
    return dict(FILES)


def search(engine: Engine, query: str, **options: Any) -> Any:
    return engine.search(query, user_id=1, set_id=1, **options)


def rows_of(engine: Engine, ids: list[str]) -> dict[str, ChunkRow]:
    return {row.chunk_id: row for row in engine.store.get_chunks(ids)}


def test_no_expansion_and_no_grouping_keep_the_plain_hits(engine: Engine) -> None:
    plain = search(engine, "harvest honey frames", top_k=6, expand="none", group_by="none")
    assert all(hit.context is None and hit.merged == () for hit in plain.hits)
    assert all("context" not in hit and "merged" not in hit for hit in plain.to_dict()["hits"])
    assert "expand" not in plain.latency_ms and "group" not in plain.latency_ms


def test_neighbours_join_adjacent_chunks_without_repeating_overlaps(engine: Engine) -> None:
    result = search(
        engine, "uncapped with a hot knife and spun in an extractor", expand="neighbours", context_chars=700
    )
    assert result.hits and "expand" in result.latency_ms
    rows = rows_of(engine, [hit.chunk_id for hit in result.hits])
    for hit in result.hits:
        assert hit.context is not None and hit.text in hit.context
        assert len(hit.context) <= max(700, len(hit.text))
        text = FILES[hit.filename]
        assert hit.context in text  # the document's own text: overlaps written once, line breaks kept
        chunks = engine.store.chunks_of_document(hit.doc_id)
        at = next(i for i, c in enumerate(chunks) if c.chunk_id == hit.chunk_id)
        near = [c for c in chunks[max(at - 1, 0) : at + 2] if c.chunk_id != hit.chunk_id]
        assert any(c.content in hit.context for c in near) or len(chunks) == 1
        assert rows[hit.chunk_id].doc_id == hit.doc_id
    knife = next(hit for hit in result.hits if "hot knife" in hit.text)
    assert knife.context is not None and knife.context.count("hot knife") == 1
    assert len(knife.context) > len(knife.text)


def test_section_context_stays_inside_the_hit_section(engine: Engine) -> None:
    result = search(engine, "how heavy is the honey surplus of a strong hive", top_k=10, expand="section")
    harvest = [hit for hit in result.hits if hit.section and hit.section.endswith("Harvest")]
    assert harvest
    for hit in harvest:
        assert hit.context is not None and hit.text in hit.context and hit.context in GUIDE
        assert "## Harvest" in hit.context and "fifteen kilograms" in hit.context  # the whole section fits
        assert "queen lays" not in hit.context and "cluster around the queen" not in hit.context
    long = [hit for hit in result.hits if hit.filename == "tides.txt"]
    small = search(engine, "tide tables for harbour 14", expand="section", context_chars=300, mode="bm25")
    for hit in [*long, *small.hits]:
        assert hit.context is not None and hit.text in hit.context and hit.context in TIDES
    assert all(len(h.context or "") <= max(300, len(h.text)) for h in small.hits)


def test_section_expansion_reuses_the_sections_fusion_read(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """BM25 scores sections and fusion reads their chunks: expanding hits of those sections reads nothing again."""
    asked: list[list[str]] = []
    real = engine.store.section_chunks

    def counted(section_ids: list[str]) -> Any:
        asked.append(list(section_ids))
        return real(section_ids)

    monkeypatch.setattr(engine.store, "section_chunks", counted)
    result = search(engine, "how heavy is the honey surplus of a strong hive", top_k=5, expand="section")
    assert result.hits and all(hit.context for hit in result.hits)
    # fusion read the sections BM25 found; expansion asks only for hits' sections that BM25 did not find
    assert 1 <= len(asked) <= 2
    assert len(asked) == 1 or not set(asked[1]) & set(asked[0])
    assert "fifteen kilograms" in next(hit.context or "" for hit in result.hits if "surplus" in hit.text)


def test_section_expansion_without_section_rows_uses_the_chunks_under_the_same_heading(
    make_engine: Callable[..., Engine], corpus: Path
) -> None:
    with make_engine(section_max_chars=0) as engine:
        engine.ingest([corpus])
        guide = next(d for d in engine.store.list_documents() if d.filename == "guide.md")
        assert engine.store.chunks_of_document(guide.doc_id, unit=Unit.SECTION) == []
        result = search(engine, "frames uncapped with a hot knife", expand="section", context_chars=2000)
        hit = next(hit for hit in result.hits if "hot knife" in hit.text)
        assert hit.context is not None and hit.context in GUIDE
        assert "capped with wax" in hit.context and "queen lays" not in hit.context and "cluster" not in hit.context
        grouped = search(engine, "frames uncapped with a hot knife and tide tables", group_by="section", top_k=20)
        headed = [(h.doc_id, h.section) for h in grouped.hits if h.section is not None]
        assert len(headed) == len(set(headed))  # one hit per heading of a document
        assert sum(h.filename == "tides.txt" for h in grouped.hits) > 1  # no heading: each chunk stands alone


def test_group_by_section_keeps_one_hit_per_section_in_the_original_order(engine: Engine) -> None:
    grouped = search(engine, "honey harvest frames and wax", top_k=4, group_by="section")
    flat = search(engine, "honey harvest frames and wax", top_k=20, group_by="none")
    rows = rows_of(engine, [hit.chunk_id for hit in flat.hits])
    sections = [rows[hit.chunk_id].section_id for hit in grouped.hits]
    assert len(grouped.hits) == 4 and len(set(sections)) == 4 and None not in sections
    assert [hit.rank for hit in grouped.hits] == [1, 2, 3, 4]
    flat_ids = [hit.chunk_id for hit in flat.hits]
    assert [flat_ids.index(hit.chunk_id) for hit in grouped.hits] == sorted(
        flat_ids.index(hit.chunk_id) for hit in grouped.hits
    )
    assert any(hit.merged for hit in grouped.hits)
    for hit in grouped.hits:
        for merged in hit.merged:
            assert rows[merged.chunk_id].section_id == rows[hit.chunk_id].section_id
            assert flat.hits[merged.rank - 1].chunk_id == merged.chunk_id  # its rank before grouping
            assert merged.scores == flat.hits[merged.rank - 1].scores and merged.rank > flat_ids.index(hit.chunk_id)
    assert grouped.to_dict()["hits"][0].get("merged", [{}])[0].keys() <= {"chunk_id", "rank", "score", "scores"}


def test_group_by_document_fills_top_k_with_distinct_documents(engine: Engine) -> None:
    flat = search(engine, "honey bees hive workers", top_k=3, group_by="none")
    assert len({hit.doc_id for hit in flat.hits}) < 3  # the guide fills the plain top 3
    grouped = search(engine, "honey bees hive workers", top_k=3, group_by="document", expand="neighbours")
    assert len(grouped.hits) == 3 and len({hit.doc_id for hit in grouped.hits}) == 3
    assert grouped.hits[0].chunk_id == flat.hits[0].chunk_id
    assert sum(len(hit.merged) for hit in grouped.hits) >= 1
    assert all(hit.context and hit.text in hit.context for hit in grouped.hits)
    assert {"group", "expand", "total"} <= set(grouped.latency_ms)


def test_bad_options_name_the_field(engine: Engine) -> None:
    for options, field in [
        ({"expand": "paragraph"}, "expand"),
        ({"group_by": "chapter"}, "group_by"),
        ({"context_chars": -5}, "context_chars"),
        ({"context_chars": 10**6}, "context_chars"),
    ]:
        with pytest.raises(ValidationError) as caught:
            search(engine, "honey", **options)
        assert caught.value.field == field


def test_by_default_hits_are_grouped_by_section_and_carry_their_section(engine: Engine) -> None:
    result = search(engine, "honey harvest frames and wax", top_k=5)
    rows = rows_of(engine, [hit.chunk_id for hit in result.hits])
    assert len({rows[hit.chunk_id].section_id for hit in result.hits}) == len(result.hits)
    for hit in result.hits:
        assert hit.context is not None and hit.text in hit.context
        assert len(hit.context) <= max(engine.settings.context_chars, len(hit.text))


def test_defaults_come_from_the_settings(make_engine: Callable[..., Engine], corpus: Path) -> None:
    with make_engine(expand="section", context_chars=400, group_by="document") as engine:
        engine.ingest([corpus])
        result = search(engine, "honey harvest", top_k=3)
        assert len({hit.doc_id for hit in result.hits}) == len(result.hits)
        assert all(hit.context is not None and len(hit.context) <= max(400, len(hit.text)) for hit in result.hits)
        plain = search(engine, "honey harvest", top_k=3, expand="none", group_by="none")
        assert all(hit.context is None and not hit.merged for hit in plain.hits)
