"""Every failpoint an ingest, a re-ingest, an update or a delete passes, armed to raise: repair converges.

For each (operation, failpoint) the operation runs with the failpoint raising
:class:`~ragindex.pipeline.faults.InjectedFault`; index-stage faults never reach the caller (they
are recorded as FAILED chunks and FAILED runs), purge faults leave REMOVED rows unpurged. Then
the failpoint is disarmed, ``repair`` runs, and :func:`faultkit.assert_converged` must hold.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faultkit import (
    BOUNDARIES,
    CHANGED,
    CORPUS,
    INDEX_POINTS,
    NEW_CHUNK_TEXT,
    PURGE_POINTS,
    all_chunks,
    assert_converged,
    chunk_by_text,
    settings,
    warm_cache,
    write_corpus,
)

from ragindex.engine import Engine
from ragindex.pipeline import faults

pytestmark = pytest.mark.integration

# (operation, failpoint): every boundary each operation passes
MATRIX = (
    [("ingest", p) for p in ["chunking.after_truth_write", *INDEX_POINTS]]
    + [("reingest", p) for p in ["chunking.after_truth_write", *PURGE_POINTS, "dense.after_index_write"]]
    + [("update_chunk", p) for p in INDEX_POINTS]
    + [("delete_chunks", p) for p in PURGE_POINTS]
    + [("delete_document", p) for p in PURGE_POINTS]
)
# the learned sparse stage runs only with a sparse provider: its own test, with a tiny BGE-M3 checkpoint
SPARSE_POINTS = [f"sparse.{where}" for where in BOUNDARIES]
# a record's metadata-only update (the relabel path) is killed for real at its own point in test_record_faults.py
RECORD_POINTS = ["relabel.after_truth_write"]
# an import's stage boundaries are killed for real in test_import_faults.py
IMPORT_POINTS = [p for p in faults.POINTS if p.startswith("import.")]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """Where each test writes faultkit's corpus itself, after warming the cache (not the shared ``corpus``)."""
    return tmp_path / "corpus"


@pytest.fixture(params=["sections", "chunks"])
def engine(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Engine]:
    """Both layouts: the default (bm25 on sections, dense on chunks) and every kind on the chunks."""
    extra = {"section_max_chars": 0} if request.param == "chunks" else {}
    with Engine(settings(tmp_path / "data", **extra)) as eng:
        yield eng


def test_matrix_covers_every_failpoint() -> None:
    assert {point for _op, point in MATRIX} | set(SPARSE_POINTS) | set(RECORD_POINTS) | set(IMPORT_POINTS) == set(
        faults.POINTS
    )


def _latest_run(engine: Engine, doc_id: int) -> Any:
    return max(engine.store.runs(doc_id=doc_id), key=lambda r: r.run_id)


