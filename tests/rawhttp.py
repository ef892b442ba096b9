"""HTTP/1.1 over a raw socket, for the tests of slow clients: send part of a request, read what the server answers.

An HTTP client library sends a request whole; a slow or hostile client sends its headers or its body a byte at a
time, or stops halfway. These helpers do that and report what the server did: its answer (status, headers, body)
and whether it then closed the connection.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Answer:
    """What the server sent on one connection: a response (None: nothing within the wait) and whether it closed."""

    status: int | None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    closed: bool = False
    seconds: float = 0.0

    def json(self) -> Any:
        return json.loads(self.body)


def connect(url: str, timeout: float = 10.0) -> socket.socket:
    """A TCP connection to the server of ``url``."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def head(method: str, path: str, headers: dict[str, str] | None = None) -> bytes:
    """The request line and headers of a request (with ``Host``), ending with the blank line."""
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in (headers or {}).items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def multipart(name: str, content: bytes, boundary: str = "ragindex-test-boundary") -> tuple[bytes, str]:
    """A ``multipart/form-data`` body with one file in the ``files`` field, and its content type."""
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


def read_answer(sock: socket.socket, wait: float) -> Answer:
    """Read one response for up to ``wait`` seconds, then whether the server closed the connection after it."""
    began = time.monotonic()
    deadline = began + wait
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = _recv(sock, deadline)
        if chunk is None:
            return Answer(None, seconds=time.monotonic() - began)
        if not chunk:
            return Answer(None, closed=True, seconds=time.monotonic() - began)
        data += chunk
    raw_head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = raw_head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = _recv(sock, deadline)
        if not chunk:
            break
        body += chunk
    seconds = time.monotonic() - began
    closed = _recv(sock, time.monotonic() + 2.0) == b""
    return Answer(int(status_line.split()[1]), headers, body, closed, seconds)


def closed_within(sock: socket.socket, wait: float) -> bool:
    """Whether the server closes the connection within ``wait`` seconds (anything it sends first is read)."""
    deadline = time.monotonic() + wait
    while True:
        chunk = _recv(sock, deadline)
        if chunk is None:
            return False
        if not chunk:
            return True


def _recv(sock: socket.socket, deadline: float) -> bytes | None:
    """Bytes from ``sock`` (b"": it closed), or None when nothing came before ``deadline``."""
    left = deadline - time.monotonic()
    if left <= 0:
        return None
    sock.settimeout(left)
    try:
        return sock.recv(65536)
    except TimeoutError:
        return None
    except ConnectionResetError:
        return b""
