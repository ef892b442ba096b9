"""Issue 23: a job whose process keeps dying under it is not run forever.

A real ``ragindex serve`` subprocess is killed with SIGKILL (what a liveness probe does to a frozen process) while
a job parses a slow docx, three times: each new process runs the job again, and the fourth start, with the default
``RAGINDEX_JOB_MAX_STARTS`` of 3, fails it with the reason instead of running it, and serves another tenant's job.
A job still running at a clean shutdown goes back to the queue without its start counted.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from slowdocs import slow_docx

from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.service.cancel import request_cancel
from ragindex.service.jobs import JobRunner
from ragindex.service.keys import create_key
from ragindex.service.store import JobRow, SqlServiceStore
from servekit import COMMAND, free_port
from servekit import _env as serve_env

pytestmark = pytest.mark.integration

DOOMED, BYSTANDER = 2401, 2402
START_S = 240.0


class Serve:
    """``ragindex serve`` over one data dir, started again after each kill."""

    def __init__(self, root: Path, onnx_cache: Path) -> None:
        self.data_dir = root / "data"
        self.root = root
        self.env = serve_env(self.data_dir, onnx_cache)
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log = self.root / f"serve-{self.starts}.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [*COMMAND, "serve", "--port", str(port), "--log-level", "warning"],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + START_S
        while True:
            assert self.proc.poll() is None, f"serve exited {self.proc.returncode}:\n{self.output()}"
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"serve did not answer in {START_S} s:\n{self.output()}"
            time.sleep(0.2)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        assert self.proc.wait(30) == -signal.SIGKILL

    def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc is not None else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(f"serve ignored SIGTERM:\n{self.output()}") from None

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-4000:]


@pytest.fixture
def serve(tmp_path: Path, onnx_cache_dir: Path) -> Iterator[Serve]:
    server = Serve(tmp_path, onnx_cache_dir)
    try:
        yield server
    finally:
        server.stop()


def _job(store: SqlServiceStore, job_id: str) -> JobRow:
    return store.get_job(job_id)


def _wait_running(store: SqlServiceStore, job_id: str, starts: int, serve: Serve) -> None:
    """Until the job runs its ``starts``-th start."""
    deadline = time.monotonic() + 120
    while (job := _job(store, job_id)).status != "running" or job.starts != starts:
        assert serve.proc is not None and serve.proc.poll() is None, serve.output()
        assert time.monotonic() < deadline, f"{job.status} after {job.starts} starts:\n{serve.output()}"
        time.sleep(0.05)


def test_a_job_killed_with_its_process_three_times_is_failed_not_run_again(serve: Serve) -> None:
    serve.start()
    settings = Settings(_env_file=None, data_dir=serve.data_dir)  # type: ignore[call-arg]
    store = SqlServiceStore(settings.resolved_database_url)
    try:
        keys = {user: str(create_key(store, user_id=user)["key"]) for user in (DOOMED, BYSTANDER)}
        with httpx.Client(base_url=serve.url, headers={"Authorization": f"Bearer {keys[DOOMED]}"}) as http:
            response = http.post("/v1/sets/1/documents", files=[("files", ("paragraphs.docx", slow_docx()))])
            assert response.status_code == 202, response.text
        doomed = response.json()["job_id"]
        for start in (1, 2, 3):
            if start > 1:
                serve.start()
            _wait_running(store, doomed, start, serve)
            serve.kill()  # mid-parse: the job stays `running` with no process running it

        serve.start()  # the fourth start: the job has used up its three starts
        job = _job(store, doomed)
        assert (job.status, job.starts) == ("failed", 3), job
        assert job.error is not None and "started 3 times" in job.error and "RAGINDEX_JOB_MAX_STARTS=3" in job.error
        assert job.report is not None and job.report["crash_looped"] is True and job.finished_at is not None

        with httpx.Client(base_url=serve.url, timeout=60.0) as http:
            mine: dict[str, Any] = http.get(
                f"/v1/jobs/{doomed}", headers={"Authorization": f"Bearer {keys[DOOMED]}"}
            ).json()
            assert mine["status"] == "failed" and "RAGINDEX_JOB_MAX_STARTS" in mine["error"]
            other = {"Authorization": f"Bearer {keys[BYSTANDER]}"}
            files = [("files", ("note.txt", b"A bystander's note about tide tables and harbour lights."))]
            job_id = http.post("/v1/sets/1/documents", files=files, headers=other).json()["job_id"]
            deadline = time.monotonic() + 180
            while (body := http.get(f"/v1/jobs/{job_id}", headers=other).json())["status"] in ("queued", "running"):
                assert time.monotonic() < deadline, f"{body}\n{serve.output()}"
                time.sleep(0.1)
            assert body["status"] == "succeeded", body
            hits = http.post("/v1/search", json={"query": "tide tables", "set_id": 1}, headers=other).json()["hits"]
            assert hits and hits[0]["filename"] == "note.txt"
        assert _job(store, doomed).status == "failed", "still failed: it never ran again"
    finally:
        store.close()


def test_a_job_still_running_at_a_clean_shutdown_goes_back_to_the_queue_uncounted(tmp_path: Path) -> None:
    engine = Engine(Settings(_env_file=None, data_dir=tmp_path / "data"))  # type: ignore[call-arg]
    store = SqlServiceStore(engine.settings.resolved_database_url)
    path = tmp_path / "paragraphs.docx"
    path.write_bytes(slow_docx())
    runner = JobRunner(engine, store)
    try:
        runner.start()
        job_id = runner.submit_ingest(user_id=DOOMED, set_id=1, files=[path])
        deadline = time.monotonic() + 60
        while (job := store.get_job(job_id)).status != "running":
            assert time.monotonic() < deadline, job
            time.sleep(0.05)
        assert job.starts == 1 and runner.running == [job_id]
        assert not runner.stop(0.5), "the docx is still being parsed"
        handed_back = store.get_job(job_id)
        assert (handed_back.status, handed_back.starts) == ("queued", 0)
    finally:
        engine.close()  # kills the parse; the job's end cannot overwrite `queued`
        runner.stop(60)
        store.close()
    store = SqlServiceStore(engine.settings.resolved_database_url)
    try:
        assert store.get_job(job_id).status == "queued", "the next start runs it again"
        assert request_cancel(store, job_id, user_id=DOOMED).status == "cancelled"
    finally:
        store.close()