@pytest.mark.parametrize(("operation", "point"), MATRIX, ids=[f"{o}-{p}" for o, p in MATRIX])
def test_raise_then_repair_converges(engine: Engine, corpus: Path, operation: str, point: str) -> None:
    versions = write_corpus(corpus)
    warm_cache(engine, sorted(corpus.iterdir()), [NEW_CHUNK_TEXT], CHANGED.values())
    kind = point.split(".")[0]
    skip: set[int] = set()

    if operation == "ingest":
        faults.arm(point)
        report = engine.ingest([corpus])
        faults.disarm_all()
        chunks = all_chunks(engine)
        assert chunks and all(c.lifecycle_status == "ACTIVE" for c in chunks)
        if kind == "chunking":
            # every document's chunks were committed before the fault; the document is reported failed
            assert report.documents["failed"] == len(CORPUS) and len(report.failures) == len(CORPUS)
            assert len({c.doc_id for c in chunks}) == len(CORPUS)
        else:
            carriers = [c for c in all_chunks(engine, unit=None) if c.status_of(kind) is not None]
            assert report.chunks["failed"] == len(carriers)
            assert {c.status_of(kind) for c in carriers} == {"FAILED"}
            assert all(c.attempts == 1 and "injected fault" in (c.last_error or "") for c in carriers)
            if kind == "dense":  # the point was never written: the kinds written onto it wait
                assert {c.bm25_status for c in carriers} <= {"PENDING", None}
            else:  # the point's owner (dense on a chunk; none on a section, which bm25 owns) succeeded
                assert {c.dense_status for c in carriers} <= {"SUCCESS", None}
            for doc in engine.store.list_documents():
                run = _latest_run(engine, doc.doc_id)
                assert run.status == "FAILED" and run.failed_stage == kind.upper()
            assert not engine.verify().ok

    elif operation == "reingest":
        engine.ingest([corpus])
        versions |= write_corpus(corpus, CHANGED)
        old = [chunk_by_text(engine, "Foragers dance"), chunk_by_text(engine, "Three duplicate")]
        faults.arm(point)
        report = engine.ingest([corpus])
        faults.disarm_all()
        rows = engine.store.get_chunks([c.chunk_id for c in old])
        assert {r.lifecycle_status for r in rows} == {"REMOVED"}  # out of search at once
        unpurged = {r.chunk_id for r in engine.store.removed_unpurged()}
        if kind == "purge":
            assert {c.chunk_id for c in old} <= unpurged
            assert any("ragindex repair" in n for n in report.notes)
        if kind == "chunking":  # the document failed after its truth write; the sync's purge of the set still ran
            assert not {c.chunk_id for c in old} & unpurged
        hits = engine.search("bees dance figure of eight bearing flower patch", user_id=1, set_id=1, mode="bm25").hits
        assert all(h.chunk_id not in {c.chunk_id for c in old} for h in hits)  # no ghost hit before the purge

    elif operation == "update_chunk":
        engine.ingest([corpus])
        target = chunk_by_text(engine, "Calvin cycle")
        skip.add(target.doc_id)
        faults.arm(point)
        result = engine.update_chunk(target.chunk_id, NEW_CHUNK_TEXT)
        faults.disarm_all()
        row = engine.store.get_chunks([target.chunk_id])[0]
        assert row.content == NEW_CHUNK_TEXT  # the truth holds the new content whatever the index has
        assert result.content_changed and not result.ok and kind in result.failed
        if target.status_of(kind) is None:  # bm25 with sections: the copy is the section's, which the edit rewrites
            assert row.status_of(kind) is None and result.section_statuses[kind] == "FAILED"
        else:
            assert row.status_of(kind) == "FAILED"

    else:
        engine.ingest([corpus])
        target = chunk_by_text(engine, "ATP synthase")
        skip.add(target.doc_id)
        faults.arm(point)
        if operation == "delete_chunks":
            result = engine.delete_chunks([target.chunk_id])
            gone = {target.chunk_id}
        else:
            gone = {c.chunk_id for c in engine.store.chunks_of_document(target.doc_id)}
            result = engine.delete_document(target.doc_id)
        faults.disarm_all()
        # removed counts the chunks; purge counts index points, the document's section points too
        assert result.removed == len(gone) and result.purge_failed >= len(gone)
        assert result.next_action == "ragindex repair"
        assert gone <= {r.chunk_id for r in engine.store.removed_unpurged()}
        hits = engine.search("ATP synthase turbine protons membrane", user_id=1, set_id=1, mode="bm25").hits
        assert not gone & {h.chunk_id for h in hits}  # REMOVED chunks never come back as hits

    # a fault right after the chunking truth write abandons that document's run (left PROCESSING, as a
    # crash would): repair closes runs older than the stale timeout, so here it must be 0
    report = engine.repair(stale_seconds=0 if kind == "chunking" else None)
    assert report.ok, report.to_dict()
    assert_converged(engine, versions, skip_docs=skip)
    if operation == "update_chunk":
        assert engine.store.get_chunks([target.chunk_id])[0].content == NEW_CHUNK_TEXT
        hits = engine.search("glaciers carve valleys moraines", user_id=1, set_id=1).hits
        assert hits[0].chunk_id == target.chunk_id
    if operation in ("delete_chunks", "delete_document"):
        assert all(r.lifecycle_status == "REMOVED" for r in engine.store.get_chunks(sorted(gone)))
    # the repaired state is stable: a second repair finds nothing
    again = engine.repair(dry_run=True)
    assert again.found == 0, again.to_dict()


@pytest.mark.parametrize("point", SPARSE_POINTS)
def test_sparse_stage_raise_then_repair_converges(tmp_path: Path, tiny_bge_m3: Path, point: str) -> None:
    corpus = tmp_path / "corpus"
    versions = write_corpus(corpus)
    with Engine(settings(tmp_path / "data", sparse_provider="bge_m3", sparse_model=str(tiny_bge_m3))) as engine:
        assert engine.kinds == ("dense", "bm25", "sparse")
        warm_cache(engine, sorted(corpus.iterdir()))
        faults.arm(point)
        report = engine.ingest([corpus])
        faults.disarm_all()
        chunks = all_chunks(engine, unit="section")  # learned sparse, like bm25, scores sections
        assert report.chunks["failed"] == len(chunks)
        assert {(c.dense_status, c.bm25_status, c.sparse_status) for c in chunks} == {(None, "SUCCESS", "FAILED")}
        for doc in engine.store.list_documents():
            run = _latest_run(engine, doc.doc_id)
            assert run.status == "FAILED" and run.failed_stage == "SPARSE"
        report = engine.repair()
        assert report.ok and report.indexed["sparse"] == len(chunks), report.to_dict()
        assert_converged(engine, versions)
