"""Issue 23: ``ragindex encoder-server`` says when it is ready, and its first request after that is not a model load.

It answered ``/healthz`` at once, but its first ``/v1/embeddings`` took ~6 s: the torch model loaded on first use
(the start-up had only loaded the ONNX query encoder, which no route uses). A client with a 3 s timeout that waited
for health failed its first batch. Now the models load and encode once at start-up on the encoding thread:
``/healthz`` is liveness (at once), ``/readyz`` readiness (503 "loading", then 200), and the first request after
ready answers in well under a second. A real ``ragindex encoder-server`` process, the default settings.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from rawhttp import connect, read_answer
from servekit import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]
pytest.importorskip("uvicorn", reason="the encoder server needs ragindex[service]")

COMMAND = [sys.executable, "-c", "from ragindex.cli import main; main()", "encoder-server"]


def run_server(port: int, tmp_path: Path, **env: str) -> subprocess.Popen[str]:
    import os

    environment = {**os.environ, "RAGINDEX_DATA_DIR": str(tmp_path), **env}
    return subprocess.Popen(
        [*COMMAND, "--port", str(port)], env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
    return process.returncode, stderr


def test_ready_only_once_loaded_and_the_first_request_after_ready_is_fast(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = run_server(port, tmp_path)
    try:
        deadline = time.monotonic() + 180
        while True:  # liveness first: the port answers before the model is loaded
            assert process.poll() is None, process.communicate()
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the encoder server did not start"
            time.sleep(0.05)
        probes = []
        while (ready := httpx.get(f"{url}/readyz", timeout=5)).status_code != 200:
            probes.append((ready.status_code, ready.json()["status"]))
            assert time.monotonic() < deadline, f"not ready after 180 s: {probes[-3:]}"
            time.sleep(0.1)
        assert set(probes) <= {(503, "loading")}, probes
        assert ready.json() == {"status": "ready", "dense": "sentence-transformers/all-MiniLM-L6-v2", "sparse": None}

        began = time.perf_counter()
        first = httpx.post(f"{url}/v1/embeddings", json={"input": ["the first batch after ready"]}, timeout=30)
        first_s = time.perf_counter() - began
        assert first.status_code == 200 and len(first.json()["data"][0]["embedding"]) == 384
        assert first_s < 1.0, f"the first embeddings request after ready took {first_s:.2f} s"
    finally:
        code, stderr = finish(process)
    assert code == 0, stderr
    assert "loading the models (GET /readyz answers 200 once they are loaded)" in stderr
    assert "ready in " in stderr and "(384d)" in stderr


def test_a_model_that_cannot_load_stops_the_server_with_its_error(tmp_path: Path) -> None:
    port = free_port()
    process = run_server(port, tmp_path, RAGINDEX_DENSE_MODEL=str(tmp_path / "no-such-model"))
    code, stderr = finish_when_done(process, 180)
    assert code == 3, stderr  # a configuration error: the model is missing
    assert "no-such-model" in stderr and "Traceback" not in stderr


def finish_when_done(process: subprocess.Popen[str], wait: float) -> tuple[int, str]:
    try:
        _, stderr = process.communicate(timeout=wait)
    except subprocess.TimeoutExpired:
        return finish(process)
    return process.returncode, stderr


def test_the_encoder_server_has_the_http_deadlines(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = run_server(
        port, tmp_path, RAGINDEX_HTTP_HEADER_TIMEOUT_SECONDS="1", RAGINDEX_HTTP_BODY_TIMEOUT_SECONDS="1"
    )
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, process.communicate()
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
            assert time.monotonic() < deadline
        sock = connect(url)
        sock.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        headers = read_answer(sock, wait=10.0)
        sock.close()
        sock = connect(url)
        sock.sendall(
            b"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"input": '
        )
        body = read_answer(sock, wait=10.0)
        sock.close()
    finally:
        finish(process)
    assert headers.status == 408 and headers.closed and headers.seconds < 5.0, headers
    assert body.status == 408 and body.closed and body.seconds < 5.0, body
