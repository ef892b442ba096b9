"""``ragindex encoder-server`` as a real process: it serves the local model until it is told to stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from ragindex.encoders.dense.openai_http import OpenAIHttpDenseEncoder

pytestmark = [pytest.mark.integration, pytest.mark.slow]
pytest.importorskip("uvicorn", reason="the encoder server needs ragindex[service]")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_encoder_server_command_serves_the_local_model(tmp_path, local_dense):
    port = free_port()
    env = {
        **os.environ,
        "RAGINDEX_DATA_DIR": str(tmp_path),
        "RAGINDEX_ENCODER_SERVER_API_KEY": "from-env-key",
        # the clients add the prompts: the server embeds texts as sent, whatever the prompt settings say
        "RAGINDEX_DENSE_DOCUMENT_PROMPT": "passage: ",
    }
    command = [sys.executable, "-c", "from ragindex.cli import main; main()", "encoder-server", "--port", str(port)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, process.communicate()
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "encoder server did not start"
            time.sleep(0.25)
        with OpenAIHttpDenseEncoder(url, "all-MiniLM-L6-v2", api_key="from-env-key") as client:
            vectors = client.encode_documents(["served by a separate process"])
        # the server runs the default precision (bf16 autocast where the CPU has it): close, not identical
        cosine = float(vectors[0] @ local_dense.encode_documents(["served by a separate process"])[0])
        assert cosine > 0.999
        assert httpx.post(f"{url}/encode", json={"texts": ["x"]}, timeout=5).status_code == 401
    finally:
        process.send_signal(signal.SIGINT)
        try:
            _, stderr = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            _, stderr = process.communicate()
    assert process.returncode == 0, stderr
    assert f"encoder server on http://127.0.0.1:{port}" in stderr
    assert "st:sentence-transformers/all-MiniLM-L6-v2 (384d)" in stderr and "|prompts=" not in stderr
    assert "from-env-key" not in stderr
