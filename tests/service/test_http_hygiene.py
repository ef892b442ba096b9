"""Issue 23: slow clients cannot hold ``ragindex serve``: header and body deadlines, the key before the body, a cap.

Real ``ragindex serve`` processes and raw sockets (tests/rawhttp.py): one server with the default settings (the
shared one of tests/servekit.py), one with short deadlines and a cap of 2 uploads, to show each limit quickly; the
default deadlines are shown once each too. The issue's reproduction: 50 connections trickling a body without a key
and 50 trickling headers stayed open for 35 s, and the key was checked only once the whole body had arrived.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

import servekit
from rawhttp import Answer, closed_within, connect, head, multipart, read_answer
from servekit import COMMAND, CORPUS_SET, CORPUS_USER, Served, free_port

pytestmark = pytest.mark.integration

USER = 2301  # this module's tenant on the shared server
SHORT = {
    "RAGINDEX_HTTP_HEADER_TIMEOUT_SECONDS": "1",
    "RAGINDEX_HTTP_BODY_TIMEOUT_SECONDS": "2",
    "RAGINDEX_MAX_CONCURRENT_UPLOADS": "2",
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, onnx_cache_dir: Path) -> Iterator[Served]:
    """The shared ``ragindex serve`` with the default settings (THREE_DOCS in the corpus set)."""
    server = servekit.acquire(tmp_path_factory, onnx_cache_dir)
    try:
        yield server
    finally:
        servekit.release(server)


@dataclass
class Process:
    """A server process of this module, its URL and its log."""

    url: str
    proc: subprocess.Popen[bytes]
    log: Path
    data_dir: Path

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def key(self, user_id: int) -> str:
        return Served(url=self.url, data_dir=self.data_dir, proc=self.proc, log=self.log).new_key(user_id)


def start(args: list[str], root: Path, onnx_cache: Path, env: dict[str, str], probe: str = "/healthz") -> Process:
    """``ragindex ARGS --port P`` with the test environment plus ``env``, once ``probe`` answers."""
    port = free_port()
    data_dir = root / "data"
    log = root / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*COMMAND, *args, "--port", str(port)],
            env={**servekit._env(data_dir, onnx_cache), **env},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = Process(f"http://127.0.0.1:{port}", proc, log, data_dir)
    deadline = time.monotonic() + servekit.START_S
    while True:
        assert proc.poll() is None, f"{args} exited {proc.returncode}:\n{server.output()}"
        try:
            if httpx.get(server.url + probe, timeout=2.0).status_code < 500:
                return server
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, f"{args} did not answer:\n{server.output()}"
        time.sleep(0.2)


def stop(server: Process) -> None:
    if server.proc.poll() is None:
        server.proc.send_signal(signal.SIGINT)
        try:
            server.proc.wait(60)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait(10)


@pytest.fixture(scope="module")
def short(tmp_path_factory: pytest.TempPathFactory, onnx_cache_dir: Path) -> Iterator[Process]:
    """``ragindex serve`` with a 1 s header deadline, a 2 s body deadline and at most 2 uploads in flight."""
    server = start(["serve", "--log-level", "warning"], tmp_path_factory.mktemp("short"), onnx_cache_dir, SHORT)
    try:
        yield server
    finally:
        stop(server)


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def upload_head(key: str | None, length: int, content_type: str, set_id: int = 1) -> bytes:
    headers = {"Content-Type": content_type, "Content-Length": str(length), **(auth(key) if key else {})}
    return head("POST", f"/v1/sets/{set_id}/documents", headers)


def started_upload(url: str, key: str | None, *, set_id: int = 1) -> tuple[socket.socket, bytes]:
    """A connection that sent an upload's headers and the first bytes of its 4 kB body, then nothing."""
    body, content_type = multipart("slow.txt", b"x" * 4096)
    sock = connect(url)
    sock.sendall(upload_head(key, len(body), content_type, set_id) + body[:10])
    return sock, body


# ---------------------------------------------------------------------------------------- the default settings


