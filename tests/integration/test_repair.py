"""Repair converges the index copies to the truth store, on the real engines (the repair matrix of seed 4.6)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from ragindex.cli import commands as _commands  # noqa: F401 - registers ingest, verify
from ragindex.cli import manage as _manage  # noqa: F401 - registers repair, reindex
from ragindex.cli.app import app
from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import NotFoundError
from ragindex.index.protocol import DensePoint
from ragindex.pipeline import faults

pytestmark = pytest.mark.integration

# fixtures: engine, make_engine (tests/integration/conftest.py); corpus: corpora.THREE_DOCS (tests/conftest.py)


@pytest.fixture
def engine_settings() -> dict[str, Any]:
    """Every kind on chunks (``section_max_chars=0``): these tests drive the chunk-level state machine with a
    bm25 copy on each chunk; tests/integration/test_sections.py covers the sectioned default."""
    return {"section_max_chars": 0}


def top(engine: Engine, query: str, mode: str = "hybrid") -> str:
    return engine.search(query, user_id=1, set_id=1, mode=mode).hits[0].chunk_id


def where(engine: Engine, chunk_id: str) -> tuple[str, int]:
    collection = engine.read_collection()
    assert collection is not None
    return collection, engine.store.get_chunks([chunk_id])[0].bucket_id


def present(engine: Engine, chunk_id: str) -> frozenset[str] | None:
    return engine.index.vectors_present(*where(engine, chunk_id)).get(chunk_id)


def add_file(engine: Engine, corpus: Path, name: str, text: str) -> str:
    (corpus / name).write_text(text, encoding="utf-8")
    engine.ingest([corpus])
    doc = next(d for d in engine.store.list_documents() if d.filename == name)
    return engine.store.chunks_of_document(doc.doc_id)[0].chunk_id


def stuck(engine: Engine, kind: str, ids: list[str]) -> None:
    """A worker that claimed ``ids`` for re-indexing and died mid-batch (INDEXING for ever)."""
    engine.store.reset_status(ids, [kind], from_statuses=("SUCCESS",))
    assert engine.store.claim(kind, ids).complete


def snapshot(engine: Engine) -> tuple[Any, ...]:
    collection = engine.read_collection()
    assert collection is not None
    index = {b: engine.index.vectors_present(collection, b) for b in range(engine.settings.bucket_count)}
    rows = engine.store.get_chunks(engine.store.all_active_chunk_ids())
    unpurged = sorted(r.chunk_id for r in engine.store.removed_unpurged())
    return engine.store.status_counts(), index, sorted(rows, key=lambda r: r.chunk_id), unpurged


def test_healthy_system_needs_nothing(engine: Engine) -> None:
    dry = engine.repair(dry_run=True)
    assert dry.found == 0 and dry.ok
    report = engine.repair()
    assert report.found == 0 and report.ok
    assert report.indexed == {"dense": 0, "bm25": 0}
    assert engine.verify().ok
    assert json.loads(json.dumps(report.to_dict()))["collection"] == "ragindex"


def test_stale_indexing_claim_is_released_and_indexed(engine: Engine) -> None:
    cid = top(engine, "honeybee queen")
    stuck(engine, "dense", [cid])
    assert engine.store.get_chunks([cid])[0].dense_status == "INDEXING"
    assert not engine.verify().ok

    # not stale yet under the default timeout (600 s): left to its owner
    report = engine.repair()
    assert report.stale["dense"] == 0
    assert engine.store.get_chunks([cid])[0].dense_status == "INDEXING"

    time.sleep(0.05)
    report = engine.repair(stale_seconds=0.01)
    assert report.stale["dense"] == 1
    assert report.samples["stale_dense"] == [cid]
    assert report.indexed["dense"] == 1 and report.indexed["bm25"] == 1
    row = engine.store.get_chunks([cid])[0]
    assert (row.dense_status, row.bm25_status) == ("SUCCESS", "SUCCESS")
    assert engine.verify().ok


def test_repair_stale_indexing_entry_point(engine: Engine) -> None:
    ids = engine.store.all_active_chunk_ids()
    stuck(engine, "bm25", ids)
    time.sleep(0.05)
    assert engine.repair_stale_indexing(limit=1, stale_seconds=0.01).released == {"dense": 0, "bm25": 1}
    out = engine.repair_stale_indexing(stale_seconds=0.01)
    assert out.released["bm25"] == len(ids) - 1
    assert out.indexed["bm25"] == len(ids) - 1
    assert engine.repair_stale_indexing(stale_seconds=0.01).released == {"dense": 0, "bm25": 0}
    assert engine.verify().ok


def test_failed_chunks_below_max_attempts_are_retried(engine: Engine, corpus: Path) -> None:
    faults.arm("dense.after_encode")
    cid = add_file(engine, corpus, "octopus.txt", "Octopuses have three hearts and blue blood.")
    row = engine.store.get_chunks([cid])[0]
    assert (row.dense_status, row.attempts) == ("FAILED", 1)
    faults.disarm_all()
    assert not engine.verify().ok

    dry = engine.repair(dry_run=True)
    assert dry.failed_retried["dense"] == 1 and dry.failed_exhausted["dense"] == 0
    report = engine.repair()
    assert report.failed_retried["dense"] == 1
    assert report.indexed["dense"] == 1 and report.indexed["bm25"] == 1
    assert top(engine, "octopus hearts", mode="dense") == cid
    assert engine.verify().ok


def test_max_attempts_is_respected_until_an_explicit_reindex(make_engine: Callable[..., Engine], corpus: Path) -> None:
    with make_engine(max_attempts=2) as engine:
        engine.ingest([corpus])
        faults.arm("dense.after_encode")
        cid = add_file(engine, corpus, "octopus.txt", "Octopuses have three hearts and blue blood.")
        assert engine.store.get_chunks([cid])[0].attempts == 1
        report = engine.repair()  # retried once more, fails again: attempts reach max
        assert report.failed_retried["dense"] == 1 and report.index_failed["dense"] == 1
        assert not report.ok
        assert engine.store.get_chunks([cid])[0].attempts == 2
        faults.disarm_all()

        report = engine.repair()  # automatic repair never retries past max_attempts
        assert report.failed_exhausted["dense"] == 1
        assert report.failed_retried["dense"] == 0 and report.indexed["dense"] == 0
        assert report.samples["failed_exhausted_dense"] == [cid]
        assert any("reindex --failed" in note for note in report.notes)
        row = engine.store.get_chunks([cid])[0]
        assert (row.dense_status, row.attempts) == ("FAILED", 2)
        assert not engine.verify().ok

        with pytest.raises(NotFoundError):
            engine.reindex_failed(["no-such-chunk"])
        out = engine.reindex_failed()  # explicit: regardless of attempts
        assert out.chunks == 1 and out.indexed == {"dense": 1, "bm25": 1}
        row = engine.store.get_chunks([cid])[0]
        assert (row.dense_status, row.bm25_status, row.attempts) == ("SUCCESS", "SUCCESS", 0)
        assert engine.verify().ok
        assert engine.reindex_failed().chunks == 0


def test_reindex_failed_by_id_and_forced_reindex_of_chunks(engine: Engine, corpus: Path) -> None:
    faults.arm("dense.after_encode")
    a = add_file(engine, corpus, "a.txt", "Glaciers carve U-shaped valleys.")
    b = add_file(engine, corpus, "b.txt", "Rivers carve V-shaped valleys.")
    faults.disarm_all()
    out = engine.reindex_failed([a])
    assert out.chunks == 1 and out.indexed["dense"] == 1
    assert engine.store.get_chunks([b])[0].dense_status == "FAILED"  # only the given one
    # a SUCCESS chunk: reindex_failed leaves it alone, reindex_chunks rebuilds it (from the cache)
    assert engine.reindex_failed([a]).indexed["dense"] == 0
    forced = engine.reindex_chunks([a, b])
    assert forced.indexed == {"dense": 2, "bm25": 2}
    assert forced.embedded == 0  # both vectors were cached before the injected fault (after encode)
    assert engine.verify().ok


def test_point_deleted_behind_the_truth_stores_back_is_rewritten(engine: Engine) -> None:
    cid = top(engine, "photosynthesis chloroplasts")
    engine.index.delete_points(*where(engine, cid), [cid])
    verify = engine.verify()
    assert not verify.ok
    assert any(cid in b.missing["dense"] for b in verify.buckets)

    report = engine.repair()
    assert report.missing == {"dense": 1, "bm25": 0}
    assert report.indexed == {"dense": 1, "bm25": 1}
    assert present(engine, cid) == frozenset({"dense", "bm25"})
    assert top(engine, "photosynthesis chloroplasts", mode="bm25") == cid
    assert engine.verify().ok


def test_missing_named_vector_resets_only_that_kind(engine: Engine) -> None:
    cid = top(engine, "TCP congestion window")
    collection, bucket = where(engine, cid)
    row = engine.store.get_chunks([cid])[0]
    vector = engine.dense.encode_documents([row.content])[0]
    # a whole-point upsert drops the bm25 vector while the truth still says bm25 SUCCESS
    engine.index.upsert_dense(
        collection,
        bucket,
        [DensePoint(chunk_id=cid, user_id=row.user_id, set_id=row.set_id, doc_id=row.doc_id, vector=vector)],
    )
    assert present(engine, cid) == frozenset({"dense"})
    assert not engine.verify().ok

    report = engine.repair()
    assert report.missing == {"dense": 0, "bm25": 1}
    assert report.indexed == {"dense": 0, "bm25": 1}  # dense untouched
    assert present(engine, cid) == frozenset({"dense", "bm25"})
    assert engine.verify().ok


def test_orphan_point_is_deleted(engine: Engine) -> None:
    cid = top(engine, "honeybee queen")
    collection, bucket = where(engine, cid)
    orphan = str(uuid.uuid4())
    rng = np.random.default_rng(0)
    vector = rng.normal(size=384).astype(np.float32)
    vector /= np.linalg.norm(vector)
    engine.index.upsert_dense(
        collection, bucket, [DensePoint(chunk_id=orphan, user_id=1, set_id=1, doc_id=999, vector=vector)]
    )
    verify = engine.verify()
    assert not verify.ok and any(orphan in b.orphans for b in verify.buckets)

    report = engine.repair()
    assert report.orphans == 1 and report.samples["orphans"] == [orphan]
    assert orphan not in engine.index.vectors_present(collection, bucket)
    assert engine.verify().ok


def test_dry_run_changes_nothing(engine: Engine, corpus: Path) -> None:
    bees, photo, tcp = (top(engine, q) for q in ("honeybee queen", "photosynthesis chloroplasts", "TCP window"))
    collection, bucket = where(engine, bees)
    engine.index.delete_points(collection, bucket, [photo])  # missing point
    orphan = str(uuid.uuid4())
    vector = np.ones(384, dtype=np.float32) / np.sqrt(384)
    engine.index.upsert_dense(
        collection, bucket, [DensePoint(chunk_id=orphan, user_id=1, set_id=1, doc_id=999, vector=vector)]
    )
    stuck(engine, "dense", [tcp])
    faults.arm("purge.before_index_delete")
    engine.delete_chunks([bees])  # unpurged delete
    faults.arm("dense.after_encode")
    add_file(engine, corpus, "octopus.txt", "Octopuses have three hearts.")  # FAILED
    faults.disarm_all()
    time.sleep(0.05)

    before = snapshot(engine)
    dry = engine.repair(dry_run=True, stale_seconds=0.01)
    assert snapshot(engine) == before
    assert dry.dry_run and dry.ok
    assert dry.stale["dense"] == 1
    assert dry.unpurged == 1 and dry.purged == 0
    assert dry.orphans == 1  # the unpurged delete is not counted twice
    assert dry.missing["dense"] == 1
    assert dry.failed_retried["dense"] == 1
    assert dry.indexed == {"dense": 0, "bm25": 0}
    assert dry.found == 5
    assert dry.to_dict()["samples"]["orphans"] == [orphan]

    report = engine.repair(stale_seconds=0.01)
    assert report.ok
    assert (report.stale["dense"], report.unpurged, report.purged, report.orphans) == (1, 1, 1, 1)
    assert report.indexed["dense"] == 3  # stale + missing + failed
    assert engine.verify().ok
    assert engine.repair(dry_run=True).found == 0


def test_cli_repair(tmp_path: Path, corpus: Path) -> None:
    data = tmp_path / "cli"
    runner = CliRunner()
    assert runner.invoke(app, ["--data-dir", str(data), "ingest", str(corpus), "--json"]).exit_code == 0
    with Engine(Settings(data_dir=data)) as engine:  # break it behind the truth store's back
        cid = engine.store.chunks_of_document(engine.store.list_documents()[0].doc_id)[0].chunk_id
        engine.index.delete_points(*where(engine, cid), [cid])
    result = runner.invoke(app, ["--data-dir", str(data), "repair", "--dry-run", "--json"])
    assert result.exit_code == 0
    payload = json.loads(result.stdout)
    assert payload["dry_run"] is True and payload["missing"]["dense"] == 1
    result = runner.invoke(app, ["--data-dir", str(data), "verify", "--json"])
    assert result.exit_code == 1
    result = runner.invoke(app, ["--data-dir", str(data), "repair", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["indexed"]["dense"] == 1
    result = runner.invoke(app, ["--data-dir", str(data), "repair"])
    assert result.exit_code == 0 and "found" in result.stdout
    assert runner.invoke(app, ["--data-dir", str(data), "verify", "--json"]).exit_code == 0

    result = runner.invoke(app, ["--data-dir", str(data), "reindex", "--failed", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["chunks"] == 0
    result = runner.invoke(app, ["--data-dir", str(data), "reindex", "--chunk-id", cid, "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["indexed"]["dense"] == 1
    result = runner.invoke(app, ["--data-dir", str(data), "reindex", "--chunk-id", "nope", "--json"])
    assert result.exit_code == 7
    result = runner.invoke(app, ["--data-dir", str(data), "reindex"])
    assert result.exit_code == 2 and "exactly one" in result.stderr
    result = runner.invoke(app, ["--data-dir", str(data), "reindex", "--failed", "--chunk-id", cid])
    assert result.exit_code == 2
    result = runner.invoke(app, ["--data-dir", str(data), "reindex", "--failed", "--drop-old"])
    assert result.exit_code == 2 and "--into" in result.stderr
