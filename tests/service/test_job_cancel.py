"""Cancellation at the job runner: a job left ``cancelling`` by a process that died is finished at start-up,
and a job cancelled while queued is never started. Real engine (SQLite, nothing indexed), real job thread."""

from __future__ import annotations

from pathlib import Path

from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.service.cancel import request_cancel
from ragindex.service.jobs import JobRunner
from ragindex.service.store import SqlServiceStore
from ragindex.store.records import ChunkLayout
from ragindex.testing.contracts.truth_store import drafts, new_document


def test_a_job_left_cancelling_is_finished_when_the_runner_starts(tmp_path: Path) -> None:
    engine = Engine(Settings(_env_file=None, data_dir=tmp_path))
    store = SqlServiceStore(engine.settings.resolved_database_url)
    try:
        store.create_job("dead", user_id=7, set_id=1, kind="ingest", status="running", files=["/x/a.txt"])
        doc_id, _run, _diff = engine.store.stage_document(
            new_document("/x/a.txt", user_id=7),
            ChunkLayout(drafts("never indexed"), 0, engine.kinds),
            job_id="dead",
            chunking_ms=1.0,
        )
        assert request_cancel(store, "dead", user_id=7).status == "cancelling"
        runner = JobRunner(engine, store)
        later = runner.submit_ingest(user_id=7, set_id=1, files=[tmp_path / "b.txt"])  # on the thread's queue
        assert request_cancel(store, later, user_id=7).status == "cancelled"
        runner.start()
        assert runner.stop(30)

        dead = store.get_job("dead")
        assert dead.status == "cancelled" and dead.report == {
            "cancelled": True,
            "documents": {"finished": 0, "unfinished": 1},
        }
        doc = engine.store.get_document(doc_id)
        assert doc.status == "FAILED" and (doc.error or "").startswith("cancelled by request: its dense")
        assert [r.status for r in engine.store.runs(job_id="dead")] == ["FAILED"]
        skipped = store.get_job(later)
        assert skipped.status == "cancelled" and skipped.started_at is None and skipped.error == "cancelled by request"
        assert engine.store.runs(job_id=later) == []
    finally:
        store.close()
        engine.close()
