"""A real ``ragindex serve`` in a subprocess on a free loopback port, shared by the client and integration tests.

The server runs this checkout's ``ragindex`` on the embedded default (SQLite, Qdrant Edge, the shipped MiniLM model)
over a temp data dir. It starts once per test process, whichever test directory asks first, and stops when the
last fixture using it is torn down. Keys are created in the server's truth store directly (what ``ragindex keys
create`` does); tenants of different modules use different user ids.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

import ragindex
from corpora import THREE_DOCS

SRC = str(Path(ragindex.__file__).parents[1])
COMMAND = [sys.executable, "-c", "from ragindex.cli import main; main()"]
START_S = 240.0

# tenant 1 has THREE_DOCS in set 1, uploaded through the API when the server starts
CORPUS_USER = 1
CORPUS_SET = 1


def free_port() -> int:
    """A TCP port nothing listens on right now (bound, read, released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    """A running ``ragindex serve`` and helpers to reach it."""

    url: str
    data_dir: Path
    proc: subprocess.Popen[bytes]
    log: Path
    users: int = 0
    keys: dict[tuple[int, bool], str] = field(default_factory=dict)

    def key(self, user_id: int, *, admin: bool = False) -> str:
        """A valid key of ``user_id`` (one per tenant and role, created on first use)."""
        if (user_id, admin) not in self.keys:
            self.keys[user_id, admin] = self.new_key(user_id, admin=admin)
        return self.keys[user_id, admin]

    def new_key(self, user_id: int, *, admin: bool = False) -> str:
        """A fresh key, created in the server's store."""
        from ragindex.config.settings import Settings
        from ragindex.service.keys import create_key
        from ragindex.service.store import SqlServiceStore

        settings = Settings(_env_file=None, data_dir=self.data_dir)  # type: ignore[call-arg]
        store = SqlServiceStore(settings.resolved_database_url)
        try:
            return str(create_key(store, user_id=user_id, admin=admin)["key"])
        finally:
            store.close()

    def output(self) -> str:
        """What the server printed so far."""
        return self.log.read_text(encoding="utf-8", errors="replace")


def ready_checks() -> dict[str, str]:
    """The checks a ready ``ragindex serve`` with the default settings reports on this machine (``/readyz``)."""
    from ragindex.service.settings import ServiceSettings

    checks = {"store": "ok", "index": "ok", "dense": "ok"}
    if ServiceSettings(_env_file=None).search_process_count:  # search processes: the default on 2+ cores
        checks["search_processes"] = "ok"
    return checks


def _env(data_dir: Path, onnx_cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGINDEX_")}
    env.update(
        PYTHONPATH=SRC,
        OPENBLAS_NUM_THREADS="1",
        RAGINDEX_DATA_DIR=str(data_dir),
        RAGINDEX_ONNX_CACHE_DIR=str(onnx_cache),
        RAGINDEX_CHUNK_SIZE="200",
        RAGINDEX_CHUNK_OVERLAP="20",
    )
    return env


def _start(root: Path, onnx_cache: Path) -> Served:
    data_dir = root / "data"
    log = root / "serve.log"
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*COMMAND, "serve", "--port", str(port), "--log-level", "warning"],
            env=_env(data_dir, onnx_cache),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    served = Served(url=f"http://127.0.0.1:{port}", data_dir=data_dir, proc=proc, log=log)
    deadline = time.monotonic() + START_S
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"ragindex serve exited {proc.returncode}:\n{served.output()}")
        try:
            if httpx.get(f"{served.url}/healthz", timeout=2.0).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            _stop(served)
            raise RuntimeError(f"ragindex serve did not answer within {START_S} s:\n{served.output()}")
        time.sleep(0.2)
    _ingest_corpus(served)
    while httpx.get(f"{served.url}/readyz", timeout=10.0).status_code != 200:  # the search processes' models too
        if time.monotonic() > deadline + START_S:
            _stop(served)
            raise RuntimeError(f"ragindex serve was not ready within {2 * START_S} s:\n{served.output()}")
        time.sleep(0.2)
    return served


def _ingest_corpus(served: Served) -> None:
    headers = {"Authorization": f"Bearer {served.key(CORPUS_USER)}"}
    with httpx.Client(base_url=served.url, headers=headers, timeout=120.0) as http:
        files = [("files", (name, text.encode())) for name, text in THREE_DOCS.items()]
        job_id = http.post(f"/v1/sets/{CORPUS_SET}/documents", files=files).raise_for_status().json()["job_id"]
        deadline = time.monotonic() + START_S
        while (job := http.get(f"/v1/jobs/{job_id}").raise_for_status().json())["status"] in ("queued", "running"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the corpus job is still {job['status']}:\n{served.output()}")
            time.sleep(0.2)
        if job["status"] != "succeeded":
            raise RuntimeError(f"the corpus job {job['status']}: {job}")


def _stop(served: Served) -> None:
    if served.proc.poll() is None:
        served.proc.send_signal(signal.SIGTERM)
        try:
            served.proc.wait(60)
        except subprocess.TimeoutExpired:
            served.proc.kill()
            served.proc.wait(10)


_running: list[Served] = []


def acquire(tmp_path_factory: pytest.TempPathFactory, onnx_cache: Path) -> Served:
    """The process's server, started on first use; pair every call with :func:`release`."""
    if not _running:
        _running.append(_start(tmp_path_factory.mktemp("served"), onnx_cache))
    served = _running[0]
    served.users += 1
    return served


def release(served: Served) -> None:
    """Stop the server once its last user is done."""
    served.users -= 1
    if served.users == 0:
        _stop(served)
        _running.clear()
