"""Issue 14, `ragindex mcp --port`: streamable HTTP with the HTTP service's per-tenant API keys.

One real server process per module over a data dir holding two tenants' documents, reached with the SDK's client
(both protocol eras: the 2026 per-request one and the handshake-era session). A key acts for its tenant only;
another tenant's ids answer "not found"; ingest is refused; the server's paths never reach a client. A missing or
wrong key is a 403 naming the key, which an OAuth-capable client (the SDK's with an OAuth provider, the MCP
Inspector's CLI) reports as such instead of starting an OAuth flow.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import pytest

pytest.importorskip("mcp", reason="the MCP server needs its extra: pip install 'ragindex[mcp]'")

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.shared.exceptions import MCPError
from mcpkit import (
    CLI,
    DEADLINE_S,
    data,
    free_port,
    http_session,
    server_env,
    tool_error,
    wait_until_listening,
)

from corpora import THREE_DOCS, write_files
from mcp import Client
from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.service.keys import create_key
from ragindex.service.store import SqlServiceStore

pytestmark = pytest.mark.integration

QUESTION = "how many queens does a honeybee colony have"
ALICE, BOB = 11, 12  # tenants: Alice has bees and photosynthesis, Bob has tcp


@dataclass(frozen=True)
class Running:
    url: str
    alice: str  # API keys
    bob: str
    root: Path  # everything the server's paths could leak starts with it
    alice_docs: dict[str, int]  # filename -> doc_id
    alice_chunk: str  # the bees document's chunk


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    root = tmp_path_factory.mktemp("mcp-http")
    data_dir = root / "data"
    alice_files = write_files(root / "docs" / "notes", {k: THREE_DOCS[k] for k in ("bees.txt", "photosynthesis.txt")})
    bob_files = write_files(root / "elsewhere", {"tcp.txt": THREE_DOCS["tcp.txt"]})
    settings = Settings(_env_file=None, data_dir=data_dir)  # type: ignore[call-arg]
    with Engine(settings) as engine:
        engine.ingest([alice_files], user_id=ALICE, set_id=1)
        engine.ingest([bob_files], user_id=BOB, set_id=1)
        alice_docs = {d.filename: d.doc_id for d in engine.store.list_documents(user_id=ALICE)}
        bees_chunks = engine.store.chunks_of_document(alice_docs["bees.txt"])
    store = SqlServiceStore(settings.resolved_database_url)
    try:
        alice = str(create_key(store, user_id=ALICE)["key"])
        bob = str(create_key(store, user_id=BOB)["key"])
    finally:
        store.close()
    port = free_port()
    log = root / "mcp.log"
    command = [CLI, "mcp", "--port", str(port), "--source-root", str(root / "docs")]
    with log.open("wb") as out:
        server = subprocess.Popen(command, env=server_env(data_dir), stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until_listening(port, server, log)
        yield Running(f"http://127.0.0.1:{port}/mcp", alice, bob, root, alice_docs, bees_chunks[0].chunk_id)
        server.send_signal(signal.SIGTERM)
        assert server.wait(60) == 0, log.read_text()[-3000:]
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(30)


def test_a_request_without_a_valid_key_is_refused_naming_the_key(running: Running) -> None:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for headers, says in (
        ({}, "needs a ragindex API key"),
        ({"Authorization": "Bearer rgx_not-a-key"}, "unknown or revoked"),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, "needs a ragindex API key"),
    ):
        refused = httpx.post(running.url, json=hello, headers=headers)
        # a 401 is an OAuth challenge to a client that follows the MCP authorization spec; this server does no OAuth
        assert refused.status_code == 403 and "www-authenticate" not in refused.headers, refused.headers
        error = refused.json()["error"]
        assert refused.json()["id"] is None and error["code"] == -32600, error
        assert error["data"]["error"] == "AuthenticationError", error
        assert says in error["message"] and "Authorization: Bearer <key>" in error["message"], error
        assert "ragindex keys create" in error["message"], error
    for resource in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        assert httpx.get(running.url.replace("/mcp", resource)).status_code == 404  # no OAuth metadata to find


def test_an_oauth_capable_client_without_a_key_reports_the_key_and_starts_no_oauth(running: Running) -> None:
    """The SDK's client with an OAuth provider, as the MCP Inspector connects: it must not go looking for OAuth."""
    sent: list[str] = []
    redirected: list[str] = []

    async def record(request: httpx2.Request) -> None:
        sent.append(request.url.path)

    async def redirect(url: str) -> None:
        redirected.append(url)

    async def callback() -> AuthorizationCodeResult:
        raise AssertionError("an OAuth callback was awaited")

    oauth = OAuthClientProvider(
        server_url=running.url,
        client_metadata=OAuthClientMetadata(redirect_uris=["http://127.0.0.1:9/callback"], client_name="test"),
        storage=_NoTokens(),
        redirect_handler=redirect,
        callback_handler=callback,
    )

    async def session() -> None:
        async with httpx2.AsyncClient(auth=oauth, event_hooks={"request": [record]}, timeout=DEADLINE_S) as http:
            for mode in ("auto", "legacy"):
                with pytest.raises((MCPError, BaseExceptionGroup)) as refused:
                    async with Client(streamable_http_client(running.url, http_client=http), mode=mode) as client:
                        await client.list_tools()
                error = _only_mcp_error(refused.value)
                assert "needs a ragindex API key" in error.message and "ragindex keys create" in error.message, mode

    anyio.run(session)
    assert sent and all(path == "/mcp" for path in sent), sent  # no /.well-known discovery, no /register
    assert redirected == []


