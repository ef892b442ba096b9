"""Issue 11, items 2 and 7 in the in-process service: per-document events and the reconciler.

A real service (its job thread, its reconciler thread) over SQLite and Qdrant Edge, a real Redis result queue
(``RAGINDEX_EVENTS_URL`` with no ``RAGINDEX_QUEUE_URL``: jobs run in the service) and a loopback webhook started
here. Each upload must give one ``document_result`` per document, then the job's ``parse_result``, to both; a
document the reconciler finishes later gives one more, with ``trigger: reconcile``; ``/metrics`` counts it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from workerkit import Queues, WebhookReceiver

from ragindex.clock import utcnow
from ragindex.config.settings import Settings
from ragindex.pipeline import faults
from ragindex.pipeline.reconcile import ReconcileLoop
from ragindex.service.app import create_app
from ragindex.service.keys import create_key
from ragindex.service.queue import DOCUMENT_ACTOR, RESULT_ACTOR, build_broker
from ragindex.service.settings import ServiceSettings

pytestmark = pytest.mark.integration

SET = 4
FIELDS = {
    "event", "status", "trigger", "job_id", "doc_id", "user_id", "set_id", "source", "filename", "stage", "stages",
    "failed_stage", "recover_from_stage", "error", "unchanged", "run_id", "chunks", "durations_ms", "at",
}  # fmt: skip


def drain(broker: Any, queue: str, want: int, timeout: float = 60.0) -> list[Any]:
    """``want`` messages of ``queue`` (acknowledged), in the order they were sent."""
    consumer = broker.consume(queue, timeout=200)
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < want:
            assert time.monotonic() < deadline, f"{len(got)}/{want} messages after {timeout} s: {got}"
            message = next(consumer)
            if message is not None:
                consumer.ack(message)
                got.append(message)
    finally:
        consumer.close()
    return got


def posted(webhook: WebhookReceiver, want: int, timeout: float = 30.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        with webhook.lock:
            if len(webhook.events) >= want:
                events = list(webhook.events)
                webhook.events.clear()
                return events
        assert time.monotonic() < deadline, f"{len(webhook.events)}/{want} webhook events after {timeout} s"
        time.sleep(0.05)


def upload(client: TestClient, files: dict[str, str]) -> dict[str, Any]:
    parts = [("files", (name, text.encode())) for name, text in files.items()]
    response = client.post(f"/v1/sets/{SET}/documents", files=parts)
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]
    deadline = time.monotonic() + 180
    while True:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()
        if job["status"] in ("succeeded", "failed"):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.1)


@pytest.fixture
def client(tmp_path: Path, queues: Queues, redis_url: str, webhook: WebhookReceiver) -> Iterator[TestClient]:
    settings = Settings(_env_file=None, data_dir=tmp_path / "data", reconcile_interval_seconds=3600)  # type: ignore[call-arg]
    service = ServiceSettings(
        _env_file=None,  # type: ignore[call-arg]
        events_url=redis_url,
        result_queue=queues.results,
        webhook_url=webhook.url,
    )
    app = create_app(settings, service)
    with TestClient(app) as client:
        client.headers["Authorization"] = f"Bearer {create_key(app.state.service.store, user_id=9)['key']}"
        yield client
    faults.disarm_all()


def by_file(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["filename"]: e for e in events if e["event"] == "document_result"}


def test_in_process_service_sends_one_event_per_document_and_the_reconciler_finishes_documents(
    client: TestClient, redis_url: str, queues: Queues, webhook: WebhookReceiver
) -> None:
    state = client.app.state.service  # type: ignore[attr-defined]
    loop = state.extra["reconcile"]
    assert isinstance(loop, ReconcileLoop) and loop.interval == 3600
    broker = build_broker(redis_url)
    try:
        job = upload(client, {"volcano.txt": "Lava is molten rock that erupts from volcanoes.", "bad.json": "{oops"})
        assert job["status"] == "failed"  # one file failed: the job says so, the other document is fine
        messages = drain(broker, queues.results, 3)
        assert [m.actor_name for m in messages] == [DOCUMENT_ACTOR, DOCUMENT_ACTOR, RESULT_ACTOR]
        events = [m.args[0] for m in messages]
        assert posted(webhook, 3) == events, "the webhook gets the same events"
        docs = by_file(events)
        good, bad = docs["volcano.txt"], docs["bad.json"]
        assert set(good) >= FIELDS and set(bad) >= FIELDS
        assert (good["status"], good["trigger"], good["job_id"], good["unchanged"]) == (
            "success",
            "ingest",
            job["job_id"],
            False,
        )
        assert (good["user_id"], good["set_id"], good["error"]) == (9, SET, None)
        assert good["source"].endswith("volcano.txt") and good["stage"] in ("DENSE", "BM25")
        assert good["stages"]["chunking"] == "SUCCESS" and good["stages"]["dense"] == "SUCCESS"
        assert good["chunks"]["total"] == good["chunks"]["indexed"] >= 1 and good["chunks"]["failed"] == 0
        assert good["durations_ms"]["total"] is not None and good["durations_ms"]["total"] > 0
        assert (bad["status"], bad["stage"], bad["failed_stage"]) == ("failed", "LOADING", "LOADING")
        assert bad["run_id"] is not None  # a load failure is recorded as a FAILED run of the document
        assert "bad.json" in bad["source"] and bad["error"] and bad["chunks"]["total"] == 0
        assert events[-1]["event"] == "parse_result" and events[-1]["job_id"] == job["job_id"]

        # the same file again: unchanged, still announced (its last run), nothing redone
        again = upload(client, {"volcano.txt": "Lava is molten rock that erupts from volcanoes."})
        (doc, _job) = [m.args[0] for m in drain(broker, queues.results, 2)]
        assert (doc["filename"], doc["status"], doc["unchanged"], doc["job_id"]) == (
            "volcano.txt",
            "success",
            True,
            again["job_id"],
        )
        assert doc["run_id"] == good["run_id"]
        posted(webhook, 2)

        # a document whose chunks fail to embed: failed at DENSE, then finished by a reconciler pass
        faults.arm("dense.after_encode")
        upload(client, {"geysers.txt": "Geysers erupt when groundwater boils beneath a narrow vent."})
        faults.disarm_all()
        (failed, _job) = [m.args[0] for m in drain(broker, queues.results, 2)]
        assert (failed["status"], failed["stage"], failed["failed_stage"]) == ("failed", "DENSE", "DENSE")
        assert failed["chunks"]["failed"] >= 1 and "injected fault" in failed["error"]
        posted(webhook, 2)

        deadline = time.monotonic() + 60
        while loop.counts["done"] < 1:  # the pass every process runs at start
            assert time.monotonic() < deadline, loop.counts
            time.sleep(0.05)
        loop.reconciler.clock = lambda: utcnow() + timedelta(seconds=31)  # past the first backoff, without waiting
        report = loop.tick()
        assert report is not None and report.held, loop.counts
        assert report.actions["retry"] == failed["chunks"]["failed"] and report.finished == [failed["doc_id"]]
        (finished,) = [m.args[0] for m in drain(broker, queues.results, 1)]
        assert (finished["event"], finished["trigger"], finished["status"]) == (
            "document_result",
            "reconcile",
            "success",
        )
        assert (finished["doc_id"], finished["job_id"], finished["error"]) == (failed["doc_id"], None, None)
        assert finished["chunks"]["indexed"] == finished["chunks"]["total"] and finished["chunks"]["failed"] == 0
        assert posted(webhook, 1) == [finished]

        admin = create_key(state.store, user_id=99, admin=True)["key"]  # /metrics needs an admin key
        metrics = client.get("/metrics", headers={"Authorization": f"Bearer {admin}"}).text
        assert f'ragindex_reconcile_actions_total{{action="retry"}} {float(report.actions["retry"])}' in metrics
        assert 'ragindex_reconcile_actions_total{action="finish"} 1.0' in metrics
        assert "ragindex_reconcile_passes_total 2.0" in metrics
        assert 'ragindex_reconcile_process_passes_total{outcome="done"} 2.0' in metrics
        assert "ragindex_reconcile_last_pass_timestamp_seconds" in metrics
    finally:
        broker.close()
