"""Update and delete on the real engines (SQLite, Qdrant Edge, the shipped model), and their CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from corpora import FOUR_DOCS as CORPUS
from ragindex.cli import commands as _commands  # noqa: F401 - registers ingest, search, verify
from ragindex.cli import manage as _manage  # noqa: F401 - registers repair, reindex, delete, update-chunk
from ragindex.cli.app import app
from ragindex.engine import Engine
from ragindex.errors import NotFoundError, ValidationError
from ragindex.pipeline import faults

pytestmark = pytest.mark.integration

# fixtures: engine (tests/integration/conftest.py) over corpus, here the four shared documents


@pytest.fixture
def corpus_files() -> dict[str, str]:
    return dict(CORPUS)


@pytest.fixture
def engine_settings() -> dict[str, Any]:
    """Every kind on chunks (``section_max_chars=0``): these tests drive the chunk-level state machine with a
    bm25 copy on each chunk; tests/integration/test_sections.py covers the sectioned default."""
    return {"section_max_chars": 0}


def top(engine: Engine, query: str, mode: str = "hybrid") -> str:
    return engine.search(query, user_id=1, set_id=1, mode=mode).hits[0].chunk_id


def hit_ids(engine: Engine, query: str, mode: str = "hybrid") -> set[str]:
    return {h.chunk_id for h in engine.search(query, user_id=1, set_id=1, mode=mode).hits}


def in_index(engine: Engine, chunk_id: str) -> frozenset[str] | None:
    collection = engine.read_collection()
    assert collection is not None
    bucket = engine.store.get_chunks([chunk_id])[0].bucket_id
    return engine.index.vectors_present(collection, bucket).get(chunk_id)


# ---------------------------------------------------------------------------------------------- update
def test_changed_content_is_reembedded_under_the_same_point_id(engine: Engine) -> None:
    cid = top(engine, "honeybee queen and drones")
    collection = engine.read_collection()
    assert collection is not None
    bucket = engine.store.get_chunks([cid])[0].bucket_id
    points_before = engine.index.count(collection, bucket)

    new_text = "Octopuses have three hearts, blue copper-based blood and eight arms."
    result = engine.update_chunk(cid, new_text)

    assert result.content_changed is True
    assert result.reembedded is True
    assert result.embedded == 1
    assert result.ok is True
    assert result.statuses == {"dense": "SUCCESS", "bm25": "SUCCESS"}
    assert engine.index.count(collection, bucket) == points_before  # same point, replaced in place
    assert in_index(engine, cid) == frozenset({"dense", "bm25"})
    # the vectors changed: the new content ranks the chunk first, by dense and by bm25
    for mode in ("dense", "bm25", "hybrid"):
        hits = engine.search("octopus hearts blood", user_id=1, set_id=1, mode=mode).hits
        assert hits[0].chunk_id == cid
        assert hits[0].text == new_text
    assert cid not in hit_ids(engine, "honeybee queen drones", mode="bm25")
    assert engine.verify().ok


def test_unchanged_content_reembeds_nothing_and_merges_metadata(engine: Engine) -> None:
    cid = top(engine, "sourdough starter yeast")
    row = engine.store.get_chunks([cid])[0]
    result = engine.update_chunk(cid, row.content, metadata={"reviewed": "yes"})
    assert result.content_changed is False
    assert result.reembedded is False
    assert result.embedded == 0
    assert result.metadata_updated is True
    after = engine.store.get_chunks([cid])[0]
    assert after.metadata["reviewed"] == "yes"
    assert after.content_hash == row.content_hash
    assert (after.dense_status, after.bm25_status) == ("SUCCESS", "SUCCESS")
    # metadata only
    assert engine.update_chunk(cid, metadata={"lang": "en"}).reembedded is False
    assert engine.store.get_chunks([cid])[0].metadata == {"reviewed": "yes", "lang": "en"}
    assert engine.verify().ok


def test_update_of_unknown_or_deleted_chunk_is_not_found(engine: Engine) -> None:
    with pytest.raises(NotFoundError) as info:
        engine.update_chunk("00000000-0000-0000-0000-000000000000", "text")
    assert info.value.exit_code == 7
    cid = top(engine, "TCP congestion window")
    engine.delete_chunks([cid])
    with pytest.raises(NotFoundError):
        engine.update_chunk(cid, "new text")
    with pytest.raises(ValidationError):
        engine.update_chunk(top(engine, "photosynthesis light"), "   ")


def test_a_failed_reembed_is_reported_and_left_for_repair(engine: Engine) -> None:
    cid = top(engine, "photosynthesis chloroplasts")
    faults.arm("dense.after_encode")
    result = engine.update_chunk(cid, "Mitochondria make ATP by oxidative phosphorylation.")
    assert result.ok is False
    assert result.reembedded is False
    assert result.statuses["dense"] == "FAILED"
    faults.disarm_all()
    engine.repair()
    assert top(engine, "mitochondria ATP", mode="dense") == cid
    assert engine.verify().ok


# ---------------------------------------------------------------------------------------------- delete
def test_deleted_chunk_leaves_search_and_index(engine: Engine) -> None:
    cid = top(engine, "honeybee queen")
    assert in_index(engine, cid) is not None
    result = engine.delete_chunks([cid])
    assert (result.removed, result.purged, result.purge_failed) == (1, 1, 0)
    for mode in ("dense", "bm25", "hybrid"):
        assert cid not in hit_ids(engine, "honeybee queen drones", mode=mode)
    assert in_index(engine, cid) is None
    assert engine.verify().ok
    again = engine.delete_chunks([cid])  # idempotent
    assert (again.removed, again.purged, again.purge_failed) == (0, 0, 0)


def test_delete_with_an_unknown_id_changes_nothing(engine: Engine) -> None:
    cid = top(engine, "honeybee queen")
    with pytest.raises(NotFoundError):
        engine.delete_chunks([cid, "no-such-chunk"])
    assert engine.store.get_chunks([cid])[0].lifecycle_status == "ACTIVE"
    assert cid in hit_ids(engine, "honeybee queen")


def test_delete_document(engine: Engine) -> None:
    hit = engine.search("sourdough starter", user_id=1, set_id=1).hits[0]
    chunks = engine.store.chunks_of_document(hit.doc_id)
    result = engine.delete_document(hit.doc_id)
    assert result.removed == len(chunks) >= 1
    assert result.purged == len(chunks)
    assert result.doc_ids == (hit.doc_id,)
    assert all(h.doc_id != hit.doc_id for h in engine.search("sourdough starter", user_id=1, set_id=1).hits)
    assert all(in_index(engine, c.chunk_id) is None for c in chunks)
    assert engine.verify().ok
    with pytest.raises(NotFoundError):
        engine.delete_document(hit.doc_id + 1000)


def test_delete_source_file_then_folder(engine: Engine, corpus: Path) -> None:
    one = engine.delete_source(corpus / "tcp.txt")
    assert one.removed == 1 and one.purged == 1
    assert not hit_ids(engine, "TCP congestion slow start", mode="bm25")
    rest = engine.delete_source(corpus)
    assert rest.removed == len(CORPUS) - 1
    assert engine.search("honeybee sourdough photosynthesis", user_id=1, set_id=1).hits == ()
    assert engine.verify().ok
    with pytest.raises(NotFoundError):
        engine.delete_source(corpus)  # nothing ACTIVE left there
    with pytest.raises(NotFoundError):
        engine.delete_source(corpus / "bees.txt", user_id=2)


def test_failed_purge_leaves_the_chunk_removed_for_repair(engine: Engine) -> None:
    cid = top(engine, "honeybee queen")
    faults.arm("purge.before_index_delete")
    result = engine.delete_chunks([cid])
    assert (result.removed, result.purged, result.purge_failed) == (1, 0, 1)
    assert result.next_action == "ragindex repair"
    # out of search at once (truth first), though the index still holds the point
    assert cid not in hit_ids(engine, "honeybee queen drones")
    assert in_index(engine, cid) is not None
    assert [r.chunk_id for r in engine.store.removed_unpurged()] == [cid]
    assert not engine.verify().ok
    faults.disarm_all()

    report = engine.repair()
    assert (report.unpurged, report.purged, report.purge_failed) == (1, 1, 0)
    assert report.orphans == 0  # purged as a delete, not deleted as an orphan
    assert engine.store.removed_unpurged() == []
    assert in_index(engine, cid) is None
    assert engine.verify().ok


# ---------------------------------------------------------------------------------------------- CLI
def cli(data: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["--data-dir", str(data), *args])
    return result.exit_code, result.stdout, result.stderr


def test_cli_delete_and_update_chunk(tmp_path: Path, corpus: Path) -> None:
    data = tmp_path / "cli"
    code, out, _ = cli(data, "ingest", str(corpus), "--json")
    assert code == 0, out
    code, out, _ = cli(data, "search", "honeybee queen", "--json")
    hit = json.loads(out)["hits"][0]
    cid = hit["chunk_id"]

    code, out, _ = cli(data, "update-chunk", cid, "--text", "Octopuses have three hearts.", "--json")
    assert code == 0, out
    payload = json.loads(out)
    assert payload["reembedded"] is True and payload["chunk_id"] == cid
    new_file = tmp_path / "new.txt"
    new_file.write_text("Octopuses have three hearts.", encoding="utf-8")
    code, out, _ = cli(data, "update-chunk", cid, "--file", str(new_file), "--json")
    assert code == 0 and json.loads(out)["reembedded"] is False

    code, _, err = cli(data, "update-chunk", cid, "--text", "a", "--file", str(new_file))
    assert code == 2 and "exactly one" in err
    code, _, err = cli(data, "update-chunk", cid)
    assert code == 2
    code, _, err = cli(data, "update-chunk", "no-such-chunk", "--text", "x", "--json")
    assert code == 7 and "not found" in err
    code, _, err = cli(data, "update-chunk", cid, "--file", str(tmp_path / "missing.txt"))
    assert code == 2

    code, out, _ = cli(data, "delete", "--chunk-id", cid, "--json")
    assert code == 0 and json.loads(out)["removed"] == 1
    code, _, _ = cli(data, "delete", "--chunk-id", "no-such-chunk", "--json")
    assert code == 7
    code, out, _ = cli(data, "delete", "--source", str(corpus / "tcp.txt"), "--json")
    assert code == 0 and json.loads(out)["removed"] == 1
    code, out, _ = cli(data, "search", "sourdough starter", "--json")
    doc_id = json.loads(out)["hits"][0]["doc_id"]
    code, out, _ = cli(data, "delete", "--doc-id", str(doc_id), "--json")
    assert code == 0 and json.loads(out)["doc_ids"] == [doc_id]
    code, out, _ = cli(data, "delete", "--doc-id", "9999", "--json")
    assert code == 7

    code, _, err = cli(data, "delete")
    assert code == 2 and "exactly one" in err
    code, _, err = cli(data, "delete", "--doc-id", "1", "--chunk-id", cid)
    assert code == 2
    code, out, _ = cli(data, "delete", "--source", str(corpus), "--user-id", "1")  # table output
    assert code == 0 and "removed" in out

    code, out, _ = cli(data, "verify", "--json")
    assert code == 0 and json.loads(out)["ok"] is True
