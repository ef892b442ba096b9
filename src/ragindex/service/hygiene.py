"""What the service checks before it reads a request body: the API key of every ``/v1`` route, the uploads in flight.

FastAPI reads (and, for an upload, spools to disk) the whole body before any dependency runs, so a key checked by a
dependency is checked only after the body arrived: a client without a key could hold a connection by trickling a
body. :class:`RequestGate` sits in front of the app as pure ASGI middleware and answers before reading anything:

* ``/v1`` without a valid ``Authorization: Bearer`` key: 401, with the message of the routes' own check (which
  still runs: it gives the route the principal the gate found, and the admin routes their 403); Dify's
  ``/retrieval`` (and ``/v1/retrieval``): 403 with Dify's ``error_code`` 1001 (no bearer header) or 1002 (an
  unknown key);
* an upload (a ``multipart/form-data`` body) while ``RAGINDEX_MAX_CONCURRENT_UPLOADS`` uploads are still being
  received: 503 with ``Retry-After``. An upload counts until its body has arrived (or its request ended).

An answer sent before the body is read closes the connection (``Connection: close``). The deadlines on slow
headers and bodies are the server's (:mod:`ragindex.serving`), for every ragindex server alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from anyio import to_thread

from ragindex.errors import AuthenticationError
from ragindex.service.asgi import HttpMiddleware
from ragindex.service.keys import Principal, authenticate
from ragindex.serving import has_body

if TYPE_CHECKING:
    from ragindex.service.deps import ServiceState

DIFY_PATHS = ("/retrieval", "/v1/retrieval")
"""Dify's External Knowledge API (:mod:`ragindex.service.routes.dify`): its key errors are Dify's, with 403."""
BAD_HEADER, AUTH_FAILED = 1001, 1002
BAD_HEADER_MESSAGE = "Invalid Authorization header format. Expected 'Bearer <api-key>' format."
AUTH_FAILED_MESSAGE = "Authorization failed. Please check your API key."
MISSING_KEY = "missing API key: send `Authorization: Bearer <key>`"
INVALID_KEY = "invalid or revoked API key"
RETRY_AFTER_S = 2
CHECKED_KEY = "ragindex.principal"
"""The ASGI scope key under which :class:`RequestGate` leaves ``(token, principal)`` of the key it checked."""


def bearer_token(scope: dict[str, Any]) -> str | None:
    """The token of an ``Authorization: Bearer`` header (None: none), read as FastAPI's HTTPBearer reads it."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            token = token.strip()
            return token if scheme.lower() == "bearer" and token else None
    return None


def _is_api(path: str) -> bool:
    return path == "/v1" or path.startswith("/v1/")


def _is_upload(scope: dict[str, Any]) -> bool:
    if scope.get("method") != "POST":
        return False
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            return bool(value.lower().startswith(b"multipart/form-data"))
    return False


class RequestGate(HttpMiddleware):
    """Pure ASGI middleware: the ``/v1`` key and the cap on uploads in flight, checked before the body is read.

    Args:
        app: The ASGI application.
        state: The running service's state (None until its lifespan has started: requests pass through).
        max_uploads: ``RAGINDEX_MAX_CONCURRENT_UPLOADS``.
    """

    def __init__(self, app: Any, *, state: Callable[[], ServiceState | None], max_uploads: int) -> None:
        super().__init__(app)
        self.state = state
        self.max_uploads = max_uploads
        self.uploading = 0

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Answer 401 or 503 at once, or pass the request on (counting it while it is an upload in flight)."""
        state = self.state()
        path = scope.get("path", "")
        dify = path in DIFY_PATHS
        if state is None or not (dify or _is_api(path)):
            await self.app(scope, receive, send)
            return
        token = bearer_token(scope)
        principal: Principal | None = None
        if token is not None:
            if getattr(state.store, "dialect", None) == "sqlite":  # a local read: cheaper than a hop to a thread
                principal = authenticate(state.store, token)
            else:  # a server database's round trip must not hold the event loop
                principal = await to_thread.run_sync(authenticate, state.store, token)
        if dify and principal is None:  # Dify's error codes, with the 403 Dify documents for a denied request
            code, message = (BAD_HEADER, BAD_HEADER_MESSAGE) if token is None else (AUTH_FAILED, AUTH_FAILED_MESSAGE)
            await refuse(send, scope, 403, {"error_code": code, "error_msg": message}, [])
            return
        if principal is None:
            error = AuthenticationError(MISSING_KEY if token is None else INVALID_KEY)
            await refuse(send, scope, 401, error.to_dict(), [(b"www-authenticate", b"Bearer")])
            return
        scope[CHECKED_KEY] = (token, principal)  # the route's own check takes it: one key lookup a request
        if not _is_upload(scope):
            await self.app(scope, receive, send)
            return
        if self.uploading >= self.max_uploads:
            body = {
                "error": "TooManyUploads",
                "message": f"{self.uploading} uploads are being received already, the most at once "
                f"(RAGINDEX_MAX_CONCURRENT_UPLOADS={self.max_uploads}); retry in {RETRY_AFTER_S} s",
                "context": {"limit": self.max_uploads, "retry_after": RETRY_AFTER_S},
            }
            await refuse(send, scope, 503, body, [(b"retry-after", str(RETRY_AFTER_S).encode())])
            return
        await self._upload(scope, receive, send)

    async def _upload(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.uploading += 1
        counted = True

        def release() -> None:
            nonlocal counted
            if counted:
                counted = False
                self.uploading -= 1

        async def counting() -> dict[str, Any]:
            message: dict[str, Any] = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                release()  # the body has arrived (or the client left): the slot is free for the next upload
            return message

        try:
            await self.app(scope, counting, send)
        finally:
            release()


async def refuse(
    send: Any, scope: dict[str, Any], status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]
) -> None:
    """Answer ``status`` with the JSON ``body``, unread: ``Connection: close`` when the request has a body."""
    data = json.dumps(body).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *headers]
    if has_body(scope):
        head.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": data})
