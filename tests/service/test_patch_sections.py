"""``PATCH /v1/chunks/{id}`` and ``DELETE`` keep the chunk's section right, over real HTTP (issue 23).

BM25 scores sections: an edit the section did not follow would leave a lexical search finding the old text and not
the new one, with ``verify`` saying OK.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from conftest import Service

pytestmark = pytest.mark.integration

USER = 501  # this module's tenant (other modules use other ids)
SET = 1

GUIDE = (
    "# Kiln guide\n\n## Firing\n\n"
    "Bisque firing hardens raw clay at about nine hundred degrees before any glaze is applied.\n\n"
    "Glaze firing melts the glaze into glass; cones bend to show when the kiln reached its heat.\n\n"
    "## Cooling\n\nNever open a hot kiln: thermal shock cracks the pots as the cold air rushes in.\n"
)
NEW_TEXT = "Raku pots leave the kiln glowing and are smoked in sawdust, which blackens the bare clay."


def bm25(client: httpx.Client, query: str) -> list[dict[str, Any]]:
    response = client.post("/v1/search", json={"query": query, "set_id": SET, "mode": "bm25"})
    assert response.status_code == 200, response.text
    hits: list[dict[str, Any]] = response.json()["hits"]
    return hits


def test_a_patched_chunk_is_found_by_its_new_text_and_not_by_its_old(
    service: Service, ingest: Callable[[httpx.Client, int, dict[str, str | bytes]], dict[str, Any]]
) -> None:
    with service.client(service.key(USER)) as client:
        ingest(client, SET, {"kiln.md": GUIDE})
        hit = bm25(client, "bisque firing raw clay")[0]
        assert "Bisque firing" in hit["text"]
        assert bm25(client, "raku sawdust smoked") == []

        patched = client.patch(f"/v1/chunks/{hit['chunk_id']}", json={"text": NEW_TEXT})
        assert patched.status_code == 200, patched.text
        top = bm25(client, "raku sawdust smoked")
        assert top and top[0]["chunk_id"] == hit["chunk_id"] and top[0]["text"] == NEW_TEXT
        assert all("Bisque" not in (h.get("context") or h["text"]) for h in bm25(client, "bisque nine hundred degrees"))
        body = patched.json()
        assert body["ok"] is True and body["reembedded"] is True
        assert body["section_id"] and body["section_statuses"]["bm25"] == "SUCCESS"

        deleted = client.delete(f"/v1/chunks/{hit['chunk_id']}")
        assert deleted.status_code == 200 and deleted.json()["removed"] == 1
        assert bm25(client, "raku sawdust smoked") == []
    assert service.state.engine.verify().ok
