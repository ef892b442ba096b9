"""Issue 14, `ragindex mcp --port`: streamable HTTP with the HTTP service's per-tenant API keys.

One real server process per module over a data dir holding two tenants' documents, reached with the SDK's client
(both protocol eras: the 2026 per-request one and the handshake-era session). A key acts for its tenant only;
another tenant's ids answer "not found"; ingest is refused; the server's paths never reach a client.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import pytest

pytest.importorskip("mcp", reason="the MCP server needs its extra: pip install 'ragindex[mcp]'")

from mcp.shared.exceptions import MCPError
from mcpkit import (
    CLI,
    data,
    free_port,
    http_session,
    server_env,
    tool_error,
    wait_until_listening,
)

from corpora import THREE_DOCS, write_files
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


def test_a_request_without_a_valid_key_is_refused(running: Running) -> None:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert httpx.post(running.url, json=hello).status_code == 401
    refused = httpx.post(running.url, json=hello, headers={"Authorization": "Bearer rgx_not-a-key"})
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")


def test_search_cites_passages_without_the_servers_paths(running: Running) -> None:
    async def session() -> None:
        async with http_session(running.url, running.alice) as client:
            assert [t.name for t in (await client.list_tools()).tools] == [
                "search",
                "list_documents",
                "get_document",
                "get_chunk",
                "ingest",
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
