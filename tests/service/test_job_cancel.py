"""Cancellation at the job runner: a job left ``cancelling`` by a process that died is finished at start-up,
and a job cancelled while queued is never started (real engine, SQLite, nothing indexed, real job threads); on the
real service, a job cancelled while its file is being parsed stops inside that file."""

from __future__ import annotations

import inspect
import time
from pathlib import Path

import pytest
from slowdocs import slow_docx

from conftest import Service, upload, wait_for_job
from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.loaders.isolated import IsolatedParser
from ragindex.service.cancel import request_cancel
from ragindex.service.jobs import JobRunner
from ragindex.service.store import SqlServiceStore
from ragindex.store.records import ChunkLayout
from ragindex.testing.contracts.truth_store import drafts, new_document

PARSING_CANCELLER = 2501


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


@pytest.mark.integration
@pytest.mark.skipif(
    "poll" not in inspect.signature(IsolatedParser.load).parameters,
    reason="needs the ingest's `parsing` progress while a file is parsed (IsolatedParser.load(poll=))",
)
def test_cancel_stops_a_job_inside_the_file_it_is_parsing(service: Service) -> None:
    """A 150,000-paragraph docx takes its parser about two minutes; cancelled mid-parse, the job is ``cancelled``
    within about a second: the parse child is killed, nothing of the file is recorded (not even as failed), and the
    tenant's next job parses with a fresh child."""
    with service.client(service.key(PARSING_CANCELLER)) as client:
        job_id = upload(client, 1, {"paragraphs.docx": slow_docx()}).json()["job_id"]
        deadline = time.monotonic() + 60
        while ((job := client.get(f"/v1/jobs/{job_id}").json())["progress"] or {}).get("parsing") != "paragraphs.docx":
            assert job["status"] in ("queued", "running") and time.monotonic() < deadline, job
            time.sleep(0.05)
        time.sleep(1.0)  # well inside the parse

        asked = time.monotonic()
        assert client.delete(f"/v1/jobs/{job_id}").json()["status"] == "cancelling"
        while (job := client.get(f"/v1/jobs/{job_id}").json())["status"] == "cancelling":
            assert time.monotonic() - asked < 30, "still cancelling: the cancel waited for the parse to end"
            time.sleep(0.05)
        took = time.monotonic() - asked
        assert job["status"] == "cancelled", job
        assert took < 10, f"cancelled after {took:.1f} s: at the end of the file, not inside it"
        assert job["report"] == {"cancelled": True, "documents": {"finished": 0, "unfinished": 0}}
        assert job["error"] == "cancelled by request" and job["runs"] == []
        documents = client.get("/v1/documents").json()["documents"]
        assert documents == [], "the file it was parsing is not recorded, not even as failed"

        later = upload(client, 1, {"after.txt": "Written after the cancelled docx, about a brass compass."})
        assert wait_for_job(client, later.json()["job_id"])["status"] == "succeeded"
        assert [d["filename"] for d in client.get("/v1/documents").json()["documents"]] == ["after.txt"]
