"""Issue 23: ``ragindex serve``'s ``/readyz`` is false until the dense model answers; ``/healthz`` is liveness.

``/readyz`` checked the store and the index only: it said ready while the dense model was still loading (or, with
a remote encoder, while that encoder was down), and during that time every search waited for the model or failed.
Now the model loads on a thread of its own after start-up: ``/healthz`` answers at once, ``/readyz`` is 503 with
``checks.dense`` ("loading", or the warm-up's error, tried again by the next probe) and turns 200 once a search
would not wait. A real ``ragindex serve`` whose dense encoder is a remote one that starts later.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

import servekit
from servekit import COMMAND, free_port

pytestmark = pytest.mark.integration
served = pytest.importorskip("ragindex.encoders.server", reason="the encoder server needs ragindex[service]")


def test_ready_only_once_the_remote_dense_encoder_answers(tmp_path: Path, onnx_cache_dir: Path) -> None:
    from ragindex.encoders.dense.sentence_transformers import SentenceTransformerDenseEncoder

    encoder_port, port = free_port(), free_port()
    env = {
        **servekit._env(tmp_path / "data", onnx_cache_dir),
        "RAGINDEX_DENSE_PROVIDER": "openai",
        "RAGINDEX_DENSE_URL": f"http://127.0.0.1:{encoder_port}",  # nothing listens there yet
        "RAGINDEX_DENSE_MODEL": "sentence-transformers/all-MiniLM-L6-v2",
    }
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([*COMMAND, "serve", "--port", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + servekit.START_S
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        seen: list[str] = []
        while True:  # not ready: the store and the index are, the dense encoder is not
            ready = httpx.get(f"{url}/readyz", timeout=10)
            assert ready.status_code == 503, ready.text
            body = ready.json()
            assert body["status"] == "unavailable" and body["checks"]["store"] == "ok", body
            assert body["checks"]["index"] == "ok", body
            seen.append(body["checks"]["dense"])
            if seen[-1] != "loading":
                break
            assert time.monotonic() < deadline, seen
            time.sleep(0.5)
        assert f"127.0.0.1:{encoder_port}" in seen[-1], seen  # the warm-up's error names the encoder it tried

        dense = SentenceTransformerDenseEncoder("sentence-transformers/all-MiniLM-L6-v2", precision="float32")
        with served.ThreadedServer(served.create_encoder_app(dense, None), port=encoder_port):
            while (ready := httpx.get(f"{url}/readyz", timeout=10)).status_code != 200:
                assert time.monotonic() < deadline + 120, ready.text
                time.sleep(0.5)
            assert ready.json() == {"status": "ready", "checks": servekit.ready_checks()}
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
