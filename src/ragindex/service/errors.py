"""The handlers that give every error of the HTTP layer one JSON shape (its error classes are in ragindex.errors).

Every error body is ``RagindexError.to_dict()``'s shape: ``{"error", "message", "context"?}``;
request validation adds ``detail`` (FastAPI's list of problems) and names the first field in
``context.field``. Statuses come from ``exc.http_status``. A 405 lists in ``Allow`` every method of
the path (Starlette's own lists only the first route that matched it).
"""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from ragindex.errors import RagindexError

log = logging.getLogger(__name__)

_HTTP_NAMES = {
    400: "BadRequest",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    405: "MethodNotAllowed",
    409: "Conflict",
    413: "DocumentTooLargeError",
    415: "UnsupportedFormatError",
}


def _ragindex_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RagindexError)
    if exc.http_status >= 500:
        log.error("%s: %s", type(exc).__name__, exc.message)
    headers = {"WWW-Authenticate": "Bearer"} if exc.http_status == 401 else None
    body = jsonable_encoder(exc.to_dict())
    sources = getattr(getattr(_request.app.state, "service", None), "sources", None)
    if sources is not None:  # an error names the file it is about, never its server path (ragindex.service.sources)
        body = sources.scrub(body)
    return JSONResponse(body, status_code=exc.http_status, headers=headers)


def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = exc.errors()
    first: dict[str, Any] = dict(problems[0]) if problems else {}
    loc = [str(p) for p in first.get("loc", ())]
    if loc and loc[0] in ("body", "path", "query", "header", "cookie"):
        loc = loc[1:]
    field = ".".join(loc) or "request"
    reason = str(first.get("msg", "invalid request")).removeprefix("Value error, ")
    body = {
        "error": "ValidationError",
        "message": f"{field}: {reason}",
        "context": {"field": field},
        "detail": _finite(jsonable_encoder(problems, custom_encoder={Exception: str})),
    }
    return JSONResponse(body, status_code=422)


def _finite(value: Any) -> Any:
    """``value`` with each non-finite float as its name (``"NaN"``, ``"Infinity"``): JSON has no such numbers.

    A problem's ``input`` echoes what was sent, and Python's JSON reader takes ``NaN`` and ``Infinity``; the
    answer's encoder refuses them, which turned a 422 into a 500.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


_UNPARSABLE = "There was an error parsing the body"  # FastAPI's detail for a body it cannot decode
UNPARSABLE_MESSAGE = (
    "the request body could not be parsed: send JSON with `Content-Type: application/json` "
    "(uploads: `multipart/form-data` with `files` parts)"
)


def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    message = str(exc.detail)
    headers = dict(getattr(exc, "headers", None) or {})
    if exc.status_code == 400 and message == _UNPARSABLE:
        message = UNPARSABLE_MESSAGE
    if exc.status_code == 405:
        allowed = allowed_methods(request)
        headers["Allow"] = ", ".join(allowed)
        message = f"{request.method} is not a method of {request.url.path}; it answers {', '.join(allowed)}"
    body = {"error": _HTTP_NAMES.get(exc.status_code, "HTTPError"), "message": message}
    return JSONResponse(body, status_code=exc.status_code, headers=headers or None)


_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def allowed_methods(request: Request) -> list[str]:
    """Every method some route of the app answers at the request's path (HEAD with GET), sorted.

    Asked of the app's routes one method at a time (``route.matches`` of each, as routing asks it), so routes of
    included routers count as much as the app's own.
    """
    routes = request.app.router.routes
    return [
        method
        for method in _METHODS
        if any(route.matches({**request.scope, "method": method})[0] == Match.FULL for route in routes)
    ]


def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error", exc_info=exc)
    return JSONResponse({"error": "InternalError", "message": "internal error; see the service log"}, status_code=500)


def install_handlers(app: FastAPI) -> None:
    """Map RagindexError, request validation, HTTP errors and anything else to the one JSON shape."""
    app.add_exception_handler(RagindexError, _ragindex_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
