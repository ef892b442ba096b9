"""`ragindex mcp` over stdio: ``upsert_records`` writes records by key, ``search`` takes a metadata ``filter``.

The SDK's client drives the real server process; an invalid filter or record is a tool error naming the problem.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp", reason="the MCP server needs its extra: pip install 'ragindex[mcp]'")

from mcpkit import data, stdio_session, tool_error

pytestmark = pytest.mark.integration

RECORDS = [
    {"key": "bees-2019", "text": "A honeybee colony has one queen and thousands of workers.",
     "metadata": {"year": 2019, "lang": "en"}},
    {"key": "bees-2023", "title": "Bienen", "text": "Ein Bienenvolk hat eine Königin und viele Arbeiterinnen.",
     "metadata": {"year": 2023, "lang": "de", "tags": ["insects", "faq"]}},
    {"key": "tides", "chunks": ["Spring tides come at new and full moon.", {"text": "Neap tides come at the quarter "
     "moons.", "metadata": {"phase": "quarter"}}], "metadata": {"year": 2021, "lang": "en"}},
]  # fmt: skip
QUESTION = "how many queens does a bee colony have"


def test_records_are_upserted_and_searched_with_a_filter(tmp_path: Path) -> None:
    async def session() -> None:
        async with stdio_session(tmp_path / "data", tmp_path / "mcp.log", "--user-id", "2") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert "upsert_records" in tools and "filter" in tools["search"].input_schema["properties"]
            annotations = tools["upsert_records"].annotations
            assert annotations is not None and not annotations.read_only_hint and annotations.destructive_hint

            report = data(await client.call_tool("upsert_records", {"records": RECORDS}))
            assert report["set_id"] == 1 and report["documents"]["added"] == 3 and not report["failures"]
            again = data(await client.call_tool("upsert_records", {"records": RECORDS}))
            assert again["documents"]["unchanged"] == 3 and again["chunks"]["embedded"] == 0

            async def sources(**arguments: object) -> list[str]:
                found = data(await client.call_tool("search", {"query": QUESTION, "top_k": 10, **arguments}))
                return [hit["source"] for hit in found["hits"]]

            assert set(await sources()) == {"bees-2019", "bees-2023", "tides"}
            assert await sources(filter={"year": {"$gte": 2020}, "lang": "de"}) == ["bees-2023"]
            assert await sources(filter={"tags": {"$contains": "faq"}}) == ["bees-2023"]
            assert await sources(filter={"$not": {"lang": "en"}}) == ["bees-2023"]
            assert await sources(filter={"phase": "quarter"}, mode="dense") == ["tides"]  # a chunk's own field
            assert await sources(filter={"year": {"$lt": 2000}}) == []

            unknown = tool_error(await client.call_tool("search", {"query": QUESTION, "filter": {"yaer": 2020}}))
            assert unknown["error"] == "FilterError" and "unknown field 'yaer'" in unknown["message"]
            assert "year" in unknown["message"]  # the set's fields are listed
            typed = tool_error(await client.call_tool("search", {"query": QUESTION, "filter": {"year": "new"}}))
            assert typed["error"] == "FilterError" and "year" in typed["message"]
            wrong = tool_error(await client.call_tool("search", {"query": QUESTION, "filter": "year > 2020"}))
            assert wrong["field"] == "filter"

            clash = [{"key": "late", "text": "Wasps are not bees.", "metadata": {"year": "last year"}}]
            refused = tool_error(await client.call_tool("upsert_records", {"records": clash}))
            assert refused["error"] == "RecordError"
            assert "record 'late'" in refused["message"] and "'year' holds numbers" in refused["message"]
            two = tool_error(
                await client.call_tool("upsert_records", {"records": [{"key": "x", "text": "a", "markdown": "b"}]})
            )
            assert "exactly one of text, markdown" in two["message"]
            empty = tool_error(await client.call_tool("upsert_records", {"records": []}))
            assert empty["field"] == "records"
            assert "late" not in await sources()

    anyio.run(session)