def test_50_keyless_trickled_bodies_and_50_trickled_headers_hold_nothing(served: Served) -> None:
    """The issue's reproduction, with the default settings: nothing waits for the tricklers."""
    body, content_type = multipart("x.txt", b"y" * 10_000)
    keyless = [connect(served.url) for _ in range(50)]
    for sock in keyless:
        sock.sendall(upload_head(None, len(body), content_type) + body[:1])
    tricklers = [connect(served.url) for _ in range(50)]
    request = head("POST", "/v1/search", {"Content-Type": "application/json", "Content-Length": "40"})
    began = time.monotonic()
    try:
        answers = [read_answer(sock, wait=10.0) for sock in keyless]  # each gets 401, its body unread
        assert {a.status for a in answers} == {401}, answers[:3]
        assert all(a.closed for a in answers), "a 401 sent before the body was read must close the connection"
        assert answers[0].json()["error"] == "AuthenticationError"
        assert answers[0].json()["message"] == "missing API key: send `Authorization: Bearer <key>`"
        assert answers[0].headers["www-authenticate"] == "Bearer"
        assert time.monotonic() - began < 10.0

        # meanwhile the service answers: liveness, and another tenant's search
        assert httpx.get(f"{served.url}/healthz", timeout=5.0).status_code == 200
        search = httpx.post(
            f"{served.url}/v1/search",
            json={"query": "honey bees", "set_id": CORPUS_SET, "top_k": 1},
            headers=auth(served.key(CORPUS_USER)),
            timeout=30.0,
        )
        assert search.status_code == 200 and search.json()["hits"], search.text

        # one header byte a second, as the clients did: cut at the 10 s default with a 408
        sent = 0
        closed = [False] * len(tricklers)
        while not all(closed) and time.monotonic() - began < 25.0:
            for i, sock in enumerate(tricklers):
                if closed[i]:
                    continue
                try:
                    sock.sendall(request[sent : sent + 1])
                except (BrokenPipeError, ConnectionResetError):
                    closed[i] = True
            sent = min(sent + 1, len(request) - 5)  # never the blank line that would end the headers
            time.sleep(1.0)
            closed = [c or closed_within(s, 0.01) for c, s in zip(closed, tricklers, strict=True)]
        assert all(closed), f"{closed.count(False)} of 50 header tricklers still open after 25 s"
        assert time.monotonic() - began > 8.0  # the deadline is the default's 10 s, not a shorter one
    finally:
        for sock in keyless + tricklers:
            sock.close()


