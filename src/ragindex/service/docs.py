"""The interactive API docs, served from this host only: Swagger UI at ``/docs``, ReDoc at ``/redoc``.

FastAPI's default pages load their scripts from a CDN; a deployment without internet access (or one that must
not make its users' browsers call a third party) gets a blank page. Here the scripts and stylesheet come from
the installed ``fastapi-offline`` package (part of the ``service`` extra; Swagger UI is Apache-2.0, ReDoc MIT),
the page's own start-up script is package data, and a Content-Security-Policy forbids loading anything from
elsewhere. ``RAGINDEX_API_DOCS=false`` turns the pages and ``/openapi.json`` off.
"""

from __future__ import annotations

from functools import cache
from html import escape
from importlib.resources import files

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, Response

from ragindex._optional import require

router = APIRouter(include_in_schema=False)

ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "redoc.standalone.js": "text/javascript; charset=utf-8",
    "favicon.png": "image/png",
}
"""The files of ``fastapi_offline/static`` the pages use, with their media types."""

# Swagger UI and ReDoc set inline styles, ReDoc runs its search in a blob: worker; nothing comes from elsewhere
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; form-action 'none'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = {"Content-Security-Policy": _CSP, "X-Content-Type-Options": "nosniff"}


def check_assets() -> None:
    """Fail at start-up, naming the extra, when the docs' assets are not installed."""
    require("service", "the API docs at /docs (RAGINDEX_API_DOCS=false turns them off)", "fastapi_offline")


@cache
def _asset(name: str) -> bytes:
    if name == "docs.js":
        return files("ragindex.service.page").joinpath("docs.js").read_bytes()
    return files("fastapi_offline").joinpath("static", name).read_bytes()


def _page(request: Request, title: str, head: str, body: str) -> HTMLResponse:
    root = escape(request.scope.get("root_path", ""), quote=True)
    html = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<link rel="icon" type="image/png" href="{root}/docs/assets/favicon.png">
{head.format(root=root)}
</head>
<body>
{body.format(root=root)}
</body>
</html>
"""
    return HTMLResponse(html, headers=_HEADERS)


@router.get("/docs")
def swagger_ui(request: Request) -> HTMLResponse:
    """Swagger UI over ``/openapi.json`` ("Authorize" takes an API key)."""
    return _page(
        request,
        "ragindex API",
        '<link rel="stylesheet" href="{root}/docs/assets/swagger-ui.css">',
        '<div id="swagger-ui" data-openapi="{root}/openapi.json"></div>\n'
        '<script src="{root}/docs/assets/swagger-ui-bundle.js"></script>\n'
        '<script src="{root}/docs/assets/docs.js"></script>',
    )


@router.get("/redoc")
def redoc(request: Request) -> HTMLResponse:
    """ReDoc over ``/openapi.json`` (one long reference page)."""
    return _page(
        request,
        "ragindex API reference",
        "",
        '<redoc spec-url="{root}/openapi.json"></redoc>\n'
        '<script src="{root}/docs/assets/redoc.standalone.js"></script>',
    )


@router.get("/docs/assets/{name}")
def asset(name: str) -> Response:
    """One of the pages' static files (a fixed list: nothing else of the filesystem is reachable)."""
    if name == "docs.js":
        media = "text/javascript; charset=utf-8"
    elif name in ASSETS:
        media = ASSETS[name]
    else:
        raise HTTPException(404, f"no docs asset {name!r}")
    return Response(_asset(name), media_type=media, headers={**_HEADERS, "Cache-Control": "public, max-age=86400"})