def _only_mcp_error(exc: BaseException) -> MCPError:
    """The MCPError a client raised, out of the exception groups of its task groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    assert isinstance(exc, MCPError), repr(exc)
    return exc


class _NoTokens:
    """A client's empty OAuth token store."""

    async def get_tokens(self) -> OAuthToken | None:
        return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        raise AssertionError("OAuth tokens were stored")

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        raise AssertionError("an OAuth client was registered")


def test_search_cites_passages_without_the_servers_paths(running: Running) -> None:
    async def session() -> None:
        async with http_session(running.url, running.alice) as client:
            assert [t.name for t in (await client.list_tools()).tools] == [
                "search",
                "list_documents",
                "get_document",
                "get_chunk",
                "ingest",
                "upsert_records",
            ]
            found = data(await client.call_tool("search", {"query": QUESTION, "top_k": 2}))
            top = found["hits"][0]
            assert (top["doc_id"], top["filename"]) == (running.alice_docs["bees.txt"], "bees.txt")
            assert top["source"] == "notes/bees.txt"  # relative to --source-root
            assert top["citation"] == "bees.txt, line 1" and set(top["scores"]) == {"dense", "bm25"}
            doc = data(await client.call_tool("get_document", {"doc_id": top["doc_id"], "include_text": True}))
            assert doc["document"]["file"] == "notes/bees.txt" and doc["text"]["content"] == THREE_DOCS["bees.txt"]
            listed = data(await client.call_tool("list_documents", {}))
            chunk = data(await client.call_tool("get_chunk", {"chunk_id": top["chunk_id"]}))
            resources = (await client.list_resources()).resources
            for payload in (found, doc, listed, chunk, [r.model_dump() for r in resources]):
                assert str(running.root) not in json.dumps(payload), payload

    anyio.run(session)


