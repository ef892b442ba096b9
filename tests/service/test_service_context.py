"""``POST /v1/search`` with ``expand``, ``context_chars`` and ``group_by`` over real HTTP (the session's service)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from conftest import Service

pytestmark = pytest.mark.integration

USER = 201  # this module's tenant (other modules use other ids)

ORCHARD = "# Orchard\n\n" + "\n\n".join(
    f"Row {i} of the orchard holds {kind} apple trees pruned in late winter and picked in {month}."
    for i, (kind, month) in enumerate(
        [("Cox", "September"), ("Bramley", "October"), ("Gala", "September"), ("Russet", "October")] * 2
    )
)
COFFEE = "Arabica coffee grows best at altitude, where cool nights slow the ripening of the cherries."


def test_search_expands_and_groups_hits(
    service: Service, ingest: Callable[[httpx.Client, int, dict[str, str | bytes]], dict[str, Any]]
) -> None:
    with service.client(service.key(USER)) as client:
        ingest(client, 1, {"orchard.md": ORCHARD, "coffee.txt": COFFEE})
        query = {"query": "which apple trees are picked in October", "set_id": 1, "top_k": 2}
        plain = client.post("/v1/search", json={**query, "expand": "none", "group_by": "none"}).json()
        assert all("context" not in hit and "merged" not in hit for hit in plain["hits"])
        default = client.post("/v1/search", json=query).json()  # RAGINDEX_EXPAND / RAGINDEX_GROUP_BY: section
        assert all(hit["text"] in hit["context"] for hit in default["hits"])
        assert len({hit["doc_id"] for hit in plain["hits"]}) == 1  # the orchard fills the plain top 2
        body = client.post(
            "/v1/search", json={**query, "expand": "neighbours", "context_chars": 500, "group_by": "document"}
        )
        assert body.status_code == 200, body.text
        hits = body.json()["hits"]
    assert [hit["filename"] for hit in hits] == ["orchard.md", "coffee.txt"]
    assert hits[0]["chunk_id"] == plain["hits"][0]["chunk_id"]
    assert hits[0]["merged"] and {"chunk_id", "score", "scores"} <= set(hits[0]["merged"][0])
    for hit in hits:
        assert hit["text"] in hit["context"] and len(hit["context"]) <= max(500, len(hit["text"]))
    assert hits[0]["context"] in ORCHARD and len(hits[0]["context"]) > len(hits[0]["text"])


def test_bad_expand_group_by_and_context_chars_are_422_naming_the_field(service: Service) -> None:
    cases = [
        ({"expand": "paragraph"}, "expand"),
        ({"group_by": "chapter"}, "group_by"),
        ({"context_chars": -1}, "context_chars"),
        ({"context_chars": 20_001}, "context_chars"),
        ({"context_chars": "lots"}, "context_chars"),
    ]
    with service.client(service.key(USER)) as client:
        for extra, field in cases:
            response = client.post("/v1/search", json={"query": "apples", "set_id": 1, **extra})
            assert response.status_code == 422, extra
            assert response.json()["context"]["field"] == field, response.json()
