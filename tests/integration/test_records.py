"""Issue 24: records with caller keys, metadata on every copy, and filters on every source, end to end.

The real engine on SQLite, MariaDB and PostgreSQL (Qdrant Edge, the shipped model): upsert of every content kind,
an unchanged record that costs nothing, a metadata-only update that embeds nothing and is never found under its old
values (the ghost by metadata), delete by key, every filter operator on every source, and bad input that writes
nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docx import Document as DocxDocument

from dbkit import throwaway_database
from ragindex import Engine, Record, RecordChunk, RecordError, Settings
from ragindex.filters import FilterError
from ragindex.index.routing import bucket_of

pytestmark = pytest.mark.integration

MODES = ("dense", "bm25", "hybrid")
RECORDS: list[dict[str, Any]] = [
    {
        "key": "ticket-1",
        "text": "The lighthouse keeper trims the wick of the lamp at dusk.",
        "title": "Lamp care",
        "metadata": {"year": 2019, "lang": "en", "tags": ["sea", "light"], "published": "2019-05-01", "open": True},
    },
    {
        "key": "ticket-2",
        "text": "A brass sextant measures the angle of the sun above the horizon at noon.",
        "metadata": {"year": 2021, "lang": "en", "tags": ["sea"], "published": "2021-02-03T10:00:00Z", "open": False},
    },
    {
        "key": "cms/page 3",
        "markdown": "# Kettles\n\nCopper kettles whistle on the stove when the water boils.",
        "metadata": {"year": 2023, "lang": "zh", "score": 4.5},
    },
    {
        "key": "upstream-file-77",
        "chunks": [
            {"text": "Spring tides follow the full and the new moon.", "metadata": {"part": "a"}},
            {"text": "Magma rises through volcanic vents before an eruption.", "metadata": {"part": "b"}},
        ],
        "metadata": {"year": 2020},
    },
]
QUERY = "lighthouse lamp sextant sun kettles stove tides moon magma volcanic"


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("mysql", marks=pytest.mark.mysql),
        pytest.param("postgres", marks=pytest.mark.postgres),
    ]
)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """An engine on each truth store, with :data:`RECORDS` upserted into set 1 of user 1."""
    if request.param == "sqlite":
        with Engine(Settings(data_dir=tmp_path / "d")) as eng:
            yield eng
        return
    with throwaway_database(request.param) as url, Engine(Settings(data_dir=tmp_path / "d", database_url=url)) as eng:
        yield eng


def keys(engine: Engine, *, filter: Any = None, mode: str = "hybrid", query: str = QUERY) -> list[str]:
    hits = engine.search(query, user_id=1, set_id=1, mode=mode, top_k=20, filter=filter).hits
    return sorted({h.source for h in hits})


def test_records_of_every_content_are_searchable_when_the_upsert_returns(engine: Engine) -> None:
    report = engine.upsert(RECORDS)
    assert report.documents["added"] == 4 and report.failures == []
    assert report.chunks["total"] == 5 and report.chunks["embedded"] == 5
    for mode in MODES:
        assert keys(engine, mode=mode) == sorted(r["key"] for r in RECORDS)
    [hit] = engine.search("copper kettles", user_id=1, set_id=1, mode="bm25", top_k=1).hits
    assert hit.source == "cms/page 3" and hit.metadata["lang"] == "zh" and hit.metadata["title"] == "Kettles"
    [tide] = engine.search("spring tides moon", user_id=1, set_id=1, mode="bm25", top_k=1).hits
    assert tide.source == "upstream-file-77" and tide.metadata["part"] == "a" and tide.metadata["year"] == 2020
    chunks = engine.document(tide.doc_id, chunks=True).chunks
    given = [c["text"] for c in RECORDS[3]["chunks"]]
    assert [c.content for c in chunks if c.unit == "chunk"] == given, "indexed as given, in order"
    assert engine.verify().ok


def test_an_unchanged_record_costs_nothing_and_a_metadata_change_embeds_nothing(engine: Engine) -> None:
    engine.upsert(RECORDS)
    again = engine.upsert(RECORDS)
    assert again.documents["unchanged"] == 4 and again.chunks["embedded"] == 0 and again.chunks["total"] == 0

    moved = {**RECORDS[0], "metadata": {**RECORDS[0]["metadata"], "year": 2025, "tags": ["archive"]}}
    report = engine.upsert([moved])
    assert report.documents["changed"] == 1 and report.chunks["embedded"] == 0, "the vectors came from the cache"
    assert engine.verify().ok, "every copy carries the new metadata"
    for mode in MODES:
        assert "ticket-1" in keys(engine, filter={"year": 2025}, mode=mode)
        assert "ticket-1" not in keys(engine, filter={"year": 2019}, mode=mode), "no ghost by metadata"
        assert "ticket-1" not in keys(engine, filter={"tags": {"$contains": "light"}}, mode=mode)


def test_the_truth_store_wins_over_a_stale_payload(engine: Engine) -> None:
    """A copy still carrying old metadata (its rewrite not yet done) matches in the index, never in the answer."""
    engine.upsert(RECORDS)
    [doc] = [d for d in engine.store.list_documents() if d.source_uri == "ticket-2"]
    moved = {**RECORDS[1], "metadata": {**RECORDS[1]["metadata"], "year": 1999}}
    engine.upsert([moved])
    # put the old payload back on the copies, as a copy written before the metadata change would be
    index, collection = engine.index, engine.read_collection()
    assert collection is not None
    for chunk in engine.store.chunks_of_document(doc.doc_id, unit=None):
        index.set_payload(collection, chunk.bucket_id, chunk.chunk_id, {"meta": {"year": 2021}})
    for mode in MODES:
        assert "ticket-2" not in keys(engine, filter={"year": 2021}, mode=mode)


def test_every_operator_on_every_source(engine: Engine) -> None:
    engine.upsert(RECORDS)
    cases: list[tuple[dict[str, Any], list[str]]] = [
        ({"lang": "zh"}, ["cms/page 3"]),
        ({"lang": {"$eq": "en"}}, ["ticket-1", "ticket-2"]),
        ({"lang": {"$ne": "en"}}, ["cms/page 3", "upstream-file-77"]),
        ({"year": {"$gt": 2020}}, ["cms/page 3", "ticket-2"]),
        ({"year": {"$gte": 2020, "$lt": 2023}}, ["ticket-2", "upstream-file-77"]),
        ({"year": {"$lte": 2019}}, ["ticket-1"]),
        ({"year": {"$in": [2019, 2023]}}, ["cms/page 3", "ticket-1"]),
        ({"year": {"$nin": [2019, 2023]}}, ["ticket-2", "upstream-file-77"]),
        ({"score": {"$exists": True}}, ["cms/page 3"]),
        ({"score": {"$exists": False}}, ["ticket-1", "ticket-2", "upstream-file-77"]),
        ({"tags": {"$contains": "light"}}, ["ticket-1"]),
        ({"tags": "sea"}, ["ticket-1", "ticket-2"]),
        ({"published": {"$gte": "2020-01-01"}}, ["ticket-2"]),
        ({"published": {"$lt": "2021-02-03T12:00:00+01:00"}}, ["ticket-1", "ticket-2"]),
        ({"open": True}, ["ticket-1"]),
        ({"part": "b"}, ["upstream-file-77"]),
        ({"$or": [{"year": 2019}, {"part": "a"}]}, ["ticket-1", "upstream-file-77"]),
        ({"$and": [{"lang": "en"}, {"$not": {"open": True}}]}, ["ticket-2"]),
        ({"score": {"$gte": 4}, "lang": "zh"}, ["cms/page 3"]),
    ]
    for spec, expected in cases:
        for mode in MODES:
            assert keys(engine, filter=spec, mode=mode) == expected, (spec, mode)
    part_b = engine.search("volcanic magma", user_id=1, set_id=1, mode="bm25", filter={"part": "b"}).hits
    assert [h.text for h in part_b] == [RECORDS[3]["chunks"][1]["text"]], "chunk fields select chunks, not documents"


def test_delete_by_key_and_a_key_is_unique_per_set(engine: Engine) -> None:
    engine.upsert(RECORDS)
    engine.upsert([{"key": "ticket-1", "text": "Another set's record under the same key."}], set_id=2)
    result = engine.delete(keys=["ticket-1", "never-there"])
    assert result.removed == 1 and result.missing == ("never-there",)
    assert "ticket-1" not in keys(engine)
    assert [h.source for h in engine.search("another set", user_id=1, set_id=2).hits] == ["ticket-1"]
    assert engine.delete(keys=["ticket-1"]).removed == 0, "deleting again removes nothing"
    assert engine.verify().ok


def test_a_file_record_is_parsed_by_its_loader(engine: Engine, tmp_path: Path) -> None:
    docx = DocxDocument()
    docx.add_heading("Tailstock", level=1)
    docx.add_paragraph("The tailstock of a lathe supports the far end of long work.")
    path = tmp_path / "lathe.docx"
    docx.save(str(path))
    report = engine.upsert([Record("manual-9", data=path.read_bytes(), filename="lathe.docx", metadata={"year": 2001})])
    assert report.documents["added"] == 1
    [hit] = engine.search("lathe tailstock", user_id=1, set_id=1, top_k=1, filter={"year": 2001}).hits
    assert hit.source == "manual-9" and "tailstock of a lathe" in hit.text
    broken = engine.upsert([Record("broken", data=b"PK\x03\x04 not a zip", filename="broken.docx")])
    assert broken.documents["failed"] == 1 and broken.failures[0]["stage"] == "LOADING", "a bad file fails alone"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"key": "", "text": "x"}, "must not be empty"),
        ({"key": "k" * 257, "text": "x"}, "over the limit of 256"),
        ({"key": "tab\there", "text": "x"}, "control character"),
        ({"key": "a"}, "give exactly one of text, markdown, data"),
        ({"key": "a", "text": "x", "chunks": ["y"]}, "got text and chunks"),
        ({"key": "a", "data": b"x"}, "data needs its filename"),
        ({"key": "a", "chunks": []}, "chunks is empty"),
        ({"key": "a", "chunks": ["  "]}, "chunk 0 is empty"),
        ({"key": "a", "text": "x", "metadata": {"year": "2020"}}, "holds numbers in this set"),
        ({"key": "a", "text": "x", "metadata": {"nested": {"a": 1}}}, "nested objects are not supported"),
        ({"key": "a", "text": "x", "metadata": {"big": "x" * 5000}}, "a string is at most 2048 characters"),
        ({"key": "a", "text": "x", "colour": "red"}, r"unknown field\(s\) colour"),
    ],
)
def test_a_bad_record_refuses_its_batch_and_writes_nothing(engine: Engine, bad: dict[str, Any], message: str) -> None:
    engine.upsert(RECORDS[:1])
    before = [(d.source_uri, d.metadata) for d in engine.store.list_documents()]
    with pytest.raises(RecordError, match=message):
        engine.upsert([{"key": "fine", "text": "A good record before the bad one."}, bad])
    assert [(d.source_uri, d.metadata) for d in engine.store.list_documents()] == before


def test_batches_are_bounded_and_keys_unique_in_a_batch(engine: Engine) -> None:
    with pytest.raises(RecordError, match="over the limit of 1000"):
        engine.upsert([{"key": f"k{i}", "text": "x"} for i in range(1001)])
    with pytest.raises(RecordError, match="given twice"):
        engine.upsert([{"key": "same", "text": "one"}, {"key": "same", "text": "two"}])
    with pytest.raises(RecordError, match="reserved for layout facts"):
        engine.upsert([Record("r", chunks=[RecordChunk("text", {"bbox": "x"})])])
    assert engine.store.list_documents() == []


def test_bad_filters_name_the_problem(engine: Engine) -> None:
    engine.upsert(RECORDS)
    for spec, message in [
        ({"yeer": 1}, r"unknown field 'yeer'; known fields: .*year"),
        ({"year": "x"}, "holds numbers"),
        ({"year": {"$regex": "x"}}, "unknown operator"),
        ({"tags": {"$gt": "a"}}, r"\$gt"),
        ("{not json", "JSON"),
    ]:
        with pytest.raises(FilterError, match=message):
            engine.search("x", user_id=1, set_id=1, filter=spec)
    with pytest.raises(FilterError, match="unknown field 'year'"):
        engine.search("x", user_id=1, set_id=2, filter={"year": 2020}), "another set's fields are not this set's"


def test_files_get_derived_metadata_to_filter_by(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "notes.md").write_text("# Terns\n\nArctic terns migrate from pole to pole.", encoding="utf-8")
    (folder / "log.txt").write_text("Arctic terns were seen over the harbour in May.", encoding="utf-8")
    engine.ingest([folder])
    hits = engine.search("arctic terns", user_id=1, set_id=1, filter={"suffix": ".md"}).hits
    assert [h.filename for h in hits] == ["notes.md"]
    assert hits[0].metadata["script"] == "latin" and hits[0].metadata["size"] > 0
    assert {
        h.filename
        for h in engine.search("terns", user_id=1, set_id=1, filter={"modified": {"$gte": "2020-01-01"}}).hits
    } == {"notes.md", "log.txt"}


def test_metadata_fields_get_payload_indexes_of_their_type(engine: Engine) -> None:
    engine.upsert(RECORDS)
    collection = engine.read_collection()
    assert collection is not None
    shard = engine.index._shard(collection, bucket_of(1, engine.settings.bucket_count))  # type: ignore[attr-defined]
    schema = {key: str(info.data_type).rsplit(".")[-1].lower() for key, info in shard.info().payload_schema.items()}
    assert {k: v for k, v in schema.items() if k.startswith("meta.")} == {
        "meta.year": "float",
        "meta.score": "float",
        "meta.published": "float",
        "meta.lang": "keyword",
        "meta.tags": "keyword",
        "meta.title": "keyword",
        "meta.part": "keyword",
        "meta.open": "integer",
    }
