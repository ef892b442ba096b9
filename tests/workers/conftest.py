"""Real broker (Redis), real MariaDB, real ``ragindex worker`` subprocesses.

Each test run uses its own queue names (``ragindex-test-<hex>-...``) and its own throw-away
MariaDB database; both are removed afterwards. A server that does not answer skips the tests
with the reason; everything else is a failure.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from workerkit import Queues, WebhookReceiver

from dbkit import throwaway_database

REDIS_URL = os.environ.get("RAGINDEX_TEST_REDIS", "redis://127.0.0.1:6379/0")


@pytest.fixture(scope="module")
def redis_url() -> str:
    redis = pytest.importorskip("redis", reason="redis is not installed: pip install 'ragindex[service]'")
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis is not reachable at {REDIS_URL}: {exc}")
    finally:
        client.close()
    return REDIS_URL


@pytest.fixture(scope="module")
def mysql_url() -> Iterator[str]:
    """A fresh MariaDB database, dropped afterwards."""
    with throwaway_database("mysql") as url:
        yield url


@pytest.fixture
def queues(redis_url: str) -> Iterator[Queues]:
    """Unique queue names; afterwards their keys, and the heartbeats of the brokers this test started, are gone."""
    import redis

    client = redis.Redis.from_url(redis_url)
    heartbeats = "dramatiq:__heartbeats__"
    before = set(client.zrange(heartbeats, 0, -1))
    tag = f"ragindex-test-{secrets.token_hex(4)}"
    try:
        yield Queues(tag=tag, ingest=f"{tag}-ingest", results=f"{tag}-results")
    finally:
        for key in client.scan_iter(match=f"dramatiq:*{tag}*"):
            client.delete(key)
        started = set(client.zrange(heartbeats, 0, -1)) - before
        if started:
            client.zrem(heartbeats, *started)
        client.close()


@pytest.fixture
def webhook() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            with receiver.lock:
                receiver.events.append(json.loads(body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
