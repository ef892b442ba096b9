"""uvicorn as every ragindex server runs it: deadlines for slow clients, start-up errors as ragindex errors.

uvicorn closes an idle keep-alive connection after 5 s, but it puts no limit on how long a request's headers or
body may take: a client that sends a byte a second holds its connection, a task and a buffer as long as it likes
(50 such clients held ``ragindex serve`` for as long as they trickled). Every ragindex server (``serve``,
``watch --serve``, ``encoder-server``, ``mcp --host``, :class:`~ragindex.encoders.server.ThreadedServer`) is run
through :func:`server_config` (or :func:`serve`), which adds:

* **a header deadline** (:class:`HeaderDeadline`, on uvicorn's HTTP/1.1 protocol): a request's headers must all
  arrive within ``RAGINDEX_HTTP_HEADER_TIMEOUT_SECONDS`` of the connection (of its first byte, for a next request
  on a kept-alive connection), else the server answers 408 and closes the connection (a connection that sent
  nothing is just closed);
* **a body deadline** (:class:`BodyDeadline`, pure ASGI): a body that stops arriving for
  ``RAGINDEX_HTTP_BODY_TIMEOUT_SECONDS``, or that arrives slower on average than ``RAGINDEX_HTTP_BODY_MIN_RATE``
  bytes/s (after the same grace time), gets 408 and the connection is closed; an answer sent before its request's
  body was read whole closes the connection too (``Connection: close``), so nobody keeps trickling a body the
  server no longer reads;
* **start-up errors as themselves**: an exception of the app's lifespan (e.g. ``IndexLockedError``: another
  process owns the embedded index) is raised by :func:`serve` instead of uvicorn's traceback and exit code 3, so
  the CLI reports it as any command does (one line, its exit code).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any, ClassVar

from ragindex.config.http import HttpSettings

if TYPE_CHECKING:
    import uvicorn

log = logging.getLogger(__name__)

__all__ = [
    "BodyDeadline",
    "HeaderDeadline",
    "StartupErrors",
    "guard",
    "header_deadline_protocol",
    "serve",
    "server_config",
]

Scope = dict[str, Any]
Message = dict[str, Any]


def timeout_body(message: str) -> bytes:
    """The JSON body of a 408: the service's error shape (``{"error", "message"}``)."""
    return json.dumps({"error": "RequestTimeout", "message": message}).encode()


class HeaderDeadline(asyncio.Protocol):
    """Mixin over uvicorn's HTTP/1.1 protocol (h11 or httptools): the headers of each request have a deadline.

    The deadline is armed when the connection opens and by the first byte of each further request on it, and
    disarmed once the request's headers are parsed (uvicorn has then started the request's cycle). When it passes,
    a connection that sent part of a request gets a 408; either way the connection is closed. A connection handed
    to another protocol (a WebSocket upgrade) is left alone.
    """

    header_timeout: ClassVar[float] = 10.0
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    cycle: Any
    _header_timer: asyncio.TimerHandle | None = None
    _header_bytes = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Open the connection and arm the deadline of its first request."""
        super().connection_made(transport)
        self._arm_header_deadline()

    def data_received(self, data: bytes) -> None:
        """Feed uvicorn's parser; arm the deadline at a request's first byte, disarm it once its headers are in."""
        if self._header_timer is None and self._between_requests():
            self._arm_header_deadline()
        self._header_bytes += len(data)
        before = self.cycle
        super().data_received(data)
        if self.cycle is not before or self.transport.get_protocol() is not self:
            self._disarm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        """Disarm the deadline and let uvicorn close the connection."""
        self._disarm_header_deadline()
        super().connection_lost(exc)

    def _between_requests(self) -> bool:
        cycle = self.cycle
        return cycle is None or bool(cycle.response_complete)

    def _arm_header_deadline(self) -> None:
        self._disarm_header_deadline()
        self._header_bytes = 0
        self._header_timer = self.loop.call_later(self.header_timeout, self._header_deadline_passed)

    def _disarm_header_deadline(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_deadline_passed(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or not self._between_requests() or self.transport.get_protocol() is not self:
            return
        if self._header_bytes:
            body = timeout_body(
                f"the request headers did not arrive within {self.header_timeout:g} s "
                "(RAGINDEX_HTTP_HEADER_TIMEOUT_SECONDS)"
            )
            head = (
                b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
                b"content-length: " + str(len(body)).encode() + b"\r\n\r\n"
            )
            self.transport.write(head + body)
        self.transport.close()


def header_deadline_protocol(timeout: float) -> type[asyncio.Protocol]:
    """The HTTP/1.1 protocol class of uvicorn (httptools if installed, else h11) with a header deadline."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    return type("HeaderDeadlineProtocol", (HeaderDeadline, AutoHTTPProtocol), {"header_timeout": timeout})


