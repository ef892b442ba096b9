"""Issue 14, `ragindex mcp` over stdio: the SDK's client drives the real server process on a tiny corpus.

A local client acts for one tenant (--user-id), may ingest, and sees stored paths; --set-id pins the server to
one set. The server owns the embedded index while it runs and releases it when the client goes away or on SIGTERM.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp", reason="the MCP server needs its extra: pip install 'ragindex[mcp]'")

from mcp.shared.exceptions import MCPError
from mcpkit import CLI, DEADLINE_S, data, ragindex, server_env, stdio_session, tool_error

from corpora import THREE_DOCS

pytestmark = pytest.mark.integration

QUESTION = "how many queens does a honeybee colony have"


def owner_record(data_dir: Path) -> dict[str, object]:
    """The index's owner.json (empty while nobody holds the index)."""
    try:
        record = json.loads((data_dir / "index" / "owner.json").read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def test_a_local_client_ingests_searches_and_reads_documents(tmp_path: Path, corpus: Path) -> None:
    data_dir = tmp_path / "data"
    log = tmp_path / "mcp.log"

    async def session() -> None:
        async with stdio_session(data_dir, log, "--user-id", "3") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert list(tools) == ["search", "list_documents", "get_document", "get_chunk", "ingest", "upsert_records"]
            assert tools["search"].input_schema["properties"]["mode"]["enum"] == ["hybrid", "dense", "bm25"]
            assert tools["search"].input_schema["additionalProperties"] is False
            assert tools["search"].annotations is not None and tools["search"].annotations.read_only_hint
            assert tools["ingest"].annotations is not None and not tools["ingest"].annotations.read_only_hint

            report = data(await client.call_tool("ingest", {"paths": [str(corpus)]}))
            assert report["set_id"] == 1 and report["documents"]["added"] == 3 and not report["failures"]

            found = data(await client.call_tool("search", {"query": QUESTION, "top_k": 2}))
            assert found["set_id"] == 1 and found["mode"] == "hybrid" and len(found["hits"]) == 2
            top = found["hits"][0]
            assert top["filename"] == "bees.txt"
            assert top["source"] == str(corpus / "bees.txt")  # a local client may open the file
            assert top["citation"] == "bees.txt, line 1" and (top["start_line"], top["end_line"]) == (1, 1)
            assert top["text"] == THREE_DOCS["bees.txt"]
            assert set(top["scores"]) == {"dense", "bm25"} and top["scores"]["dense"]["rank"] == 1

            bad = tool_error(await client.call_tool("search", {"query": QUESTION, "top_k": 500}))
            assert bad["field"] == "top_k" and "less than or equal to 50" in bad["message"]
            assert tool_error(await client.call_tool("search", {"top_k": 3}))["field"] == "query"

            listed = data(await client.call_tool("list_documents", {}))
            by_name = {d["filename"]: d for d in listed["documents"]}
            assert set(by_name) == set(THREE_DOCS) and listed["next_cursor"] is None
            bees = by_name["bees.txt"]
            assert bees["doc_id"] == top["doc_id"] and bees["status"] == "SUCCESS"
            assert bees["uri"] == f"ragindex://documents/{bees['doc_id']}"

            doc = data(
                await client.call_tool(
                    "get_document", {"doc_id": bees["doc_id"], "include_text": True, "include_chunks": True}
                )
            )
            assert doc["document"]["source"] == str(corpus / "bees.txt")
            assert doc["text"] == {
                "content": THREE_DOCS["bees.txt"],
                "chars": len(THREE_DOCS["bees.txt"]),
                "truncated": False,
            }
            assert top["chunk_id"] in {c["chunk_id"] for c in doc["chunks"]}

            chunk = data(await client.call_tool("get_chunk", {"chunk_id": top["chunk_id"]}))
            assert (chunk["doc_id"], chunk["text"], chunk["citation"]) == (bees["doc_id"], top["text"], top["citation"])
            assert chunk["statuses"] == {"dense": "SUCCESS", "bm25": None}  # bm25 belongs to the sections

            resources = (await client.list_resources()).resources
            assert {r.uri for r in resources} == {d["uri"] for d in listed["documents"]}
            read = await client.read_resource(bees["uri"])
            assert read.contents[0].text == THREE_DOCS["bees.txt"]  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="document 999 not found"):
                await client.read_resource("ragindex://documents/999")
            assert str(owner_record(data_dir)["command"]).startswith("ragindex mcp")
            other = await anyio.to_thread.run_sync(lambda: ragindex(data_dir, "ingest", str(corpus)))
            assert other.returncode == 4 and "ragindex mcp" in other.stderr, other.stderr  # one owner of the index

    anyio.run(session)
    assert owner_record(data_dir) == {}, "the server kept the index after its client went away"

    async def pinned() -> None:  # the same tenant, the server pinned to set 2: set 1's documents are out of reach
        async with stdio_session(data_dir, log, "--user-id", "3", "--set-id", "2", warm_up="false") as client:
            assert data(await client.call_tool("list_documents", {}))["documents"] == []
            refused = tool_error(await client.call_tool("search", {"query": QUESTION, "set_id": 1}))
            assert refused["field"] == "set_id" and "serves set 2 only" in refused["message"]
            missing = tool_error(await client.call_tool("get_document", {"doc_id": 1}))
            assert missing["error"] == "NotFoundError"
            assert (await client.list_resources()).resources == []

    anyio.run(pinned)


def test_sigterm_stops_a_server_whose_client_keeps_stdin_open(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = server_env(data_dir, warm_up="false")
    pipe = subprocess.PIPE
    with subprocess.Popen([CLI, "mcp"], env=env, stdin=pipe, stdout=pipe, stderr=pipe) as server:
        assert server.stdin is not None and server.stdout is not None and server.stderr is not None
        try:
            server.stdin.write(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n')
            server.stdin.flush()
            assert json.loads(server.stdout.readline()) == {"jsonrpc": "2.0", "id": 1, "result": {}}
            assert owner_record(data_dir)["pid"] == server.pid
            server.send_signal(signal.SIGTERM)  # stdin stays open: the server must not wait for it
            assert server.wait(60) == 0
            assert "stopped (SIGTERM)" in server.stderr.read().decode()
        finally:
            if server.poll() is None:
                server.kill()
    assert owner_record(data_dir) == {}


def test_without_the_sdk_the_command_names_the_extra(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['mcp'] = None; sys.argv = ['ragindex', 'mcp']; from ragindex.cli import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=server_env(tmp_path / "data"),
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert done.returncode == 3, done.stderr
    assert "pip install 'ragindex[mcp]'" in done.stderr


def test_over_http_the_key_decides_the_tenant_not_user_id(tmp_path: Path) -> None:
    done = ragindex(tmp_path / "data", "mcp", "--port", "8765", "--user-id", "2")
    assert done.returncode == 2, done.stderr
    assert "--user-id: over HTTP each request acts for the tenant of its API key" in done.stderr
