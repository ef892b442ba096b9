"""Strict, complete HTTP contracts (issue 23): what Schemathesis found on `/openapi.json`, one reproduction each.

Request bodies take each value only as its own JSON type (strict models; an integer may be written `2.0`, as JSON
Schema has it); path and query parameters only as their JSON spelling; a 405 lists every method of its path; a body
that is not JSON is a 400 naming the fix; every status a route answers is in its documented responses; and the
schema refuses what the server refuses (the deployment's sources, an empty PATCH, an empty upload, ...).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from conftest import Service, upload, wait_for_job
from ragindex.service.hygiene import DIFY_PATHS
from ragindex.service.openapi import rerank_available
from ragindex.service.schemas import MAX_ID, WHITESPACE

pytestmark = pytest.mark.integration

USER, ADMIN = 601, 602  # this module's tenants (other modules use other ids)


@pytest.fixture(scope="module")
def keys(service: Service) -> dict[str, str]:
    return {"user": service.key(USER), "admin": service.key(ADMIN, admin=True)}


@pytest.fixture(scope="module")
def chunk(service: Service, keys: dict[str, str]) -> dict[str, Any]:
    """A chunk of the tenant's one document."""
    with service.client(keys["user"]) as client:
        answer = upload(client, 1, {"otters.md": "# Otters\n\nSea otters hold hands while they sleep.\n"})
        assert answer.status_code == 202, answer.text
        assert wait_for_job(client, answer.json()["job_id"])["status"] == "succeeded"
        hits = client.post("/v1/search", json={"query": "otters sleep", "set_id": 1}).json()["hits"]
    assert hits
    return dict(hits[0])


@pytest.fixture(scope="module")
def spec(service: Service) -> dict[str, Any]:
    return dict(httpx.get(f"{service.url}/openapi.json").json())


def _refused(answer: httpx.Response, field: str) -> None:
    assert answer.status_code == 422, answer.text
    assert answer.json()["context"]["field"] == field, answer.text


# ---------------------------------------------------------------------- strict bodies and parameters
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"top_k": "2"}, "top_k"),
        ({"top_k": True}, "top_k"),
        ({"top_k": 2.5}, "top_k"),
        ({"context_chars": False}, "context_chars"),
        ({"set_id": "1"}, "set_id"),
        ({"doc_ids": ["1"]}, "doc_ids.0"),
        ({"rerank": 1}, "rerank"),
        ({"score_threshold": True}, "score_threshold"),
        ({"score_threshold": -0.5}, "score_threshold"),
        ({"query": 7}, "query"),
    ],
)
def test_a_search_body_takes_each_value_only_as_its_json_type(
    service: Service, keys: dict[str, str], change: dict[str, Any], field: str
) -> None:
    with service.client(keys["user"]) as client:
        _refused(client.post("/v1/search", json={"query": "otters", "set_id": 1, **change}), field)


def test_an_integer_may_be_written_as_a_json_number_without_a_fraction(
    service: Service, keys: dict[str, str], chunk: dict[str, Any]
) -> None:
    with service.client(keys["user"]) as client:
        found = client.post("/v1/search", json={"query": "otters sleep", "set_id": 1.0, "top_k": 2.0})
    assert found.status_code == 200, found.text  # JSON Schema's integer: 2.0 is 2
    assert [h["chunk_id"] for h in found.json()["hits"]][:1] == [chunk["chunk_id"]]


@pytest.mark.parametrize("dry_run", [0, 1, "yes", "true", None])
def test_repair_takes_dry_run_only_as_a_boolean(service: Service, keys: dict[str, str], dry_run: object) -> None:
    with service.client(keys["admin"]) as admin:
        answer = admin.post("/v1/repair", json={"dry_run": dry_run})
    _refused(answer, "dry_run")  # `0` ran a real repair, `"yes"` a dry one