def has_body(scope: Scope) -> bool:
    """Whether a request has a body (a non-zero Content-Length, or Transfer-Encoding)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return value.strip() not in (b"", b"0")
        if name == b"transfer-encoding":
            return True
    return False


class BodyDeadline:
    """Pure ASGI middleware: a request body that stalls or trickles gets 408, and the connection is closed.

    Only the time spent waiting for the body counts (an app busy elsewhere does not use the client's time up).
    One wait longer than ``timeout`` ends the request; so does a total wait over ``timeout + received / min_rate``
    seconds. The app then reads an ``http.disconnect``, and whatever it answers is replaced by the 408.

    Args:
        app: The ASGI application.
        timeout: ``RAGINDEX_HTTP_BODY_TIMEOUT_SECONDS``.
        min_rate: ``RAGINDEX_HTTP_BODY_MIN_RATE`` (bytes/s; 0: only the idle timeout).
    """

    def __init__(self, app: Any, *, timeout: float, min_rate: int) -> None:
        self.app = app
        self.timeout = timeout
        self.min_rate = min_rate

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        """Run one ASGI call; HTTP requests with a body under the deadline."""
        if scope["type"] != "http" or not has_body(scope):
            await self.app(scope, receive, send)
            return
        await _BodyCall(self, receive, send).run(scope)


class _BodyCall:
    """One request under :class:`BodyDeadline`."""

    def __init__(self, limits: BodyDeadline, receive: Any, send: Any) -> None:
        self.limits = limits
        self._receive = receive
        self._send = send
        self.received = 0
        self.waited = 0.0
        self.complete = False  # the whole body has been read
        self.expired: str | None = None  # why the body's deadline passed
        self.started = False  # the app's answer has started
        self.answered = False  # the 408 has been sent

    async def run(self, scope: Scope) -> None:
        try:
            await self.limits.app(scope, self.receive, self.send)
        except Exception:
            if self.expired is None:
                raise
            log.debug("the app failed after its request body timed out", exc_info=True)
        if self.expired is not None and not self.started and not self.answered:
            await self._answer_408()

    def _budget(self) -> tuple[float, str]:
        limits = self.limits
        idle = (
            limits.timeout,
            f"no byte of the request body for {limits.timeout:g} s (RAGINDEX_HTTP_BODY_TIMEOUT_SECONDS)",
        )
        if not limits.min_rate:
            return idle
        left = limits.timeout + self.received / limits.min_rate - self.waited
        if left >= limits.timeout:
            return idle
        return max(left, 0.0), (
            f"the request body arrived slower than {limits.min_rate} bytes/s (RAGINDEX_HTTP_BODY_MIN_RATE, "
            f"after {limits.timeout:g} s of RAGINDEX_HTTP_BODY_TIMEOUT_SECONDS)"
        )

    async def receive(self) -> Message:
        if self.expired is not None:
            return {"type": "http.disconnect"}
        if self.complete:
            message: Message = await self._receive()
            return message
        budget, why = self._budget()
        loop = asyncio.get_running_loop()
        began = loop.time()
        try:
            async with asyncio.timeout(budget):
                message = await self._receive()
        except TimeoutError:
            self.expired = why
            return {"type": "http.disconnect"}
        self.waited += loop.time() - began
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            self.complete = not message.get("more_body", False)
        else:
            self.complete = True
        return message

    async def send(self, message: Message) -> None:
        if self.expired is not None and not self.started:
            if not self.answered:  # the app's answer to the disconnect it read is replaced by the 408
                await self._answer_408()
            return
        if message["type"] == "http.response.start":
            self.started = True
            if not self.complete:  # answered before the body was read whole: nobody reads the rest
                message = {**message, "headers": [*message.get("headers", ()), (b"connection", b"close")]}
        await self._send(message)

    async def _answer_408(self) -> None:
        self.answered = True
        body = timeout_body(f"request timeout: {self.expired}")
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        await self._send({"type": "http.response.start", "status": 408, "headers": headers})
        await self._send({"type": "http.response.body", "body": body})


class StartupErrors:
    """Pure ASGI middleware that keeps the exception of a failed lifespan start-up for :func:`serve` to raise.

    uvicorn logs such an exception's traceback (89 lines for a locked index) and exits with code 3; with this
    wrapper it logs one line ("Application startup failed") and :func:`serve` raises the exception itself.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.error: BaseException | None = None

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        """Run one ASGI call; a lifespan's start-up failure is kept and reported without its traceback."""
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        started = False

        async def quiet(message: Message) -> None:
            nonlocal started
            if message["type"] == "lifespan.startup.complete":
                started = True
            if message["type"] == "lifespan.startup.failed":
                message = {**message, "message": ""}  # serve() raises the exception: no traceback text
            await send(message)

        try:
            await self.app(scope, receive, quiet)
        except BaseException as exc:
            if not started:
                self.error = exc
            raise


def guard(app: Any, http: HttpSettings | None = None) -> StartupErrors:
    """``app`` under the body deadline, its start-up errors kept (the ASGI app :func:`server_config` serves)."""
    http = http or HttpSettings()
    return StartupErrors(BodyDeadline(app, timeout=http.http_body_timeout_seconds, min_rate=http.http_body_min_rate))


def server_config(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    http: HttpSettings | None = None,
    log_level: str = "info",
    **options: Any,
) -> uvicorn.Config:
    """The uvicorn configuration of a ragindex server: ``app`` under the body deadline, the header deadline.

    Args:
        app: The ASGI application (wrapped by :func:`guard` unless it is a :class:`StartupErrors` already).
        host: Interface to bind.
        port: TCP port.
        http: The deadlines (default: :class:`~ragindex.config.http.HttpSettings`'s defaults).
        log_level: uvicorn's log level.
        **options: Any other ``uvicorn.Config`` option.
    """
    import uvicorn

    http = http or HttpSettings()
    guarded = app if isinstance(app, StartupErrors) else guard(app, http)
    protocol = header_deadline_protocol(http.http_header_timeout_seconds)
    return uvicorn.Config(guarded, host=host, port=port, log_level=log_level, http=protocol, **options)


def serve(
    app: Any, *, host: str = "127.0.0.1", port: int = 8000, http: HttpSettings | None = None, log_level: str = "info"
) -> None:
    """Serve ``app`` until SIGINT or SIGTERM (``uvicorn.run`` with :func:`server_config`).

    Raises:
        BaseException: What the app's lifespan start-up raised (e.g. ``IndexLockedError``), instead of uvicorn's
            traceback and exit code 3.
        SystemExit: Code 3 when uvicorn could not start for another reason (e.g. the port is in use: its log says).
    """
    import uvicorn

    guarded = guard(app, http)
    server = uvicorn.Server(server_config(guarded, host=host, port=port, http=http, log_level=log_level))
    try:
        server.run()
    except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it handled (as uvicorn.run, nothing more to do)
        pass
    except SystemExit:
        if guarded.error is not None:
            raise guarded.error from None
        raise
    if not server.started:
        if guarded.error is not None:
            raise guarded.error
        raise SystemExit(3)
