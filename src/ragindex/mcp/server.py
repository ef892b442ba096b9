"""The MCP server (the official ``mcp`` SDK's low-level ``Server``) over one engine: stdio or streamable HTTP.

Over stdio the server acts for one tenant (``--user-id``) and may ingest; over HTTP each request carries an API
key of the HTTP service (``Authorization: Bearer rgx_...``, from ``ragindex keys create``) and acts for the key's
tenant, ingest refused; a request without a valid key gets a 403 whose message names the key (not an OAuth
challenge: this server does no OAuth). Tools and resources are the same either way (:mod:`ragindex.mcp.tools`).
Engine calls are blocking, so they run on worker threads; the engine (a
:class:`~ragindex.service.executor.ServiceEngine`) serialises index calls on its index thread and batches
concurrent query encodings, as ``ragindex serve`` does.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from starlette.authentication import AuthCredentials

from ragindex.errors import NotFoundError, RagindexError
from ragindex.mcp import schemas
from ragindex.mcp.tools import DOCUMENT_URI, Tenant, Toolbox, document_uri, error_payload, parse_arguments
from ragindex.service.keys import authenticate

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream
    from starlette.applications import Starlette

    from ragindex.service.store import ApiKeyStore

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
ragindex: a search index over the user's documents. To answer from them, call `search` with the question and cite \
the `citation` of the passages you use; `get_chunk` and `get_document` read a hit or its whole document, \
`list_documents` shows what is indexed (also as resources ragindex://documents/{doc_id}). Scores are relative: \
trust the order, not the number."""

_DOCUMENT_URI = re.compile(r"ragindex://documents/([1-9][0-9]{0,18})")
_Ctx = ServerRequestContext[Any, Any]


