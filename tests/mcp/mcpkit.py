"""Helpers of the MCP tests: the real `ragindex mcp` as a subprocess, reached with the SDK's own client.

Each test body is an async function run with ``anyio.run`` (no pytest async plugin is needed). Servers get a
clean environment: no RAGINDEX_* but the data dir and what a test passes.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from mcp import Client, StdioServerParameters

CLI = str(Path(sys.executable).with_name("ragindex"))
DEADLINE_S = 300.0  # only a hung process gets this far (a cold model load on a busy machine takes ~30 s)


def server_env(data_dir: Path, **settings: str) -> dict[str, str]:
    """The environment of a server: no RAGINDEX_* but the data dir, the session's ONNX cache and ``settings``."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("RAGINDEX_")}
    out.update(RAGINDEX_DATA_DIR=str(data_dir), OPENBLAS_NUM_THREADS="1")
    if "RAGINDEX_ONNX_CACHE_DIR" in os.environ:
        out["RAGINDEX_ONNX_CACHE_DIR"] = os.environ["RAGINDEX_ONNX_CACHE_DIR"]
    out.update({f"RAGINDEX_{k.upper()}": v for k, v in settings.items()})
    return out


def ragindex(data_dir: Path, *args: str, **settings: str) -> subprocess.CompletedProcess[str]:
    """Run ``ragindex ARGS`` to its end."""
    return subprocess.run(
        [CLI, *args], env=server_env(data_dir, **settings), capture_output=True, text=True, timeout=DEADLINE_S
    )


@asynccontextmanager
async def stdio_session(data_dir: Path, log: Path, *args: str, **settings: str) -> AsyncIterator[Client]:
    """A client of ``ragindex mcp ARGS`` over stdio (the server's stderr goes to ``log``)."""
    params = StdioServerParameters(command=CLI, args=["mcp", *args], env=server_env(data_dir, **settings))
    with log.open("a") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=DEADLINE_S) as client:
            yield client


@asynccontextmanager
async def http_session(url: str, key: str | None, *, mode: str = "auto") -> AsyncIterator[Client]:
    """A client of the streamable HTTP server at ``url`` sending ``key`` as its bearer token."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=DEADLINE_S) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=DEADLINE_S) as client,
    ):
        yield client


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_listening(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Wait until the server accepts connections; fail if it ends first."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=2.0)
            return
        except httpx.TransportError:
            pass
        if proc.poll() is not None:
            raise AssertionError(f"the MCP server ended ({proc.returncode}):\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError("the MCP server did not start listening")
        time.sleep(0.1)


def data(result: CallToolResult) -> dict[str, Any]:
    """The structured content of a successful call (its text content is the same JSON)."""
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


def tool_error(result: CallToolResult) -> dict[str, Any]:
    """The structured content of a tool error (``isError``), checked to be readable by a model."""
    assert result.is_error, result.structured_content
    assert isinstance(result.structured_content, dict)
    text = result.content[0].text  # type: ignore[union-attr]
    assert text == f"{result.structured_content['error']}: {result.structured_content['message']}"
    return result.structured_content
