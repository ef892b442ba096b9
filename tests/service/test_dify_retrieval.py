"""Dify's External Knowledge API on the shared real service: Dify's documented requests, answers and error codes.

The request examples are those of Dify's documentation (docs.dify.ai, "External Knowledge API"): the minimal
request (``knowledge_id``, ``query``, ``retrieval_setting {top_k, score_threshold}``) and one with a
``metadata_condition``; the errors are Dify's 1001 (header format), 1002 (authorization failed) and 2001 (no
such knowledge).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from conftest import Service
from ragindex.metadata import FieldType
from ragindex.service.routes.dify import MetadataCondition, plan_conditions

pytestmark = pytest.mark.integration

OWNER, STRANGER = 2701, 2702
SET = 3
RECORDS = [
    {
        "key": "dify/knowledge.txt",
        "text": "This is the document for external knowledge. Dify is an LLM application platform.",
        "title": "knowledge.txt",
        "metadata": {
            "category": "AI",
            "path": "s3://dify/knowledge.txt",
            "year": 2024,
            "tags": ["dify", "docs"],
            "published": "2024-05-01",
        },
    },
    {
        "key": "dify/introduce.txt",
        "text": "Dify: The Innovation Engine for GenAI Applications.",
        "title": "introduce.txt",
        "metadata": {
            "category": "AI product",
            "path": "s3://dify/introduce.txt",
            "year": 2021,
            "tags": ["intro"],
            "published": "2021-01-15",
        },
    },
    {
        "key": "other/glacier",
        "text": "Glaciers carve valleys over thousands of years.",
        "metadata": {"category": "geology", "year": 2010, "tags": [], "published": "2010-06-30", "note": ""},
    },
]


@pytest.fixture(scope="module")
def keys(service: Service) -> Iterator[dict[str, str]]:
    owner = service.key(OWNER)
    with service.client(owner) as client:
        answer = client.post(f"/v1/sets/{SET}/records", json={"records": RECORDS})
        assert answer.status_code == 200, answer.text
    yield {"owner": owner, "stranger": service.key(STRANGER)}


def _retrieve(service: Service, key: str | None, body: dict[str, Any], path: str = "/retrieval") -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    return httpx.post(f"{service.url}{path}", json=body, headers=headers, timeout=60)


def _example(query: str = "What is Dify?", top_k: int = 3, threshold: float = 0.5, **more: Any) -> dict[str, Any]:
    return {
        "knowledge_id": str(SET),
        "query": query,
        "retrieval_setting": {"top_k": top_k, "score_threshold": threshold},
        **more,
    }


@pytest.mark.parametrize("path", ["/retrieval", "/v1/retrieval"])
def test_the_documented_request_answers_dify_records(service: Service, keys: dict[str, str], path: str) -> None:
    answer = _retrieve(service, keys["owner"], _example(threshold=0.0), path)
    assert answer.status_code == 200, answer.text
    records = answer.json()["records"]
    assert records and set(answer.json()) == {"records"}
    for record in records:
        assert set(record) == {"content", "score", "title", "metadata"}
        assert isinstance(record["metadata"], dict) and 0.0 <= record["score"] <= 1.0
        assert isinstance(record["content"], str) and isinstance(record["title"], str)
    scores = [r["score"] for r in records]
    assert scores == sorted(scores, reverse=True)  # monotone with rank
    assert records[0]["metadata"]["key"].startswith("dify/")
    assert records[0]["title"] in ("knowledge.txt", "introduce.txt")
    assert records[0]["metadata"]["category"].startswith("AI")


def test_score_threshold_and_top_k(service: Service, keys: dict[str, str]) -> None:
    everything = _retrieve(service, keys["owner"], _example(top_k=10, threshold=0.0)).json()["records"]
    assert len(everything) == 3
    top = _retrieve(service, keys["owner"], _example(top_k=1, threshold=0.0)).json()["records"]
    assert len(top) == 1 and top[0] == everything[0]
    cut = everything[1]["score"]
    kept = _retrieve(service, keys["owner"], _example(top_k=10, threshold=cut)).json()["records"]
    assert [r["score"] for r in kept] == [r["score"] for r in everything if r["score"] >= cut]
    assert _retrieve(service, keys["owner"], _example(top_k=10, threshold=1.0)).json()["records"] == [
        r for r in everything if r["score"] >= 1.0
    ]


def test_the_documented_metadata_condition(service: Service, keys: dict[str, str]) -> None:
    condition = {
        "logical_operator": "and",
        "conditions": [{"name": ["category"], "comparison_operator": "contains", "value": "AI"}],
    }
    records = _retrieve(service, keys["owner"], _example(top_k=10, threshold=0.0, metadata_condition=condition))
    assert records.status_code == 200, records.text
    assert sorted(r["metadata"]["key"] for r in records.json()["records"]) == [
        "dify/introduce.txt",
        "dify/knowledge.txt",
    ]


CONDITIONS: list[tuple[str, Any, Any, list[str]]] = [
    ("category", "contains", "AI", ["dify/introduce.txt", "dify/knowledge.txt"]),
    ("category", "not contains", "AI", ["other/glacier"]),
    ("category", "start with", "AI p", ["dify/introduce.txt"]),
    ("category", "end with", "logy", ["other/glacier"]),
    ("category", "is", "AI", ["dify/knowledge.txt"]),
    ("category", "is not", "AI", ["dify/introduce.txt", "other/glacier"]),
    ("category", "in", ["AI", "geology"], ["dify/knowledge.txt", "other/glacier"]),
    ("category", "not in", ["AI", "geology"], ["dify/introduce.txt"]),
    ("tags", "contains", "dify", ["dify/knowledge.txt"]),
    ("tags", "not contains", "dify", ["dify/introduce.txt", "other/glacier"]),
    ("tags", "empty", None, ["other/glacier"]),
    ("tags", "not empty", None, ["dify/introduce.txt", "dify/knowledge.txt"]),
    ("note", "empty", None, ["dify/introduce.txt", "dify/knowledge.txt", "other/glacier"]),
    ("note", "not empty", None, []),
    ("year", "=", 2024, ["dify/knowledge.txt"]),
    ("year", "=", "2024", ["dify/knowledge.txt"]),  # Dify sends numbers as strings too
    ("year", "≠", 2024, ["dify/introduce.txt", "other/glacier"]),
    ("year", ">", 2010, ["dify/introduce.txt", "dify/knowledge.txt"]),
    ("year", "<", 2021, ["other/glacier"]),
    ("year", "≥", 2021, ["dify/introduce.txt", "dify/knowledge.txt"]),
    ("year", "≤", 2021, ["dify/introduce.txt", "other/glacier"]),
    ("published", "before", "2021-06-01", ["dify/introduce.txt", "other/glacier"]),
    ("published", "after", "2021-06-01", ["dify/knowledge.txt"]),
    ("colour", "is", "red", []),  # a field the set lacks: false, as the filter language holds for a missing field
    ("colour", "is not", "red", ["dify/introduce.txt", "dify/knowledge.txt", "other/glacier"]),
    ("year", ">", "soon", []),  # a value the field's type cannot compare with: false
]


@pytest.mark.parametrize(("name", "op", "value", "expected"), CONDITIONS, ids=[f"{c[0]} {c[1]}" for c in CONDITIONS])
def test_every_dify_operator(
    service: Service, keys: dict[str, str], name: str, op: str, value: Any, expected: list[str]
) -> None:
    condition: dict[str, Any] = {"name": [name], "comparison_operator": op}
    if value is not None:
        condition["value"] = value
    body = _example(
        "Dify glaciers knowledge",
        top_k=10,
        threshold=0.0,
        metadata_condition={"logical_operator": "and", "conditions": [condition]},
    )
    answer = _retrieve(service, keys["owner"], body)
    assert answer.status_code == 200, answer.text
    assert sorted(r["metadata"]["key"] for r in answer.json()["records"]) == expected


def test_or_mixes_native_and_string_operators(service: Service, keys: dict[str, str]) -> None:
    conditions = [
        {"name": "category", "comparison_operator": "end with", "value": "logy"},
        {"name": "year", "comparison_operator": "=", "value": 2024},
    ]
    body = _example(
        "Dify glaciers knowledge",
        top_k=10,
        threshold=0.0,
        metadata_condition={"logical_operator": "or", "conditions": conditions},
    )
    answer = _retrieve(service, keys["owner"], body)
    assert sorted(r["metadata"]["key"] for r in answer.json()["records"]) == ["dify/knowledge.txt", "other/glacier"]
    native = plan_conditions(
        MetadataCondition.model_validate({"logical_operator": "or", "conditions": [conditions[1], conditions[1]]}),
        {"year": FieldType.NUMBER},
    )
    assert native.post is None and native.native == {"$or": [{"year": {"$eq": 2024}}, {"year": {"$eq": 2024}}]}


def test_dify_error_codes(service: Service, keys: dict[str, str]) -> None:
    for path in ("/retrieval", "/v1/retrieval"):
        missing = _retrieve(service, None, _example(), path)
        assert missing.status_code == 403 and missing.json()["error_code"] == 1001, missing.text
        basic = httpx.post(f"{service.url}{path}", json=_example(), headers={"Authorization": "Basic abc"})
        assert basic.status_code == 403 and basic.json()["error_code"] == 1001
        wrong = _retrieve(service, "rgx_not-a-key", _example(), path)
        assert wrong.status_code == 403 and wrong.json() == {
            "error_code": 1002,
            "error_msg": "Authorization failed. Please check your API key.",
        }
        for knowledge in ("your-knowledge-id", "AAA-BBB-CCC", "999", "0", "-1"):
            unknown = _retrieve(service, keys["owner"], {**_example(), "knowledge_id": knowledge}, path)
            assert unknown.status_code == 404 and unknown.json()["error_code"] == 2001, unknown.text
    bad = _retrieve(service, keys["owner"], {"knowledge_id": str(SET), "query": "x"})
    assert bad.status_code == 422 and bad.json()["context"]["field"] == "retrieval_setting"
    no_value = _example(metadata_condition={"conditions": [{"name": "year", "comparison_operator": ">"}]})
    refused = _retrieve(service, keys["owner"], no_value)
    assert refused.status_code == 422 and refused.json()["context"]["field"] == "metadata_condition.conditions[0].value"


def test_another_tenant_knows_no_such_knowledge(service: Service, keys: dict[str, str]) -> None:
    answer = _retrieve(service, keys["stranger"], _example())
    assert answer.status_code == 404 and answer.json()["error_code"] == 2001
