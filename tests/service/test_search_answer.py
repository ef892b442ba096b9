"""``POST /v1/search`` is serialised once by orjson, never re-validated by its response model (issue 27).

The model still documents the answer (``/openapi.json``, guarded by tests/service/test_schemathesis.py); here the
answer on the wire must be exactly what validating it through the model would give, for every shape a search
answer takes: grouped hits with ``merged``, expanded ``context``, a degraded search, a filter, no hits.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from conftest import Service, upload, wait_for_job
from ragindex.service.schemas import SearchOut

pytestmark = pytest.mark.integration

USER = 41
GUIDE = (
    "# Beekeeping\n\n## Colony\n\nA colony has one queen and thousands of workers.\n\n"
    "The queen lays eggs in spring; workers feed the larvae.\n\n## Harvest\n\n"
    "Honey is harvested in late summer once the frames are capped.\n\nA strong hive gives twenty kilograms.\n"
)


@pytest.fixture(scope="module")
def client(service: Service) -> Any:
    with service.client(service.key(USER)) as client:
        response = upload(client, 1, {"guide.md": GUIDE, "tides.txt": "High water at the harbour is at noon.\n"})
        assert response.status_code == 202, response.text
        assert wait_for_job(client, response.json()["job_id"])["status"] == "succeeded"
        yield client


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"group_by": "section", "expand": "section", "top_k": 3},
        {"group_by": "document", "expand": "neighbours", "context_chars": 80},
        {"group_by": "none", "expand": "none", "mode": "bm25"},
        {"mode": "dense", "score_threshold": 0.99},  # no hits
        {"sources": ["dense", "bm25"], "on_source_error": "degrade", "fusion": "rrf"},
    ],
)
def test_the_answer_is_what_the_response_model_gives(client: httpx.Client, extra: dict[str, Any]) -> None:
    response = client.post("/v1/search", json={"query": "when is honey harvested", "set_id": 1, **extra})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body == SearchOut.model_validate(body).model_dump(mode="json", exclude_unset=True)
    assert set(body) >= {"mode", "hits", "latency_ms"}
    for hit in body["hits"]:
        assert not hit["source"].startswith("/") and hit["key"] == hit["source"]
        assert "context" in hit if extra.get("expand", "section") != "none" else "context" not in hit


def test_grouped_answers_keep_their_merged_hits(client: httpx.Client) -> None:
    body = client.post(
        "/v1/search", json={"query": "queen workers honey frames", "set_id": 1, "group_by": "document", "top_k": 2}
    ).json()
    merged = [m for hit in body["hits"] for m in hit.get("merged", ())]
    assert merged and all(set(m) == {"chunk_id", "rank", "score", "scores"} for m in merged)
    assert body == SearchOut.model_validate(body).model_dump(mode="json", exclude_unset=True)


def test_a_search_by_vector_answers_as_the_search_by_text(client: httpx.Client, service: Service) -> None:
    """``vector`` instead of the text for dense (no ``query`` needed in mode dense); with the text in hybrid."""
    query = "when is honey harvested"
    vector = [float(x) for x in service.state.engine.dense.encode_queries([query])[0]]
    for mode in ("dense", "hybrid"):
        by_text = client.post("/v1/search", json={"query": query, "set_id": 1, "mode": mode}).json()
        body = {"set_id": 1, "mode": mode, "vector": vector} | ({"query": query} if mode == "hybrid" else {})
        by_vector = client.post("/v1/search", json=body)
        assert by_vector.status_code == 200, by_vector.text
        hits = by_vector.json()["hits"]
        assert [h["chunk_id"] for h in hits] == [h["chunk_id"] for h in by_text["hits"]]
        assert [h["score"] for h in hits] == pytest.approx([h["score"] for h in by_text["hits"]])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"vector": [0.5] * 12, "mode": "dense"}, "vector"),  # another model's dimension
        ({"vector": [0.5] * 384}, "query"),  # hybrid (the default) needs the text for BM25
        ({"vector": [0.5] * 384, "mode": "bm25", "query": "honey"}, "vector"),
        ({"vector": [0.0] * 384, "mode": "dense"}, "vector"),
        ({"vector": [0.5] * 8193, "mode": "dense"}, "vector"),
        ({"vector": [], "mode": "dense"}, "vector"),
        ({"vector": ["a"] * 384, "mode": "dense"}, "vector"),
    ],
)
def test_a_vector_the_index_cannot_use_answers_422_naming_the_field(
    client: httpx.Client, body: dict[str, Any], field: str
) -> None:
    response = client.post("/v1/search", json={"set_id": 1, **body})
    assert response.status_code == 422, response.text
    assert response.json()["context"]["field"].split(".")[0] == field


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"set_id": 1, "mode": "dense", "vector": [NaN' + ", 0.5" * 383 + "]}", "vector"),
        ('{"set_id": 1, "mode": "dense", "vector": [-Infinity' + ", 0.5" * 383 + "]}", "vector"),
        ('{"set_id": 1, "query": "honey", "score_threshold": NaN}', "score_threshold"),
        ('{"set_id": 1, "query": "honey", "score_threshold": Infinity}', "score_threshold"),
    ],
)
def test_a_number_json_has_not_answers_422_not_500(client: httpx.Client, raw: str, field: str) -> None:
    """Python's JSON reader takes ``NaN`` and ``Infinity``: the schema refuses them, and the 422 that echoes the
    input must still encode (it was a 500: the answer's encoder refuses non-finite floats)."""
    response = client.post("/v1/search", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["context"]["field"].split(".")[0] == field