class RagindexMcp:
    """The MCP server of one engine.

    Args:
        toolbox: The tools over the process's engine.
        tenant: Who the current request acts for (a fixed tenant over stdio, the API key's over HTTP).
        version: The server version reported to clients.
    """

    def __init__(self, toolbox: Toolbox, tenant: Callable[[], Tenant], *, version: str = "") -> None:
        self.toolbox = toolbox
        self.tenant = tenant
        self.server: Server[Any] = Server(
            "ragindex",
            version=version,
            title="ragindex document search",
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
        )

    # ------------------------------------------------------------------ tools
    def tools(self) -> list[types.Tool]:
        """The tool definitions (search's ``mode`` enum lists the modes this engine supports)."""
        modes = self.toolbox.modes
        return [
            types.Tool(
                name=name,
                title=schemas.TITLES[name],
                description=schemas.DESCRIPTIONS[name],
                input_schema=schemas.input_schema(name, modes),
                annotations=types.ToolAnnotations(
                    title=schemas.TITLES[name],
                    read_only_hint=name in schemas.READ_ONLY,
                    # a sync removes the documents of vanished files; an upsert replaces the documents of its keys
                    destructive_hint=name in (schemas.INGEST, schemas.UPSERT_RECORDS),
                    idempotent_hint=True,
                    open_world_hint=False,
                ),
            )
            for name in schemas.ARGS
        ]

    async def _list_tools(self, _ctx: _Ctx, _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools())

    async def _call_tool(self, _ctx: _Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            tenant = self.tenant()
            args = parse_arguments(params.name, params.arguments, self.toolbox.modes)
            payload = await anyio.to_thread.run_sync(self.toolbox.run, args, tenant)
        except MCPError:  # a protocol error (no tenant): the request itself is wrong, not the call
            raise
        except Exception as exc:  # every failure is a tool error the model can read and act on, never a crash
            error = error_payload(exc)
            text = f"{error['error']}: {error['message']}"
            return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=error, is_error=True)
        text = json.dumps(payload, ensure_ascii=False, default=str)
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=payload)

    # ------------------------------------------------------------------ resources
    async def _list_resources(
        self, _ctx: _Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        tenant = self.tenant()
        cursor = params.cursor if params is not None else None
        try:
            docs, next_cursor = await anyio.to_thread.run_sync(self.toolbox.resource_page, tenant, cursor)
        except RagindexError as exc:
            raise _mcp_error(exc) from exc
        resources = []
        for doc in docs:
            summary = self.toolbox.summary(doc)
            resources.append(
                types.Resource(
                    uri=document_uri(doc.doc_id),
                    name=doc.filename,
                    title=f"{doc.filename} (doc {doc.doc_id}, set {doc.set_id})",
                    description=f"{summary['source']}: {doc.status}, {doc.chunk_count} chunks",
                    mime_type="text/markdown",
                )
            )
        return types.ListResourcesResult(resources=resources, next_cursor=next_cursor)

    async def _list_resource_templates(
        self, _ctx: _Ctx, _params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            uri_template=DOCUMENT_URI,
            name="document",
            title="A document's parsed text",
            description="The text (markdown) a document was parsed into; doc_id from list_documents or a search hit.",
            mime_type="text/markdown",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def _read_resource(self, _ctx: _Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        tenant = self.tenant()
        match = _DOCUMENT_URI.fullmatch(str(params.uri))
        if match is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown resource {params.uri!r}: documents are ragindex://documents/{{doc_id}}",
                data={"uri": str(params.uri)},
            )
        try:
            text = await anyio.to_thread.run_sync(self.toolbox.read_document, int(match.group(1)), tenant)
        except RagindexError as exc:
            raise _mcp_error(exc, uri=str(params.uri)) from exc
        contents = types.TextResourceContents(uri=params.uri, text=text, mime_type="text/markdown")
        return types.ReadResourceResult(contents=[contents])


def _mcp_error(exc: RagindexError, **data: Any) -> MCPError:
    """A protocol error for a failed resource request (resources have no ``isError`` result)."""
    code = types.INVALID_PARAMS if isinstance(exc, NotFoundError) or exc.http_status < 500 else types.INTERNAL_ERROR
    return MCPError(code=code, message=exc.message, data={**exc.to_dict(), **data})


# ---------------------------------------------------------------------- HTTP: API keys
KEY_HINT = "send `Authorization: Bearer <key>` with a key from `ragindex keys create --user-id <tenant>`"
MISSING_KEY = f"this MCP server needs a ragindex API key: {KEY_HINT}"
WRONG_KEY = f"the API key is unknown or revoked: {KEY_HINT}"


class ApiKeyVerifier:
    """The HTTP service's API keys as the SDK's access tokens, checked on every request (revocation is immediate).

    Args:
        store: Where the keys are (the service store on the truth store's database).
    """

    def __init__(self, store: ApiKeyStore) -> None:
        self.store = store

    async def verify_token(self, token: str) -> AccessToken | None:
        """The key's principal as an access token (client_id: the key id; subject: the tenant), or None."""
        principal = await anyio.to_thread.run_sync(authenticate, self.store, token)
        if principal is None:
            return None
        return AccessToken(
            token=token,
            client_id=principal.key_id,
            scopes=[],
            subject=str(principal.user_id),
            claims={"user_id": principal.user_id},
        )


class ApiKeyMiddleware:
    """Let through only requests with a valid API key; refuse the others with a 403 that names the key.

    Not the SDK's bearer challenge: its 401 is an OAuth challenge, and a client that follows the MCP authorization
    spec (the MCP Inspector, any client with an OAuth provider) answers every 401 by starting an OAuth flow, which
    this server does not offer (no ``/.well-known/oauth-protected-resource``), instead of telling its user the key
    is missing. The 403 carries no ``WWW-Authenticate``; its body is a JSON-RPC error (``id`` null: the body is
    not read before the key is checked) whose message says how to send a key, which clients show as the error.
    A request that passes carries its principal as the SDK's authenticated user, as the SDK's own bearer check
    would set it (``get_access_token()``, the session's owner). Other paths than the endpoint's pass unchecked:
    the app has nothing there (404), which is what a client probing for OAuth metadata must find.

    Args:
        app: The streamable HTTP app.
        verifier: Checks a key.
        path: The MCP endpoint's path.
    """

    def __init__(self, app: Any, verifier: ApiKeyVerifier, path: str) -> None:
        self.app = app
        self.verifier = verifier
        self.path = path.rstrip("/")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Check the key of an HTTP request to the endpoint (lifespan, other scopes and paths pass)."""
        if scope["type"] != "http" or str(scope.get("path", "")).rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        header = _header(scope, b"authorization")
        scheme, _, key = header.partition(" ")
        if not header:
            await _refuse(send, MISSING_KEY)
            return
        token = await self.verifier.verify_token(key.strip()) if scheme.lower() == "bearer" else None
        if token is None:
            await _refuse(send, WRONG_KEY if scheme.lower() == "bearer" else MISSING_KEY)
            return
        scope["user"] = AuthenticatedUser(token)
        scope["auth"] = AuthCredentials(token.scopes)
        await self.app(scope, receive, send)


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1").strip()
    return ""


async def _refuse(send: Any, message: str) -> None:
    data = {"error": "AuthenticationError", "context": {"header": "Authorization"}}  # the HTTP API's error name
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": types.INVALID_REQUEST, "message": message, "data": data}}
    ).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 403, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def key_tenant(set_id: int | None) -> Callable[[], Tenant]:
    """The tenant of the current HTTP request: the user of its API key (and the server's set, if it has one)."""

    def tenant() -> Tenant:
        token = get_access_token()
        user_id = (token.claims or {}).get("user_id") if token is not None else None
        if not isinstance(user_id, int):  # the key middleware lets no request without a valid key through
            raise MCPError(code=types.INVALID_REQUEST, message=MISSING_KEY)
        return Tenant(user_id=user_id, set_id=set_id, local=False)

    return tenant


def http_app(server: RagindexMcp, store: ApiKeyStore, *, host: str, path: str = "/mcp") -> Starlette:
    """The streamable HTTP app at ``path`` (for an interface ``host``): every request needs a valid API key.

    The key is checked by :class:`ApiKeyMiddleware` in front of the SDK's app (a 403 naming the key otherwise).
    """
    app = server.server.streamable_http_app(streamable_http_path=path, host=host)
    app.add_middleware(AuthContextMiddleware)  # the checked key's principal -> get_access_token()
    app.add_middleware(ApiKeyMiddleware, verifier=ApiKeyVerifier(store), path=path)  # added last: runs first
    return app


async def serve_stdio(server: RagindexMcp) -> None:
    """Serve one client over this process's stdin and stdout until the client closes stdin (or a cancellation)."""
    from mcp.server.stdio import stdio_server

    lowlevel = server.server
    async with stdin_lines() as lines:
        # the SDK only iterates its stdin: a receive stream of lines stands in for the file it would wrap
        stdin = cast("anyio.AsyncFile[str]", lines)
        async with stdio_server(stdin=stdin) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


@asynccontextmanager
async def stdin_lines() -> AsyncIterator[MemoryObjectReceiveStream[str]]:
    """The lines of stdin (UTF-8), read by a daemon thread; the stream ends when the client closes stdin.

    The SDK reads stdin on an AnyIO worker thread, which a cancellation waits for and the interpreter joins at
    exit: a server told to stop (SIGTERM) while its client keeps stdin open would hang there. A daemon thread
    blocked in a read holds up neither.
    """
    send, receive = anyio.create_memory_object_stream[str](16)
    token = anyio.lowlevel.current_token()
    fd = os.dup(0)

    def pump() -> None:
        try:
            with open(fd, encoding="utf-8", errors="replace") as lines:
                for line in lines:
                    anyio.from_thread.run(send.send, line, token=token)
        except Exception:  # the server has ended (RunFinishedError, closed stream) or stdin broke: stop reading
            log.debug("stdin reader stopped", exc_info=True)
        finally:
            with contextlib.suppress(Exception):
                anyio.from_thread.run_sync(send.close, token=token)

    threading.Thread(target=pump, name="ragindex-mcp-stdin", daemon=True).start()
    async with receive:
        yield receive
