"""Issue 14, the MCP server's pure parts: argument validation that names the field, set scoping, shown paths."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from ragindex.errors import InputError, NotFoundError, ValidationError
from ragindex.mcp import schemas
from ragindex.mcp.paths import SourceView
from ragindex.mcp.tools import Tenant, citation, error_payload, parse_arguments

MODES = ("hybrid", "dense", "bm25")


def failure(name: str, arguments: dict[str, object]) -> dict[str, object]:
    """The tool error payload of a call whose arguments fail validation."""
    with pytest.raises(pydantic.ValidationError) as caught:
        parse_arguments(name, arguments, MODES)
    return error_payload(caught.value)


@pytest.mark.parametrize(
    ("arguments", "field", "words"),
    [
        ({}, "query", "required"),
        ({"query": "bees", "top_k": 0}, "top_k", "greater than or equal to 1"),
        ({"query": "bees", "top_k": schemas.MAX_TOP_K + 1}, "top_k", "less than or equal to 50"),
        ({"query": "bees", "top_k": "5"}, "top_k", "valid integer"),
        ({"query": "bees", "mode": "fuzzy"}, "mode", "hybrid"),
        ({"query": "bees", "mode": "sparse"}, "mode", "not enabled on this server"),
        ({"query": "bees", "limit": 3}, "limit", "not an argument of this tool"),
        ({"query": "bees", "doc_ids": [0]}, "doc_ids.0", "greater than 0"),
        ({"query": "bees", "context_chars": 20_001}, "context_chars", "less than or equal to 20000"),
        ({"query": ""}, "query", "at least 1 character"),
    ],
)
def test_a_bad_search_argument_is_an_error_naming_the_field(arguments: dict[str, object], field: str, words: str):
    payload = failure(schemas.SEARCH, arguments)
    assert payload["error"] == "ValidationError"
    assert payload["field"] == field
    message = str(payload["message"])
    assert message.startswith(f"invalid argument {field}: "), message
    assert words in message, message


def test_every_problem_is_listed_and_the_first_named():
    payload = failure(schemas.SEARCH, {"top_k": True, "extra": 1})
    fields = [p["field"] for p in payload["problems"]]  # type: ignore[attr-defined]
    assert fields == ["query", "top_k", "extra"]
    assert payload["field"] == "query" and "(and 2 more problems)" in str(payload["message"])


def test_the_other_tools_validate_their_arguments():
    assert failure(schemas.GET_DOCUMENT, {"doc_id": "7"})["field"] == "doc_id"
    assert failure(schemas.GET_DOCUMENT, {"doc_id": 1, "max_chars": 0})["field"] == "max_chars"
    assert failure(schemas.GET_CHUNK, {})["field"] == "chunk_id"
    assert failure(schemas.LIST_DOCUMENTS, {"status": "DONE"})["field"] == "status"
    assert failure(schemas.INGEST, {"paths": []})["field"] == "paths"
    assert failure(schemas.INGEST, {"paths": "/tmp/docs"})["field"] == "paths"


def test_valid_arguments_get_their_defaults():
    args = parse_arguments(schemas.SEARCH, {"query": "bees"}, MODES)
    assert isinstance(args, schemas.SearchArgs)
    assert (args.mode, args.top_k, args.set_id, args.expand) == ("hybrid", 5, None, None)


def test_an_unknown_tool_is_an_input_error_listing_the_tools():
    with pytest.raises(InputError, match="unknown tool 'grep'; the tools are: search, list_documents"):
        parse_arguments("grep", {}, MODES)


def test_the_schemas_forbid_unknown_arguments_and_bound_numbers():
    for name in schemas.ARGS:
        assert schemas.input_schema(name)["additionalProperties"] is False, name
    search = schemas.input_schema(schemas.SEARCH, MODES)["properties"]
    assert search["mode"]["enum"] == list(MODES)
    assert (search["top_k"]["minimum"], search["top_k"]["maximum"]) == (1, schemas.MAX_TOP_K)
    assert schemas.input_schema(schemas.SEARCH)["required"] == ["query"]


def test_error_payloads_of_ragindex_errors_keep_class_message_and_field():
    payload = error_payload(ValidationError("set_id", "this server serves set 2 only"))
    assert payload == {
        "error": "ValidationError",
        "message": "set_id: this server serves set 2 only",
        "context": {"field": "set_id"},
        "field": "set_id",
    }
    assert error_payload(NotFoundError("document 9 not found", doc_id=9))["context"] == {"doc_id": 9}


def test_an_unexpected_exception_is_reported_without_its_details():
    payload = error_payload(KeyError("/srv/secret/path"))
    assert payload["error"] == "InternalError"
    assert "secret" not in str(payload["message"]) and "server's log" in str(payload["message"])


def test_a_server_pinned_to_a_set_refuses_another():
    pinned = Tenant(user_id=3, set_id=2)
    assert pinned.target_set(None) == 2 and pinned.listed_set(None) == 2 and pinned.target_set(2) == 2
    with pytest.raises(ValidationError, match="set_id: this server serves set 2 only"):
        pinned.target_set(1)
    free = Tenant(user_id=3)
    assert free.target_set(None) == 1 and free.listed_set(None) is None and free.target_set(7) == 7


def test_sources_are_shown_as_stored_locally_and_never_absolute_over_http(tmp_path: Path):
    docs = tmp_path / "docs"
    blobs = tmp_path / "blobs"
    stored = str(docs / "guides" / "bees.md")
    assert SourceView(local=True, roots=[docs]).source(stored, user_id=1, set_id=1) == stored
    remote = SourceView(local=False, roots=[docs], blob_root=blobs)
    assert remote.source(stored, user_id=1, set_id=1) == "guides/bees.md"
    assert remote.source(str(docs / "data.jsonl") + "#r7", user_id=1, set_id=1) == "data.jsonl#r7"
    assert remote.source(str(blobs / "4" / "2" / "upload.pdf"), user_id=4, set_id=2) == "upload.pdf"
    # another tenant's upload folder is not this document's root: only the name is shown
    assert remote.source(str(blobs / "5" / "2" / "upload.pdf"), user_id=4, set_id=2) == "upload.pdf"
    assert remote.source("/elsewhere/x/report.txt", user_id=1, set_id=1) == "report.txt"
    assert remote.source(str(docs) + "-old/a.txt", user_id=1, set_id=1) == "a.txt"  # a sibling, not under the root
    error = f"cannot parse {stored}: bad header"
    assert remote.scrub(error, stored, user_id=1, set_id=1) == "cannot parse guides/bees.md: bad header"


def test_citations_name_file_page_section_and_lines():
    hit = {"filename": "guide.pdf", "page": 3, "section": "Hives", "start_line": 10, "end_line": 14}
    assert citation(hit) == 'guide.pdf, page 3, section "Hives", lines 10-14'
    assert citation({"filename": "a.txt", "page": None, "section": None, "start_line": 2, "end_line": 2}) == (
        "a.txt, line 2"
    )
