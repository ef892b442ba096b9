"""``ragindex serve`` loads torch with its first ingest job, not at start (issue 27).

The service encodes queries with ONNX Runtime; only embedding documents needs torch. Its job and reconciler threads
imported torch at start to limit their torch threads, which held the GIL for seconds after ``/readyz`` said ready:
the first searches under load waited 300-450 ms (docs/service.md, "Pauses and hand-offs"), and a deployment that
never ingests held torch for nothing. A real ``ragindex serve`` with the default settings; whether a process has
torch loaded is read from its memory maps (``libtorch_cpu``).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx
import pytest

import servekit
from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.testing.processes import descendants
from servekit import COMMAND, CORPUS_SET, CORPUS_USER, Served, free_port

pytestmark = pytest.mark.integration


def _torch_loaded(pid: int) -> bool:
    return "libtorch_cpu" in Path(f"/proc/{pid}/maps").read_text()


def _exported(tmp_path: Path) -> None:
    """The light query encoder in the session's ONNX cache (exporting it is torch's job, once per cache)."""
    with Engine(Settings(data_dir=tmp_path / "export")) as engine:  # the test env's RAGINDEX_ONNX_CACHE_DIR
        engine.dense.encode_queries(["warm up"])


def test_torch_loads_with_the_first_ingest_job(tmp_path: Path, onnx_cache_dir: Path) -> None:
    _exported(tmp_path)
    port, log = free_port(), tmp_path / "serve.log"
    env = servekit._env(tmp_path / "data", onnx_cache_dir)
    with log.open("wb") as out:
        proc = subprocess.Popen([*COMMAND, "serve", "--port", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT)
    served = Served(url=f"http://127.0.0.1:{port}", data_dir=tmp_path / "data", proc=proc, log=log)
    try:
        deadline = time.monotonic() + servekit.START_S
        while True:
            assert proc.poll() is None, served.output()
            try:
                if httpx.get(f"{served.url}/readyz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, served.output()
            time.sleep(0.2)
        headers = {"Authorization": f"Bearer {served.key(CORPUS_USER)}"}
        with httpx.Client(base_url=served.url, headers=headers, timeout=60) as http:
            for _ in range(5):  # searches, a reconciler pass, the job threads idle: no torch
                assert http.post("/v1/search", json={"query": "tides", "set_id": CORPUS_SET}).status_code == 200
                time.sleep(0.5)
        service = [proc.pid, *descendants(proc.pid)]
        loaded = [(pid, Path(f"/proc/{pid}/cmdline").read_text()) for pid in service if _torch_loaded(pid)]
        assert not loaded, loaded
        servekit._ingest_corpus(served)  # an upload: its job embeds the documents
        assert _torch_loaded(proc.pid)
    finally:
        servekit._stop(served)
