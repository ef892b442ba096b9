"""Issue 5, part 3: ingest jobs through a real broker to a ``ragindex worker`` subprocess.

The test process plays the service: it records job rows in a throw-away MariaDB database and
enqueues them on Redis (Dramatiq). One worker subprocess, with its own engine over the same
database and a qdrant-client local path (which only one process may open), runs them and
publishes ``parse_result`` events on the result queue and to a loopback webhook. After the
worker stops, the test opens an engine on the same store and path and searches.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from workerkit import Queues, WebhookReceiver, WorkerProcess, worker_env

from ragindex.config.settings import Settings
from ragindex.service.queue import (
    DOCUMENT_ACTOR,
    RESULT_ACTOR,
    IngestQueue,
    build_broker,
    ingest_message,
    submit_ingest,
)

pytestmark = [pytest.mark.integration, pytest.mark.mysql]

USER, SET = 41, 3
DOCS = {
    "volcanoes.txt": "A volcano is an opening in the crust where molten rock, ash and gases escape. "
    "Pyroclastic flows and lahars are the deadliest volcanic hazards.",
    "espresso.txt": "Espresso is brewed by forcing hot water at about nine bars of pressure through finely "
    "ground coffee. Crema is the golden foam on top of the shot.",
}


def collect_events(
    broker: Any, queue: str, want: int, worker: WorkerProcess, timeout: float = 75.0
) -> tuple[list[Any], list[dict[str, Any]]]:
    """Consume result messages until ``want`` job events (acknowledging all), failing early if the worker died.

    Returns the job messages and the ``document_result`` events sent before them (a job's come first).
    """
    consumer = broker.consume(queue, timeout=500)
    messages: list[Any] = []
    documents: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(messages) < want:
            message = next(consumer)
            if message is not None:
                consumer.ack(message)
                if message.actor_name == DOCUMENT_ACTOR:
                    documents.append(message.args[0])
                else:
                    messages.append(message)
                continue
            assert worker.alive(), f"the worker exited:\n{worker.output()}"
            assert time.monotonic() < deadline, f"{len(messages)}/{want} events after {timeout} s:\n{worker.output()}"
    finally:
        consumer.close()
    return messages, documents


def without_time(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(({k: v for k, v in e.items() if k != "at"} for e in events), key=lambda e: e["doc_id"])


@pytest.fixture
def blobs(tmp_path: Path) -> Path:
    folder = tmp_path / "blobs" / str(USER) / str(SET)
    folder.mkdir(parents=True)
    for name, body in DOCS.items():
        (folder / name).write_text(body, encoding="utf-8")
    return folder


@pytest.fixture
def settings(tmp_path: Path, mysql_url: str) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path / "data",
        database_url=mysql_url,
        index_backend="qdrant",
        qdrant_path=tmp_path / "qdrant",
        chunk_size=120,
        chunk_overlap=10,
    )


@pytest.fixture
def store(settings: Settings) -> Iterator[Any]:
    from ragindex.service.store import SqlServiceStore

    store = SqlServiceStore(settings.resolved_database_url)
    yield store
    store.close()


def _env(settings: Settings, redis_url: str, queues: Queues, **extra: str) -> dict[str, str]:
    """The worker's environment: the test's store, index path, chunking and queues."""
    return worker_env(
        RAGINDEX_DATA_DIR=str(settings.data_dir),
        RAGINDEX_DATABASE_URL=str(settings.database_url),
        RAGINDEX_INDEX_BACKEND="qdrant",
        RAGINDEX_QDRANT_PATH=str(settings.qdrant_path),
        RAGINDEX_CHUNK_SIZE="120",
        RAGINDEX_CHUNK_OVERLAP="10",
        RAGINDEX_QUEUE_URL=redis_url,
        RAGINDEX_RESULT_QUEUE=queues.results,
        **extra,
    )


def test_worker_runs_jobs_publishes_results_and_ignores_redelivery(
    tmp_path: Path,
    settings: Settings,
    store: Any,
    blobs: Path,
    queues: Queues,
    redis_url: str,
    webhook: WebhookReceiver,
) -> None:
    broker = build_broker(redis_url)
    queue = IngestQueue(broker, queues.ingest)
    ok_job, missing_job = uuid.uuid4().hex, uuid.uuid4().hex
    files = sorted(str(p) for p in blobs.iterdir())
    submit_ingest(store, queue, job_id=ok_job, user_id=USER, set_id=SET, paths=files)
    # a parse task from another system: a bare message, no job row yet (the worker records it)
    gone = [str(blobs / "gone.txt")]
    broker.enqueue(ingest_message(queues.ingest, job_id=missing_job, user_id=USER, set_id=SET, paths=gone))
    assert store.get_job(ok_job).status == "queued"

    env = _env(settings, redis_url, queues, RAGINDEX_WEBHOOK_URL=webhook.url, RAGINDEX_WEBHOOK_ATTEMPTS="2")
    worker = WorkerProcess(env, tmp_path / "worker.log", "--queue", queues.ingest)
    try:
        messages, documents = collect_events(broker, queues.results, 2, worker)
        events = {m.args[0]["job_id"]: m.args[0] for m in messages}
        assert {m.actor_name for m in messages} == {RESULT_ACTOR}
        # one document_result per document, before its job's parse_result; the missing file's job has none
        assert sorted(d["filename"] for d in documents) == sorted(DOCS)
        for doc in documents:
            assert (doc["event"], doc["status"], doc["trigger"], doc["job_id"]) == (
                "document_result",
                "success",
                "ingest",
                ok_job,
            )
            assert (doc["user_id"], doc["set_id"], doc["unchanged"], doc["error"]) == (USER, SET, False, None)
            assert doc["chunks"]["total"] == doc["chunks"]["indexed"] > 0 and doc["stages"]["dense"] == "SUCCESS"

        ok = events[ok_job]
        assert ok["event"] == "parse_result" and ok["status"] == "success", ok
        assert (ok["user_id"], ok["set_id"]) == (USER, SET)
        assert ok["documents"]["added"] == 2
        assert ok["chunks"]["total"] == ok["chunks"]["embedded"] > 0 and ok["chunks"]["failed"] == 0
        assert "error" not in ok

        failed = events[missing_job]
        assert failed["status"] == "failed" and "gone.txt" in failed["error"], failed

        row = store.get_job(ok_job)
        assert row.status == "succeeded" and row.error is None
        assert row.report is not None and row.report["documents"]["added"] == 2
        assert row.started_at is not None and row.finished_at is not None
        bad_row = store.get_job(missing_job)
        assert bad_row.status == "failed" and "does not exist" in (bad_row.error or "")

        # redelivery of a finished job: acknowledged, not run again, the same outcome announced again
        broker.enqueue(ingest_message(queues.ingest, job_id=ok_job, user_id=USER, set_id=SET, paths=files))
        (again,), documents_again = collect_events(broker, queues.results, 1, worker)
        assert again.args[0] == ok
        assert without_time(documents_again) == without_time(documents), "its documents are announced again too"
        assert store.get_job(ok_job) == row  # same report, same finish time: nothing was counted twice

        # a job left `running` by a worker that died mid-job is run again: same content, nothing added twice
        crashed = uuid.uuid4().hex
        store.create_job(crashed, user_id=USER, set_id=SET, kind="ingest", status="running", files=files)
        queue.enqueue(crashed, USER, SET, files)
        (rerun,), documents_rerun = collect_events(broker, queues.results, 1, worker)
        rerun_event = rerun.args[0]
        assert [(d["unchanged"], d["status"], d["job_id"]) for d in documents_rerun] == [(True, "success", crashed)] * 2
        assert rerun_event["job_id"] == crashed and rerun_event["status"] == "success", rerun_event
        assert rerun_event["documents"]["unchanged"] == 2 and rerun_event["documents"]["added"] == 0
        assert rerun_event["chunks"].get("embedded", 0) == 0

        # the webhook got the same events (POSTed right after each result message)
        deadline = time.monotonic() + 10
        while len(webhook.events) < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        jobs_posted = [e for e in webhook.events if e["event"] == "parse_result"]
        assert sorted(jobs_posted, key=lambda e: (e["job_id"], e["status"])) == sorted(
            [ok, failed, ok, rerun_event], key=lambda e: (e["job_id"], e["status"])
        )
        documents_posted = [e for e in webhook.events if e["event"] == "document_result"]
        assert without_time(documents_posted) == without_time(documents + documents_again + documents_rerun)
    finally:
        code = worker.stop()
        queue.close()
    assert code == 0, worker.output()

    # the worker released the qdrant path: this process can open the same index and search it
    from ragindex.engine import Engine

    engine = Engine(settings)
    try:
        hits = engine.search("molten rock and ash", user_id=USER, set_id=SET, top_k=3).hits
        assert hits and hits[0].filename == "volcanoes.txt"
        hits = engine.search("coffee crema", user_id=USER, set_id=SET, top_k=3).hits
        assert hits and hits[0].filename == "espresso.txt"
        assert engine.verify().ok
        docs = engine.store.list_documents(user_id=USER, set_id=SET)
        assert sorted(d.filename for d in docs) == sorted(DOCS)  # two documents, not four
        assert sum(d.chunk_count for d in docs) == ok["chunks"]["total"]
        totals = engine.store.reconcile_totals()
        assert totals is not None and totals.passes >= 1, "the worker ran its reconciler (a pass at start)"
    finally:
        engine.close()


def test_a_worker_skips_a_cancelled_queued_job_and_stops_a_cancelled_running_one(
    tmp_path: Path, settings: Settings, store: Any, queues: Queues, redis_url: str
) -> None:
    """A cancel reaches a job through its row: the worker acknowledges the queued one without running it and
    stops the running one at its next batch boundary, holding no claim; both announce their cancellation."""
    from ragindex.service.cancel import request_cancel
    from ragindex.store.sql import SqlTruthStore

    user = USER + 1
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(40):
        paragraphs = (f"Worker note {i}.{p} on {sorted(DOCS)[p % 2]} and the number {i * 7 + p}." for p in range(12))
        (folder / f"w{i:02d}.txt").write_text("\n\n".join(paragraphs), encoding="utf-8")
    (folder / "later.txt").write_text("Queued behind the big job and cancelled before it runs.", encoding="utf-8")
    broker = build_broker(redis_url)
    queue = IngestQueue(broker, queues.ingest)
    big, small = uuid.uuid4().hex, uuid.uuid4().hex
    paths = sorted(str(p) for p in folder.glob("w*.txt"))
    submit_ingest(store, queue, job_id=big, user_id=user, set_id=SET, paths=paths)
    submit_ingest(store, queue, job_id=small, user_id=user, set_id=SET, paths=[str(folder / "later.txt")])
    assert request_cancel(store, small, user_id=user).status == "cancelled"

    truth = SqlTruthStore(settings.resolved_database_url)
    worker = WorkerProcess(_env(settings, redis_url, queues), tmp_path / "worker.log", "--queue", queues.ingest)
    try:

        def dense_done() -> int:
            sets = [s for s in truth.status_counts()["sets"] if s["user_id"] == user]
            return sets[0]["chunks"]["dense"].get("SUCCESS", 0) if sets else 0

        deadline = time.monotonic() + 120
        while dense_done() == 0:
            assert worker.alive() and time.monotonic() < deadline, worker.output()
            time.sleep(0.1)
        assert request_cancel(store, big, user_id=user).status == "cancelling"
        messages, _documents = collect_events(broker, queues.results, 2, worker)
        events = {m.args[0]["job_id"]: m.args[0] for m in messages}

        assert store.get_job(small).started_at is None
        assert events[small]["status"] == "failed" and events[small]["error"] == "cancelled by request"
        job = store.get_job(big)
        assert job.status == "cancelled" and (job.error or "").startswith("cancelled by request"), job
        assert events[big]["status"] == "failed" and events[big]["error"] == job.error
        (mine,) = [s for s in truth.status_counts()["sets"] if s["user_id"] == user]
        assert "INDEXING" not in mine["chunks"]["dense"] and "INDEXING" not in mine["chunks"]["bm25"]
        assert 0 < mine["chunks"]["dense"].get("SUCCESS", 0) < sum(mine["chunks"]["dense"].values())
        assert all(r.status != "PROCESSING" for r in truth.runs(job_id=big))
        assert "later.txt" not in {d.filename for d in truth.list_documents(user_id=user)}
    finally:
        code = worker.stop()
        queue.close()
        truth.close()
    assert code == 0, worker.output()


def test_a_job_whose_workers_died_under_it_max_starts_times_is_failed_not_run_again(
    tmp_path: Path, blobs: Path, settings: Settings, store: Any, queues: Queues, redis_url: str
) -> None:
    """The broker redelivers the job of a dead worker without counting a retry; the job row counts its starts.

    Two jobs were started by workers that died (each start recorded as a worker records it): the one with two
    starts runs a third time, the one with the default RAGINDEX_JOB_MAX_STARTS (3) is failed and announced.
    """
    user = USER + 2
    broker = build_broker(redis_url)
    queue = IngestQueue(broker, queues.ingest)
    files = sorted(str(p) for p in blobs.iterdir())
    doomed, survivor = uuid.uuid4().hex, uuid.uuid4().hex
    for job_id, deaths in ((doomed, 3), (survivor, 2)):
        store.create_job(job_id, user_id=user, set_id=SET, kind="ingest", status="queued", files=files)
        for _ in range(deaths):  # a worker took it (running, one more start) and died: the broker redelivers it
            assert store.set_job_status(job_id, "running", started=True)
    worker = WorkerProcess(_env(settings, redis_url, queues), tmp_path / "worker.log", "--queue", queues.ingest)
    try:
        queue.enqueue(doomed, user, SET, files)
        queue.enqueue(survivor, user, SET, files)
        messages, _documents = collect_events(broker, queues.results, 2, worker)
        events = {m.args[0]["job_id"]: m.args[0] for m in messages}
        assert events[doomed]["status"] == "failed", events[doomed]
        assert "started 3 times" in events[doomed]["error"] and "RAGINDEX_JOB_MAX_STARTS=3" in events[doomed]["error"]
        job = store.get_job(doomed)
        assert (job.status, job.starts, job.error) == ("failed", 3, events[doomed]["error"])
        assert events[survivor]["status"] == "success", events[survivor]
        assert store.get_job(survivor).starts == 3
    finally:
        code = worker.stop()
        queue.close()
    assert code == 0, worker.output()
