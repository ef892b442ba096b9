"""A light HTTP/1.1 load client for the benchmarks: keep-alive connections on asyncio streams, JSON POSTs.

The servers under test share this machine's two cores with the client, so the client's own CPU is taken from them.
One ``httpx.AsyncClient`` spent 2.5-5 ms of CPU a request (its connection pool, models and anyio layers) and,
starved of CPU at 32 connections, stalled for 1-2 s at a time: its tails were its own. This client writes each
request as bytes made once, reads the status line, the headers and a ``Content-Length`` or chunked body, and spends
~0.2 ms of CPU a request (docs/service.md, "The body as received"). Only what the benchmarks send is supported:
``POST`` of JSON, answers with a body, HTTP/1.1 keep-alive.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit


class Connection:
    """One keep-alive connection: a request written, its answer read whole."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, request: bytes) -> int:
        """Send ``request`` (bytes of a whole request); return the answer's status once its body is read."""
        return (await self.exchange(request))[0]

    async def exchange(self, request: bytes) -> tuple[int, bytes]:
        """Send ``request`` (bytes of a whole request); return the answer's status and body."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        fields = dict(line.split(b":", 1) for line in lines[1:] if b":" in line)
        fields = {name.strip().lower(): value.strip().lower() for name, value in fields.items()}
        if fields.get(b"transfer-encoding") == b"chunked":
            parts = []
            while size := int((await self.reader.readuntil(b"\r\n")).strip().split(b";")[0], 16):
                parts.append((await self.reader.readexactly(size + 2))[:-2])
            await self.reader.readuntil(b"\r\n")
            body = b"".join(parts)
        else:
            body = await self.reader.readexactly(int(fields.get(b"content-length", b"0")))
        if fields.get(b"connection") == b"close":
            self.close()
        return status, body

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def json_post(url: str, headers: dict[str, str], body: dict[str, Any]) -> bytes:
    """The bytes of ``POST url`` with ``body`` as JSON and ``headers``."""
    parts = urlsplit(url)
    data = json.dumps(body).encode()
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return (
        f"POST {parts.path} HTTP/1.1\r\nhost: {parts.netloc}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(data)}\r\n{head}\r\n"
    ).encode() + data


async def load(
    url: str,
    headers: dict[str, str],
    bodies: list[dict[str, Any]],
    clients: int,
    seconds: float,
    *,
    prepare: Callable[[str], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``clients`` connections posting ``bodies`` in turn for ``seconds``: searches/s, p50 and p99 of the 200s.

    With ``prepare``, each body is ``prepare(text)`` of an item's ``text``, made in a thread inside the timed
    request (a client that embeds before it sends).
    """
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    made = [json_post(url, headers, body) for body in bodies] if prepare is None else []
    times: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds

    async def loop(offset: int) -> None:
        nonlocal errors
        connection = Connection(host, port)
        i = offset
        try:
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                if prepare is None:
                    request = made[i % len(made)]
                else:
                    body = await asyncio.to_thread(prepare, bodies[i % len(bodies)]["text"])
                    request = json_post(url, headers, body)
                try:
                    status = await connection.post(request)
                except (OSError, asyncio.IncompleteReadError, ValueError):
                    connection.close()
                    status = 0
                if status == 200:
                    times.append((time.perf_counter() - started) * 1000)
                else:
                    errors += 1
                i += clients
        finally:
            connection.close()

    started = time.perf_counter()
    await asyncio.gather(*(loop(c) for c in range(clients)))
    elapsed = time.perf_counter() - started
    times.sort()
    return {
        "clients": clients,
        "searches_per_s": len(times) / elapsed,
        "p50_ms": statistics.median(times) if times else None,
        "p99_ms": times[int(len(times) * 0.99)] if times else None,
        "errors": errors,
    }
