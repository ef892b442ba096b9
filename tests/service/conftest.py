"""One real service per session: uvicorn on a free loopback port in a thread, over a temp data dir.

Tenants of different test modules use different user ids, so the modules can share the server
(the model loads once per process).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from ragindex.config.settings import Settings
from ragindex.service.app import create_app
from ragindex.service.deps import ServiceState
from ragindex.service.keys import create_key
from ragindex.service.settings import ServiceSettings

MAX_FILE_BYTES = 150_000
MAX_UPLOAD_BYTES = 1_000_000


class ServerThread:
    """uvicorn serving ``app`` on 127.0.0.1 in a thread; ``stop()`` runs the lifespan shutdown."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 180.0) -> None:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.sock.close()
                raise RuntimeError("the service did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(120)
        self.sock.close()


@dataclass
class Service:
    """The running service and helpers to reach it."""

    url: str
    state: ServiceState
    data_dir: Path

    def key(self, user_id: int, *, admin: bool = False) -> str:
        return str(create_key(self.state.store, user_id=user_id, admin=admin)["key"])

    def client(self, key: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120.0)


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    data_dir = tmp_path_factory.mktemp("service-data")
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=data_dir,
        chunk_size=200,
        chunk_overlap=20,
        max_file_bytes=MAX_FILE_BYTES,
    )
    app = create_app(settings, ServiceSettings(_env_file=None, max_upload_bytes=MAX_UPLOAD_BYTES))  # type: ignore[call-arg]
    server = ServerThread(app)
    server.start()
    try:
        yield Service(url=server.url, state=app.state.service, data_dir=data_dir)
    finally:
        server.stop()


def wait_for_job(client: httpx.Client, job_id: str, timeout: float = 120.0) -> dict[str, Any]:
    """Poll a job until it is succeeded or failed."""
    deadline = time.monotonic() + timeout
    while True:
        body: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").raise_for_status().json()
        if body["status"] in ("succeeded", "failed"):
            return body
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still {body['status']} after {timeout} s")
        time.sleep(0.1)


def upload(client: httpx.Client, set_id: int, files: dict[str, str | bytes]) -> httpx.Response:
    """POST files (name -> content) to a set."""
    parts = [
        ("files", (name, content.encode() if isinstance(content, str) else content)) for name, content in files.items()
    ]
    return client.post(f"/v1/sets/{set_id}/documents", files=parts)


@pytest.fixture
def ingest(service: Service) -> Callable[[httpx.Client, int, dict[str, str | bytes]], dict[str, Any]]:
    """Upload and wait for the job to succeed."""

    def run(client: httpx.Client, set_id: int, files: dict[str, str | bytes]) -> dict[str, Any]:
        response = upload(client, set_id, files)
        assert response.status_code == 202, response.text
        job = wait_for_job(client, response.json()["job_id"])
        assert job["status"] == "succeeded", job
        return job

    return run