def test_repair_with_a_boolean_runs(service: Service, keys: dict[str, str]) -> None:
    with service.client(keys["admin"]) as admin:
        answer = admin.post("/v1/repair", json={"dry_run": True})
    assert answer.status_code == 200 and answer.json()["dry_run"] is True, answer.text


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/v1/documents?limit=%2B5", "limit"),
        ("/v1/documents?limit=%205", "limit"),
        ("/v1/documents?limit=5_0", "limit"),
        ("/v1/documents?limit=true", "limit"),
        ("/v1/documents?set_id=07", "set_id"),
        ("/v1/jobs?limit=1e999999999", "limit"),
        ("/v1/sets/%2B1/documents", "set_id"),
        ("/v1/documents/{doc_id}?chunks=yes", "chunks"),
        ("/v1/documents/{doc_id}?chunks=1", "chunks"),
        ("/v1/documents/{doc_id}?chunks=on", "chunks"),
    ],
)
def test_a_parameter_takes_only_its_json_spelling(
    service: Service, keys: dict[str, str], chunk: dict[str, Any], url: str, field: str
) -> None:
    with service.client(keys["user"]) as client:
        _refused(client.get(url.format(doc_id=chunk["doc_id"])), field)


def test_a_parameter_in_its_json_spelling_is_read(
    service: Service, keys: dict[str, str], chunk: dict[str, Any]
) -> None:
    with service.client(keys["user"]) as client:
        assert client.get("/v1/documents", params={"limit": "5"}).status_code == 200
        assert client.get("/v1/documents", params={"limit": "5.0"}).json()["documents"]  # a whole JSON number
        detail = client.get(f"/v1/documents/{chunk['doc_id']}", params={"chunks": "true"})
    assert detail.status_code == 200 and detail.json()["chunks"], detail.text


# ---------------------------------------------------------------------- 405, 400
@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/v1/chunks/x", "DELETE, GET, PATCH"),
        ("OPTIONS", "/v1/chunks/x", "DELETE, GET, PATCH"),
        ("OPTIONS", "/v1/sets/1/documents", "GET, POST"),
        ("POST", "/v1/documents/1", "DELETE, GET"),
        ("PATCH", "/v1/jobs/abc", "DELETE, GET"),
        ("GET", "/v1/search", "POST"),
    ],
)
def test_a_405_lists_every_method_of_the_path(
    service: Service, keys: dict[str, str], method: str, path: str, allow: str
) -> None:
    with service.client(keys["user"]) as client:
        answer = client.request(method, path)
    assert answer.status_code == 405, answer.text
    assert answer.headers["allow"] == allow  # Starlette's listed the first matching route's only (`GET`)
    body = answer.json()
    assert body["error"] == "MethodNotAllowed" and allow in body["message"] and path in body["message"], body


def test_a_body_that_cannot_be_parsed_is_a_400_naming_the_fix(service: Service, keys: dict[str, str]) -> None:
    with service.client(keys["user"]) as client:
        answer = client.post("/v1/search", content=b"\xffD\xfelH}r\x17", headers={"Content-Type": "application/json"})
    assert answer.status_code == 400, answer.text
    body = answer.json()
    assert body["error"] == "BadRequest" and "Content-Type: application/json" in body["message"], body


# ---------------------------------------------------------------------- PATCH refuses what its schema refuses
@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({}, "text"),
        ({"text": None}, "text"),
        ({"text": None, "metadata": {"reviewed": "yes"}}, "text"),  # accepted before: the schema refused it
        ({"metadata": None}, "metadata"),
        ({"text": ""}, "text"),
        ({"text": " \n\t\u3000"}, "text"),
        ({"text": 5}, "text"),
        ({"metadata": ["a"]}, "metadata"),
    ],
)
def test_a_patch_is_refused_as_its_schema_refuses_it(
    service: Service, keys: dict[str, str], chunk: dict[str, Any], patch: dict[str, Any], field: str
) -> None:
    with service.client(keys["user"]) as client:
        answer = client.patch(f"/v1/chunks/{chunk['chunk_id']}", json=patch)
    _refused(answer, field)
    assert "Value error" not in answer.json()["message"], answer.text  # pydantic's prefix is left out