def test_one_tenants_key_never_reaches_another_tenants_documents(running: Running) -> None:
    bees = running.alice_docs["bees.txt"]

    async def session() -> None:
        async with http_session(running.url, running.bob, mode="legacy") as client:  # a handshake-era session
            found = data(await client.call_tool("search", {"query": QUESTION, "top_k": 5}))
            assert [h["filename"] for h in found["hits"]] == ["tcp.txt"]
            assert found["hits"][0]["source"] == "tcp.txt"  # outside every root: the file name only
            only = data(await client.call_tool("search", {"query": QUESTION, "doc_ids": [bees]}))
            assert only["hits"] == []
            listed = data(await client.call_tool("list_documents", {}))
            assert [d["filename"] for d in listed["documents"]] == ["tcp.txt"]
            assert tool_error(await client.call_tool("get_document", {"doc_id": bees}))["error"] == "NotFoundError"
            missing = tool_error(await client.call_tool("get_chunk", {"chunk_id": running.alice_chunk}))
            assert missing["error"] == "NotFoundError"
            assert [r.name for r in (await client.list_resources()).resources] == ["tcp.txt"]
            with pytest.raises(MCPError, match=f"document {bees} not found"):
                await client.read_resource(f"ragindex://documents/{bees}")

        async with http_session(running.url, running.alice) as client:  # Alice still sees hers
            assert len(data(await client.call_tool("list_documents", {}))["documents"]) == 2

    anyio.run(session)


def test_a_bad_argument_is_a_tool_error_naming_the_field(running: Running) -> None:
    async def session() -> None:
        async with http_session(running.url, running.alice) as client:
            cases = [
                ({"query": QUESTION, "top_k": "ten"}, "top_k"),
                ({"query": QUESTION, "mode": "sparse"}, "mode"),  # learned sparse is not enabled here
                ({"query": QUESTION, "where": "anywhere"}, "where"),
                ({"query": 42}, "query"),
            ]
            for arguments, field in cases:
                error = tool_error(await client.call_tool("search", arguments))
                assert error["error"] == "ValidationError" and error["field"] == field, error
                assert error["message"].startswith(f"invalid argument {field}: "), error
            assert tool_error(await client.call_tool("get_document", {}))["field"] == "doc_id"

    anyio.run(session)


def test_ingest_is_refused_over_http(running: Running) -> None:
    async def session() -> None:
        async with http_session(running.url, running.alice) as client:
            refused = tool_error(await client.call_tool("ingest", {"paths": [str(running.root / "elsewhere")]}))
            assert refused["error"] == "NotAllowedError"
            assert "only available when the MCP server runs locally over stdio" in refused["message"]
            assert len(data(await client.call_tool("list_documents", {}))["documents"]) == 2

    anyio.run(session)


# ---------------------------------------------------------------------- the MCP Inspector's CLI
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"


@pytest.fixture(scope="module")
def inspector(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The MCP Inspector's CLI (``inspector --cli``), installed from the npm registry once (skip without npm)."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("the MCP Inspector needs node and npm")
    cache = getattr(request.config, "cache", None)
    prefix = cache.mkdir("mcp-inspector-2.12.0") if cache is not None else tmp_path_factory.mktemp("inspector")
    launcher = prefix / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher"
    entry = launcher / "build" / "index.js"
    if not entry.exists():
        installed = subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", INSPECTOR],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if installed.returncode != 0 or not entry.exists():
            pytest.skip(f"{INSPECTOR} did not install from the npm registry: {installed.stderr[-500:]}")
    return [str(shutil.which("node")), str(entry), "--cli"]


def _inspect(inspector: list[str], url: str, home: Path, *headers: str) -> tuple[int, str]:
    command = [*inspector, url, "--transport", "http", "--method", "tools/list"]
    for header in headers:
        command += ["--header", header]
    env = {**os.environ, "HOME": str(home), "MCP_AUTO_OPEN_ENABLED": "false"}
    done = subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
    return done.returncode, done.stdout + done.stderr


def test_the_inspector_reports_a_missing_or_wrong_key_as_such(
    running: Running, inspector: list[str], tmp_path: Path
) -> None:
    code, out = _inspect(inspector, running.url, tmp_path)
    assert code == 3 and "needs a ragindex API key" in out and "ragindex keys create" in out, out  # auth_required
    assert "OAuth" not in out, out  # before: "Interactive OAuth requires a TTY ..."
    code, out = _inspect(inspector, running.url, tmp_path, "Authorization: Bearer rgx_not-a-key")
    assert code == 3 and "unknown or revoked" in out, out
    code, out = _inspect(inspector, running.url, tmp_path, f"Authorization: Bearer {running.alice}")
    assert code == 0 and '"name": "search"' in out, out