def test_trickled_headers_get_408_at_the_default_deadline(served: Served) -> None:
    sock = connect(served.url)
    try:
        sock.sendall(b"GET /v1/sets HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        answer = read_answer(sock, wait=30.0)
    finally:
        sock.close()
    assert answer.status == 408 and answer.closed, answer
    assert 8.0 < answer.seconds < 20.0, answer.seconds
    assert "RAGINDEX_HTTP_HEADER_TIMEOUT_SECONDS" in answer.json()["message"]


def test_a_body_that_stops_gets_408_at_the_default_deadline(served: Served) -> None:
    sock = connect(served.url)
    try:
        headers = {"Content-Type": "application/json", "Content-Length": "200", **auth(served.key(USER))}
        sock.sendall(head("POST", "/v1/search", headers) + b'{"query": "bees", ')
        answer = read_answer(sock, wait=60.0)
    finally:
        sock.close()
    assert answer.status == 408 and answer.closed, answer
    assert 25.0 < answer.seconds < 45.0, answer.seconds  # RAGINDEX_HTTP_BODY_TIMEOUT_SECONDS, 30 by default
    assert answer.json()["error"] == "RequestTimeout"
    assert "RAGINDEX_HTTP_BODY_TIMEOUT_SECONDS" in answer.json()["message"]


def test_the_ninth_upload_in_flight_gets_503_before_its_body(served: Served) -> None:
    key = served.key(USER)
    slow = [started_upload(served.url, key, set_id=2301) for _ in range(8)]  # the default cap
    try:
        time.sleep(0.5)  # every one of them is past the key check and counted
        sock = connect(served.url)
        sock.sendall(upload_head(key, 4096, "multipart/form-data; boundary=b"))  # headers only: no body yet
        answer = read_answer(sock, wait=10.0)
        sock.close()
        assert answer.status == 503 and answer.closed, answer
        assert answer.headers["retry-after"] == "2"
        assert answer.json()["error"] == "TooManyUploads"
        assert "RAGINDEX_MAX_CONCURRENT_UPLOADS=8" in answer.json()["message"]

        # a search is no upload: it is answered while the uploads are in flight
        search = httpx.post(
            f"{served.url}/v1/search", json={"query": "bees", "set_id": 2301}, headers=auth(key), timeout=30.0
        )
        assert search.status_code == 200, search.text

        # one upload ends (its client sends the rest): the next one is accepted
        first, body = slow.pop(0)
        first.sendall(body[10:])
        assert read_answer(first, wait=30.0).status == 202
        first.close()
        accepted = httpx.post(
            f"{served.url}/v1/sets/2301/documents",
            files=[("files", ("next.txt", b"the next upload"))],
            headers=auth(key),
            timeout=30.0,
        )
        assert accepted.status_code == 202, accepted.text
    finally:
        for sock, _ in slow:
            sock.close()


# ------------------------------------------------------------------------------------------ short deadlines


def test_a_trickled_body_with_a_key_is_cut_by_the_minimum_rate(short: Process) -> None:
    """It never pauses as long as the body deadline, but 5 bytes/s is far below RAGINDEX_HTTP_BODY_MIN_RATE."""
    key = short.key(7)
    sock = connect(short.url)
    began = time.monotonic()
    try:
        headers = {"Content-Type": "application/json", "Content-Length": "500", **auth(key)}
        sock.sendall(head("POST", "/v1/search", headers))
        answer: Answer | None = None
        for _ in range(60):
            try:
                sock.sendall(b" ")
            except (BrokenPipeError, ConnectionResetError):
                break
            answer = read_answer(sock, wait=0.2)
            if answer.status is not None or answer.closed:
                break
    finally:
        sock.close()
    assert answer is not None and answer.status == 408, answer
    assert "RAGINDEX_HTTP_BODY_MIN_RATE" in answer.json()["message"]
    assert time.monotonic() - began < 10.0


def test_a_slow_but_steady_upload_and_a_search_still_work(short: Process) -> None:
    """20 kB at ~4 kB/s takes longer than the 2 s body deadline, but it never stalls and beats the minimum rate."""
    key = short.key(8)
    body, content_type = multipart("steady.txt", b"Steady uploads of bee keeping notes. " * 540)
    sock = connect(short.url)
    try:
        sock.sendall(upload_head(key, len(body), content_type, set_id=3))
        began = time.monotonic()
        for start in range(0, len(body), 1024):
            sock.sendall(body[start : start + 1024])
            time.sleep(0.25)
        answer = read_answer(sock, wait=30.0)
    finally:
        sock.close()
    assert time.monotonic() - began > 4.0
    assert answer.status == 202, answer
    job_id = answer.json()["job_id"]
    with httpx.Client(base_url=short.url, headers=auth(key), timeout=60.0) as client:
        deadline = time.monotonic() + 180
        while (job := client.get(f"/v1/jobs/{job_id}").json())["status"] in ("queued", "running"):
            assert time.monotonic() < deadline, job
            time.sleep(0.2)
        assert job["status"] == "succeeded", job
        hits = client.post("/v1/search", json={"query": "bee keeping notes", "set_id": 3}).json()["hits"]
        assert hits and hits[0]["filename"] == "steady.txt"


def test_a_wrong_key_is_refused_before_the_body_and_a_route_that_skips_the_body_closes(short: Process) -> None:
    sock = connect(short.url)
    try:
        headers = {"Content-Type": "application/json", "Content-Length": "100000", **auth("rgx_not-a-key")}
        sock.sendall(head("POST", "/v1/search", headers))
        answer = read_answer(sock, wait=5.0)
    finally:
        sock.close()
    assert answer.status == 401 and answer.closed
    assert answer.json()["message"] == "invalid or revoked API key"
    # a route that answers without reading the body (404 for a path nobody serves) closes the connection too
    sock = connect(short.url)
    try:
        sock.sendall(head("POST", "/nowhere", {"Content-Length": "100000"}) + b"x")
        answer = read_answer(sock, wait=5.0)
    finally:
        sock.close()
    assert answer.status == 404 and answer.closed


# ------------------------------------------------------------------------------- the other servers: one helper


def test_mcp_over_http_has_the_same_deadlines(tmp_path: Path, onnx_cache_dir: Path) -> None:
    pytest.importorskip("mcp", reason="`ragindex mcp` needs ragindex[mcp]")
    server = start(["mcp", "--host", "127.0.0.1"], tmp_path, onnx_cache_dir, SHORT, probe="/mcp")
    try:
        sock = connect(server.url)
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        headers = read_answer(sock, wait=10.0)
        sock.close()
        sock = connect(server.url)
        key = server.key(1)
        accept = "application/json, text/event-stream"
        request = {"Content-Type": "application/json", "Content-Length": "300", "Accept": accept}
        sock.sendall(head("POST", "/mcp", {**request, **auth(key)}) + b'{"jsonrpc": "2.0", ')
        body = read_answer(sock, wait=20.0)
        sock.close()
    finally:
        stop(server)
    assert headers.status == 408 and headers.closed and headers.seconds < 5.0, headers
    assert body.status == 408 and body.closed and body.seconds < 10.0, body
