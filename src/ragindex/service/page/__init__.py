"""The retrieval-testing page ("hit testing"): ``GET /`` and its two static files, shipped as package data.

Plain HTML, one small vanilla script and one stylesheet; nothing is loaded from elsewhere (the
Content-Security-Policy says so), and the page only calls the public ``/v1`` API with the key the
user types.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from fastapi import APIRouter
from fastapi.responses import Response

router = APIRouter(include_in_schema=False)

_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = {"Content-Security-Policy": _CSP, "X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"}


@cache
def _asset(name: str) -> bytes:
    return files(__name__).joinpath(name).read_bytes()


@router.get("/")
def page() -> Response:
    """The page: an API key, a set, a query and its options; the ranked hits; the documents of the set."""
    return Response(_asset("index.html"), media_type="text/html; charset=utf-8", headers=_HEADERS)


@router.get("/page/app.js")
def script() -> Response:
    """The page's script."""
    return Response(_asset("app.js"), media_type="text/javascript; charset=utf-8", headers=_HEADERS)


@router.get("/page/app.css")
def stylesheet() -> Response:
    """The page's stylesheet."""
    return Response(_asset("app.css"), media_type="text/css; charset=utf-8", headers=_HEADERS)
