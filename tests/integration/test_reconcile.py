"""The periodic reconciler (issue 11, item 2; seed section 4.6) on the real engines: SQLite, Qdrant Edge, the model.

Each test breaks the truth store the way a crash or an outage does, then runs reconciler passes. Backoffs are
crossed by moving the reconciler's clock forward, never by sleeping; a test that shortens the stale timeout says so.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from ragindex.clock import utcnow
from ragindex.engine import Engine
from ragindex.errors import ValidationError
from ragindex.pipeline import faults
from ragindex.pipeline.reconcile import PassReport, ReconcileLoop, Reconciler
from ragindex.store.sql import SqlTruthStore

pytestmark = pytest.mark.integration

# fixtures: engine, make_engine (tests/integration/conftest.py); corpus: corpora.THREE_DOCS (tests/conftest.py)


def later(seconds: float) -> Callable[[], datetime]:
    """A clock ``seconds`` ahead of now (to cross a backoff without waiting for it)."""
    return lambda: utcnow() + timedelta(seconds=seconds)


def add_file(engine: Engine, corpus: Path, name: str, text: str) -> int:
    (corpus / name).write_text(text, encoding="utf-8")
    engine.ingest([corpus])
    return next(d.doc_id for d in engine.store.list_documents() if d.filename == name)


def dense_rows(engine: Engine, doc_id: int) -> list[tuple[str | None, int]]:
    return [(r.dense_status, r.attempts) for r in engine.store.chunks_of_document(doc_id)]


@pytest.fixture
def reconciler(engine: Engine) -> Reconciler:
    return engine.reconciler(owner="test")


@pytest.fixture
def failed_doc(engine: Engine, corpus: Path) -> int:
    """A document whose one chunk failed to embed (the encoder raised): FAILED, attempts 1."""
    faults.arm("dense.after_encode")
    doc_id = add_file(engine, corpus, "octopus.txt", "Octopuses have three hearts and blue blood.")
    faults.disarm_all()
    assert dense_rows(engine, doc_id) == [("FAILED", 1)]
    return doc_id


def test_a_healthy_system_gives_a_pass_nothing_to_do(engine: Engine, reconciler: Reconciler) -> None:
    report = reconciler.run_pass()
    assert report.held and report.actions == {"retry": 0, "release": 0, "purge": 0, "finish": 0}
    totals = engine.store.reconcile_totals()
    assert totals is not None and totals.passes == 1 and totals.last_owner == "test"
    assert engine.verify().ok


def test_failed_copies_are_retried_once_their_backoff_is_over(
    engine: Engine, reconciler: Reconciler, failed_doc: int
) -> None:
    doc_id = failed_doc
    assert engine.store.get_document(doc_id).status == "FAILED"

    assert reconciler.run_pass().actions["retry"] == 0, "30 s have not passed since the failure"
    assert dense_rows(engine, doc_id) == [("FAILED", 1)]

    reconciler.clock = later(31)
    report = reconciler.run_pass()
    assert report.actions["retry"] == 1 and report.retry_failed == 0
    assert report.finished == [doc_id] and report.actions["finish"] == 1
    assert dense_rows(engine, doc_id) == [("SUCCESS", 0)]
    assert engine.store.get_document(doc_id).status == "SUCCESS"
    hits = engine.search("how many hearts does an octopus have", user_id=1, set_id=1, mode="dense").hits
    assert hits[0].filename == "octopus.txt"
    assert engine.verify().ok
    totals = engine.store.reconcile_totals()
    assert totals is not None and totals.passes == 2
    assert totals.actions == {"retry": 1, "release": 0, "purge": 0, "finish": 1}


def test_a_chunk_that_always_fails_stops_at_max_attempts(make_engine: Callable[..., Engine], corpus: Path) -> None:
    with make_engine(max_attempts=3) as engine:
        engine.ingest([corpus])
        faults.arm("dense.after_encode")
        doc_id = add_file(engine, corpus, "octopus.txt", "Octopuses have three hearts and blue blood.")
        reconciler = engine.reconciler()
        reconciler.clock = later(15)
        assert reconciler.run_pass().actions["retry"] == 0  # the first wait is 30 s
        reconciler.clock = later(31)
        report = reconciler.run_pass()
        assert (report.actions["retry"], report.retry_failed) == (1, 1)
        assert dense_rows(engine, doc_id) == [("FAILED", 2)]
        assert reconciler.run_pass().actions["retry"] == 0, "the second wait is 60 s"
        reconciler.clock = later(61)
        assert reconciler.run_pass().retry_failed == 1
        assert dense_rows(engine, doc_id) == [("FAILED", 3)]

        faults.disarm_all()  # the cause is gone, but automatic retries are spent: only an explicit reindex retries
        reconciler.clock = later(10**6)
        assert reconciler.run_pass().actions["retry"] == 0
        assert dense_rows(engine, doc_id) == [("FAILED", 3)]
        assert engine.store.get_document(doc_id).status == "FAILED"
        assert engine.reindex_failed().indexed["dense"] == 1
        assert engine.verify().ok


def test_removed_copies_left_in_the_index_are_purged(engine: Engine, reconciler: Reconciler) -> None:
    doc = next(d for d in engine.store.list_documents() if d.filename == "bees.txt")
    faults.arm("purge.before_index_delete")
    out = engine.delete_document(doc.doc_id)
    faults.disarm_all()
    assert out.purge_failed > 0 and not engine.verify().ok
    report = reconciler.run_pass()
    assert report.actions["purge"] == out.purge_failed
    assert engine.store.removed_unpurged() == []
    assert engine.verify().ok
    assert reconciler.run_pass().actions["purge"] == 0


def test_the_work_of_a_dead_ingest_is_released_retried_and_finished(engine: Engine, reconciler: Reconciler) -> None:
    """A process that died holding claims and a PROCESSING run.

    Mechanism test: the stale timeout is 0 s here so that this instant's claims count as abandoned (the default
    600 s is the subject of the claims-with-leases work, not of this test).
    """
    doc = next(d for d in engine.store.list_documents() if d.filename == "tcp.txt")
    ids = [r.chunk_id for r in engine.store.chunks_of_document(doc.doc_id)]
    engine.store.reset_status(ids, ["dense"], from_statuses=("SUCCESS",))
    assert engine.store.claim("dense", ids).complete  # the dead process's claim
    engine.store.start_run(doc.doc_id)  # and its run, left PROCESSING
    engine.store.set_document_status(doc.doc_id, "PROCESSING")
    assert not engine.verify().ok

    fresh = reconciler.run_pass()  # the default timeout: claims this young belong to a live process
    assert fresh.actions == {"retry": 0, "release": 0, "purge": 0, "finish": 0}

    reconciler.policy = replace(reconciler.policy, stale_seconds=0.0)
    reconciler.clock = later(31)  # a released claim counts as an attempt: it waits the first backoff
    time.sleep(0.01)  # claimed_at must be strictly older than "now - 0 s"
    report = reconciler.run_pass()
    assert report.actions["release"] == len(ids) and report.actions["retry"] == len(ids)
    assert report.finished == [doc.doc_id]
    assert engine.store.get_document(doc.doc_id).status == "SUCCESS"
    assert engine.store.runs(doc_id=doc.doc_id)[0].status == "SUCCESS"
    assert engine.store.runs(status="PROCESSING") == []
    assert engine.verify().ok


def test_a_stuck_run_whose_failures_are_exhausted_closes_failed(
    make_engine: Callable[..., Engine], corpus: Path
) -> None:
    with make_engine(max_attempts=1) as engine:
        engine.ingest([corpus])
        doc = next(d for d in engine.store.list_documents() if d.filename == "bees.txt")
        (cid,) = [r.chunk_id for r in engine.store.chunks_of_document(doc.doc_id)]
        engine.store.reset_status([cid], ["dense"], from_statuses=("SUCCESS",))
        claim = engine.store.claim("dense", [cid])
        engine.store.mark_failed(claim, [cid], "EncodingError: the encoder is down")
        run_id = engine.store.start_run(doc.doc_id)
        reconciler = engine.reconciler()
        reconciler.policy = replace(reconciler.policy, stale_seconds=0.0)  # mechanism: the run counts as abandoned
        time.sleep(0.01)
        report = reconciler.run_pass()
        assert report.finished == [doc.doc_id] and report.actions["retry"] == 0
        run = engine.store.runs(doc_id=doc.doc_id)[0]
        assert (run.run_id, run.status, run.failed_stage) == (run_id, "FAILED", "DENSE")
        assert run.error is not None and "encoder is down" in run.error
        assert engine.store.get_document(doc.doc_id).status == "FAILED"


def test_a_pass_does_nothing_while_another_process_holds_the_lock(
    engine: Engine, reconciler: Reconciler, failed_doc: int
) -> None:
    doc_id = failed_doc
    reconciler.clock = later(10**6)
    other = SqlTruthStore(engine.settings.resolved_database_url)  # another process's connections
    try:
        with other.reconcile_lock("another-process", lease_seconds=600) as held:
            assert held
            report = reconciler.run_pass()
            assert not report.held and report.actions == {"retry": 0, "release": 0, "purge": 0, "finish": 0}
            assert dense_rows(engine, doc_id) == [("FAILED", 1)]
    finally:
        other.close()
    assert engine.store.reconcile_totals() is None, "a skipped pass records nothing"
    assert reconciler.run_pass().actions["retry"] == 1
    assert engine.verify().ok


def test_the_loop_runs_a_pass_at_once_then_every_interval_and_survives_errors(
    engine: Engine, reconciler: Reconciler
) -> None:
    seen: list[PassReport] = []
    done = threading.Event()

    def on_pass(report: PassReport) -> None:
        seen.append(report)
        done.set()

    loop = ReconcileLoop(reconciler, 3600, on_pass=on_pass)
    loop.start()
    try:
        assert done.wait(60), "the first pass runs at start"
    finally:
        assert loop.stop(60)
    assert loop.counts == {"done": 1, "skipped": 0, "error": 0} and len(seen) == 1

    def broken() -> None:
        raise RuntimeError("index unreachable")

    failing = ReconcileLoop(Reconciler(engine.store, broken, engine.kinds, reconciler.policy), 3600)
    assert failing.tick() is None and failing.counts["error"] == 1
    with pytest.raises(ValidationError, match="interval"):
        ReconcileLoop(reconciler, 0)


@pytest.fixture
def _no_loop_threads() -> Iterator[None]:
    yield
    assert not [t for t in threading.enumerate() if t.name == "ragindex-reconcile"]


def test_loop_threads_end_when_stopped(engine: Engine, reconciler: Reconciler, _no_loop_threads: None) -> None:
    loop = ReconcileLoop(reconciler, 0.05)
    loop.start()
    deadline = time.monotonic() + 60
    while loop.counts["done"] < 3:
        assert time.monotonic() < deadline, loop.counts
        time.sleep(0.02)
    assert loop.stop(60)
