"""With RAGINDEX_QUEUE_URL set the service enqueues uploads on the broker and runs no job itself.

Also: the same ingest message travels through RabbitMQ, and the webhook's bounded retries.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from workerkit import Queues

from ragindex.config.settings import Settings
from ragindex.service.app import create_app
from ragindex.service.events import Webhook
from ragindex.service.keys import create_key
from ragindex.service.queue import INGEST_ACTOR, IngestQueue, build_broker
from ragindex.service.settings import ServiceSettings

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/"


def take(broker: Any, queue: str, timeout: float = 10.0) -> Any:
    """One message of ``queue`` (acknowledged)."""
    consumer = broker.consume(queue, timeout=200)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            message = next(consumer)
            if message is not None:
                consumer.ack(message)
                return message
    finally:
        consumer.close()
    raise AssertionError(f"no message on {queue} after {timeout} s")


def test_upload_is_enqueued_not_run(tmp_path: Path, queues: Queues, redis_url: str) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]
    service = ServiceSettings(
        _env_file=None,  # type: ignore[call-arg]
        warm_up=False,
        blob_dir=tmp_path / "shared-blobs",
        queue_url=redis_url,
        queue_name=queues.ingest,
    )
    app = create_app(settings, service)
    with TestClient(app) as client:
        state = app.state.service
        key = create_key(state.store, user_id=5)["key"]
        client.headers["Authorization"] = f"Bearer {key}"
        response = client.post("/v1/sets/2/documents", files=[("files", ("notes.txt", b"tides and the moon"))])
        assert response.status_code == 202, response.text
        job_id = response.json()["job_id"]

        broker = build_broker(redis_url)
        try:
            message = take(broker, queues.ingest)
        finally:
            broker.close()
        assert message.actor_name == INGEST_ACTOR
        blob = tmp_path / "shared-blobs" / "5" / "2" / "notes.txt"
        assert message.kwargs == {"job_id": job_id, "user_id": 5, "set_id": 2, "paths": [str(blob.resolve())]}
        assert blob.read_bytes() == b"tides and the moon"

        time.sleep(0.3)  # nothing in this process picks the job up
        job = client.get(f"/v1/jobs/{job_id}").json()
        assert job["status"] == "queued", job
        assert state.jobs.current is None and isinstance(state.extra["queue"], IngestQueue)


def test_broker_down_fails_the_upload_and_its_job(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]
    service = ServiceSettings(
        _env_file=None,  # type: ignore[call-arg]
        warm_up=False,
        queue_url="redis://127.0.0.1:1/0",  # nothing listens there
    )
    app = create_app(settings, service)
    with TestClient(app, raise_server_exceptions=False) as client:
        store = app.state.service.store
        client.headers["Authorization"] = f"Bearer {create_key(store, user_id=5)['key']}"
        response = client.post("/v1/sets/2/documents", files=[("files", ("notes.txt", b"tides"))])
        assert response.status_code >= 500
        (job,) = store.jobs_with_status(["queued", "running", "succeeded", "failed"])
        assert job.status == "failed" and "could not enqueue" in (job.error or "")


@pytest.fixture
def amqp_queue() -> Iterator[str]:
    pika = pytest.importorskip("pika")
    try:
        connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL + "?socket_timeout=3"))
    except pika.exceptions.AMQPError as exc:
        pytest.skip(f"RabbitMQ is not reachable at {AMQP_URL}: {exc}")
    name = f"ragindex-test-{secrets.token_hex(4)}-ingest"
    try:
        yield name
    finally:
        channel = connection.channel()
        for queue in (name, f"{name}.DQ", f"{name}.XQ"):
            channel.queue_delete(queue)
        connection.close()


def test_rabbitmq_carries_the_same_ingest_message(amqp_queue: str) -> None:
    queue = IngestQueue(build_broker(AMQP_URL), amqp_queue)
    try:
        queue.enqueue("job-1", 3, 4, [Path("/shared/blobs/3/4/a.txt")])
        message = take(queue.broker, amqp_queue)
    finally:
        queue.close()
    assert message.actor_name == INGEST_ACTOR
    assert message.kwargs == {"job_id": "job-1", "user_id": 3, "set_id": 4, "paths": ["/shared/blobs/3/4/a.txt"]}


class FlakyReceiver:
    """Answers the first ``failures`` POSTs with ``status``, then 204; records every body."""

    def __init__(self, failures: int, status: int) -> None:
        self.bodies: list[dict[str, Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                receiver.bodies.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
                self.send_response(status if len(receiver.bodies) <= failures else 204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize(
    ("failures", "status", "delivered", "posts"),
    [(1, 503, True, 2), (5, 500, False, 3), (5, 400, False, 1)],
)
def test_webhook_retries_are_bounded(failures: int, status: int, delivered: bool, posts: int) -> None:
    receiver = FlakyReceiver(failures, status)
    hook = Webhook(receiver.url, timeout=2, attempts=3, backoff=0.01)
    try:
        event = {"event": "parse_result", "status": "success", "job_id": "j"}
        assert hook.send(event) is delivered
        assert receiver.bodies == [event] * posts
    finally:
        hook.close()
        receiver.close()


def test_webhook_gives_up_on_an_unreachable_receiver() -> None:
    hook = Webhook("http://127.0.0.1:1/", timeout=1, attempts=2, backoff=0.01)
    try:
        assert hook.send({"job_id": "j"}) is False
    finally:
        hook.close()