# ---------------------------------------------------------------------- the schema
def test_the_schema_refuses_what_the_server_refuses(service: Service, spec: dict[str, Any]) -> None:
    schemas = spec["components"]["schemas"]
    patch = schemas["ChunkPatch"]
    assert patch["minProperties"] == 1 and patch["additionalProperties"] is False
    text = patch["properties"]["text"]
    assert text["type"] == "string" and "anyOf" not in text and "default" not in text  # null is not a value
    assert set(text["pattern"][2:-1]) == set(WHITESPACE)  # "[^...]": something besides whitespace
    search = schemas["SearchRequest"]
    assert search["additionalProperties"] is False
    props = search["properties"]
    assert props["score_threshold"]["anyOf"][0]["minimum"] == 0
    # this deployment searches dense and BM25 (learned sparse is not configured): no other mode or source
    assert props["mode"]["anyOf"][0]["enum"] == ["hybrid", "dense", "bm25"]
    assert props["sources"]["anyOf"][0]["items"]["enum"] == ["dense", "bm25"]
    rerank = props["rerank"]["anyOf"]
    assert rerank == (
        [{"type": "boolean"}, {"type": "null"}]
        if rerank_available(service.state)
        else [
            {"const": False},
            {"type": "null"},
        ]
    )
    rules = {(next(iter(r["if"]["properties"])), json.dumps(r["then"])) for r in search["allOf"] if "if" in r}
    assert ("mode", json.dumps({"properties": {"sources": {"contains": {"const": "bm25"}}}})) in rules
    assert ("rerank", json.dumps({"properties": {"score_threshold": {"maximum": 1.0}}})) in rules
    # a query vector has the dense model's dimension, and a search has a query or a vector
    vector = props["vector"]["anyOf"][0]
    assert vector["minItems"] == vector["maxItems"] == service.state.engine.dense.dimension == 384
    assert {
        "anyOf": [{"required": ["query"]}, {"required": ["vector"], "properties": {"vector": {"type": "array"}}}]
    } in (search["allOf"])
    assert props["set_id"]["maximum"] == MAX_ID == 2**53 - 1  # what every JSON client reads exactly
    upload_body = spec["paths"]["/v1/sets/{set_id}/documents"]["post"]["requestBody"]["content"]
    ref = upload_body["multipart/form-data"]["schema"]["$ref"].rsplit("/", 1)[-1]
    files = schemas[ref]["properties"]["files"]
    assert files["minItems"] == 1 and files["maxItems"] == service.state.service.max_upload_files
    for path, listing in (("/v1/documents", "documents"), ("/v1/jobs", "jobs")):
        cursor = next(p for p in spec["paths"][path]["get"]["parameters"] if p["name"] == "cursor")["schema"]
        assert cursor["format"] == f"ragindex-{listing}-cursor" and cursor["type"] == "string", cursor


def test_every_status_a_route_answers_is_documented_with_the_error_body(spec: dict[str, Any]) -> None:
    expected = {
        ("post", "/v1/search"): {"400", "401", "409", "413", "422", "502", "503"},
        ("patch", "/v1/chunks/{chunk_id}"): {"400", "401", "404", "409", "413", "422", "503"},
        ("post", "/v1/sets/{set_id}/documents"): {"400", "401", "413", "415", "422", "503"},
        ("post", "/v1/repair"): {"400", "401", "403", "409", "413", "422", "503"},
        ("delete", "/v1/jobs/{job_id}"): {"401", "404", "409", "422", "503"},
        ("get", "/metrics"): {"401", "403", "503"},
    }
    for (method, path), statuses in expected.items():
        assert set(spec["paths"][path][method]["responses"]) >= statuses, (method, path)
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            dify = path in DIFY_PATHS  # Dify's External Knowledge API: its own key errors (403) and 2001 (404)
            if path.startswith("/v1/") and not dify:  # the key is checked against the store: 401 without one
                assert {"401", "503"} <= set(responses), (method, path)
            if dify:
                assert {"403", "404", "422", "503"} <= set(responses), (method, path)
            for status, answer in responses.items():
                if dify and status in ("403", "404"):
                    assert answer["content"]["application/json"]["schema"]["$ref"].endswith("/DifyErrorOut")
                elif status.startswith(("4", "5")) and path != "/readyz":
                    schema = answer["content"]["application/json"]["schema"]
                    assert schema["$ref"].endswith("/ErrorOut"), (method, path, status)


def test_every_bound_is_json_schema(spec: dict[str, Any]) -> None:
    """Bounds are ``minimum``/``maximum``: pydantic leaves ``ge``/``le`` keys in a schema it cannot place them in,
    which every validator and generator ignores (a bound the schema seems to have and does not)."""
    leaked: list[str] = []

    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            leaked.extend(f"{where}.{k}" for k in node if k in {"ge", "gt", "le", "lt", "min_length", "max_length"})
            for key, value in node.items():
                walk(value, f"{where}.{key}")
        elif isinstance(node, list):
            for n, value in enumerate(node):
                walk(value, f"{where}[{n}]")

    walk(spec, "")
    assert leaked == []
