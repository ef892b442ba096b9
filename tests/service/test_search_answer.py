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
