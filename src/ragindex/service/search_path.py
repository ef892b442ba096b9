"""``POST /v1/search`` straight to a search process: the service process neither decodes nor validates it.

With search processes (``RAGINDEX_SEARCH_PROCESSES``), the service process is the one process every search passes
through, and FastAPI's handling of a search request (routing, the dependencies, the body's JSON decode and its
validation) was ~68% of its GIL-held time a search (docs/service.md, "The read path (issue 27)").
:class:`SearchFastPath` sits inside the service's own middleware (after the key check and the body limit) and
hands a search's body, as received, to a search process (:class:`~ragindex.service.search_pool.SearchBody`), which
decodes and validates it with the route's model and runs it. Only an answer comes back this way: a body the search
process refuses (not JSON, not valid) goes to the route with the body replayed, and the route answers as it always
did (its 422, or its search); a search that failed in the search process goes to the route marked
:data:`FAILED_IN_POOL`, and the route runs it in the service process, which raises its error. So every error is
the route's, and the OpenAPI contract is the route's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ragindex.service.asgi import HttpMiddleware
from ragindex.service.hygiene import CHECKED_KEY
from ragindex.service.search_pool import INVALID, SearchBody, SearchPool

if TYPE_CHECKING:
    from ragindex.service.deps import ServiceState

SEARCH_PATH = "/v1/search"

FAILED_IN_POOL = "ragindex.search_failed_in_pool"
"""ASGI scope key: this search failed in a search process; the route runs it in the service process."""


class SearchFastPath(HttpMiddleware):
    """Pure ASGI middleware: a JSON ``POST /v1/search`` of a checked key goes to a search process as received.

    Args:
        app: The ASGI application (the route answers what this does not).
        state: The running service's state (None until its lifespan has started: requests pass through).
        route: The route of ``POST /v1/search`` (the request metrics label an answer with its path).
    """

    def __init__(self, app: Any, *, state: Callable[[], ServiceState | None], route: object) -> None:
        super().__init__(app)
        self.state = state
        self.route = route

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Answer a search from a search process, or pass the request on to the route."""
        state = self.state() if scope["path"] == SEARCH_PATH and scope["method"] == "POST" else None
        pool = state.extra.get("search_pool") if state is not None else None
        checked = scope.get(CHECKED_KEY)
        if state is None or not isinstance(pool, SearchPool) or checked is None or not _json_of_known_length(scope):
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        if body is None:  # the client left before its body arrived
            return
        outcome = await pool.search_body(SearchBody(body, checked[1].user_id, state.rerank_supported))
        if outcome is None or outcome == INVALID:
            if outcome is None:
                scope[FAILED_IN_POOL] = True
            await self.app(scope, _replay(body, receive), send)
            return
        answer, degraded, observed = outcome
        record_outcome(state, degraded, observed)
        scope["route"] = self.route
        head = [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        await send({"type": "http.response.body", "body": answer})


def record_outcome(
    state: ServiceState, degraded: dict[str, str], observed: Sequence[tuple[str, str, Sequence[float]]]
) -> None:
    """What the service keeps of a search a search process ran: the scores it observed (drift) and its metrics."""
    if state.engine.score_watch is not None:
        for source, fingerprint, scores in observed:
            state.engine.score_watch.observe(source, fingerprint, scores)
    state.metrics.search_done(degraded)


def _json_of_known_length(scope: dict[str, Any]) -> bool:
    """A JSON body with a Content-Length (within the body limit, which has checked it); anything else: the route's."""
    length = media = False
    for name, value in scope["headers"]:
        if name == b"content-length":
            length = value.isdigit()
        elif name == b"content-type":
            media = value.split(b";", 1)[0].strip().lower() == b"application/json"
    return length and media


async def _read_body(receive: Any) -> bytes | None:
    """The whole request body, or None if the client disconnected first."""
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts)


def _replay(body: bytes, receive: Any) -> Callable[[], Any]:
    """A ``receive`` that gives ``body`` once, then what the connection gives (its disconnect)."""
    sent = False

    async def replayed() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        message: dict[str, Any] = await receive()
        return message

    return replayed
