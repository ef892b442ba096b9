"""Records over HTTP, the search filter and tenant isolation, on the shared real service (real engine, real index).

PUT/GET/DELETE one record, a synchronous batch and a 202 batch job, read-your-writes (searchable when the upsert
answers), every bad input answered 422 naming the field with nothing written, ``key`` in hits and listings, the
``filter`` of a search (a 422 for an unknown field), and another tenant's key that cannot read, delete or filter.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from conftest import Service, wait_for_job

pytestmark = pytest.mark.integration

OWNER, STRANGER = 2801, 2802
SET = 1


@pytest.fixture(scope="module")
def clients(service: Service) -> Iterator[dict[str, httpx.Client]]:
    owner, stranger = service.client(service.key(OWNER)), service.client(service.key(STRANGER))
    try:
        yield {"owner": owner, "stranger": stranger}
    finally:
        owner.close()
        stranger.close()


def _search(client: httpx.Client, query: str, set_id: int = SET, **body: Any) -> httpx.Response:
    return client.post("/v1/search", json={"query": query, "set_id": set_id, **body})


def _keys(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [hit["key"] for hit in response.json()["hits"]]


def _documents(service: Service, user_id: int, set_id: int) -> list[str]:
    return sorted(d.source_uri for d in service.state.engine.store.list_documents(user_id=user_id, set_id=set_id))


def test_put_get_delete_one_record_reads_its_writes(service: Service, clients: dict[str, httpx.Client]) -> None:
    client = clients["owner"]
    key = "guides/vitamin d"  # a slash and a space: URL-encoded in the path
    body = {"text": "Vitamin D helps the body absorb calcium.", "title": "Vitamin D", "metadata": {"year": 2024}}
    put = client.put(f"/v1/sets/{SET}/records/guides/vitamin%20d", json=body)
    assert put.status_code == 200, put.text
    report = put.json()
    assert report["key"] == key and report["documents"]["added"] == 1 and isinstance(report["doc_id"], int)
    # read your writes: searchable when the upsert answered, the hit carries the key
    assert key in _keys(_search(client, "absorb calcium"))

    got = client.get(f"/v1/sets/{SET}/records/guides/vitamin%20d")
    assert got.status_code == 200, got.text
    record = got.json()
    assert record["key"] == key and record["title"] == "Vitamin D" and record["metadata"]["year"] == 2024
    assert record["status"] == "SUCCESS" and record["chunk_count"] >= 1 and record["doc_id"] == report["doc_id"]

    again = client.put(f"/v1/sets/{SET}/records/guides/vitamin%20d", json=body)
    assert again.json()["documents"]["unchanged"] == 1 and again.json()["chunks"].get("embedded", 0) == 0

    listed = client.get(f"/v1/sets/{SET}/documents").json()["documents"]
    assert key in [d["key"] for d in listed]

    gone = client.delete(f"/v1/sets/{SET}/records/guides/vitamin%20d")
    assert gone.status_code == 200, gone.text
    assert gone.json()["removed"] >= 1 and gone.json()["missing"] == []
    assert key not in _keys(_search(client, "absorb calcium"))
    assert client.get(f"/v1/sets/{SET}/records/guides/vitamin%20d").status_code == 404
    missing = client.delete(f"/v1/sets/{SET}/records/guides/vitamin%20d")
    assert missing.status_code == 404 and missing.json()["context"]["key"] == key


def test_every_content_kind(clients: dict[str, httpx.Client]) -> None:
    client = clients["owner"]
    pdf_less = base64.b64encode(b"Glaciers carve valleys over thousands of years.").decode()
    records = [
        {"key": "kinds/md", "markdown": "# Comets\n\nA comet's tail points away from the Sun."},
        {"key": "kinds/file", "data_base64": pdf_less, "filename": "glacier.txt"},
        {
            "key": "kinds/chunks",
            "chunks": ["Violins have four strings.", {"text": "Bows use horsehair.", "metadata": {"part": "bow"}}],
        },
    ]
    answer = client.post(f"/v1/sets/{SET}/records", json={"records": records})
    assert answer.status_code == 200, answer.text
    assert answer.json()["documents"]["added"] == 3, answer.json()
    assert "kinds/md" in _keys(_search(client, "comet tail Sun"))
    assert "kinds/file" in _keys(_search(client, "glaciers carve valleys"))
    hits = _search(client, "horsehair bows", filter={"part": "bow"}).json()["hits"]
    assert [h["key"] for h in hits] == ["kinds/chunks"]


BAD: list[tuple[str, dict[str, Any], str]] = [
    ("empty key", {"records": [{"key": "", "text": "x"}]}, "records.0.key"),
    ("blank key", {"records": [{"key": "   ", "text": "x"}]}, "records.0.key"),
    ("long key", {"records": [{"key": "k" * 257, "text": "x"}]}, "records.0.key"),
    ("control character", {"records": [{"key": "a\x07b", "text": "x"}]}, "records.0.key"),
    ("no content", {"records": [{"key": "bad/none"}]}, "records.0.content"),
    ("two contents", {"records": [{"key": "bad/two", "text": "x", "markdown": "y"}]}, "records.0.content"),
    ("data without filename", {"records": [{"key": "bad/f", "data_base64": "eA=="}]}, "records.0.filename"),
    (
        "nested metadata",
        {"records": [{"key": "bad/n", "text": "x", "metadata": {"a": {"b": 1}}}]},
        "records.0.metadata.a",
    ),
    (
        "oversize string",
        {"records": [{"key": "bad/o", "text": "x", "metadata": {"a": "x" * 3000}}]},
        "records.0.metadata.a",
    ),
    (
        "mixed list",
        {"records": [{"key": "bad/m", "text": "x", "metadata": {"tags": ["a", 1]}}]},
        "records.0.metadata.tags",
    ),
    ("bad field name", {"records": [{"key": "bad/k", "text": "x", "metadata": {"1x": "a"}}]}, "records.0.metadata.1x"),
    ("over the batch limit", {"records": [{"key": f"b/{n}", "text": "x"} for n in range(1001)]}, "records"),
    (
        "a number past 2**53",
        {"records": [{"key": "bad/i", "text": "x", "metadata": {"a": -(2**53) - 1}}]},
        "records.0.metadata.a",
    ),
    ("blank text", {"records": [{"key": "bad/b", "text": "  "}]}, "records.0.text"),
]


@pytest.mark.parametrize(("case", "body", "field"), BAD, ids=[b[0] for b in BAD])
def test_bad_batches_are_refused_naming_the_field(
    service: Service, clients: dict[str, httpx.Client], case: str, body: dict[str, Any], field: str
) -> None:
    before = _documents(service, OWNER, 7)
    answer = clients["owner"].post("/v1/sets/7/records", json=body)
    assert answer.status_code == 422, answer.text
    assert answer.json()["context"]["field"].startswith(field), answer.json()
    assert _documents(service, OWNER, 7) == before  # nothing written


def test_a_key_twice_in_a_batch_keeps_the_later_record(service: Service, clients: dict[str, httpx.Client]) -> None:
    body = {"records": [{"key": "twice", "text": "The first violin."}, {"key": "twice", "text": "The second cello."}]}
    answer = clients["owner"].post("/v1/sets/13/records", json=body)
    assert answer.status_code == 200 and answer.json()["documents"]["added"] == 1, answer.text
    assert _keys(_search(clients["owner"], "cello", set_id=13)) == ["twice"]
    assert _documents(service, OWNER, 13) == ["twice"]


def test_bad_single_records_and_type_clash(service: Service, clients: dict[str, httpx.Client]) -> None:
    client = clients["owner"]
    assert (
        client.put("/v1/sets/8/records/typed", json={"text": "Harvest moon.", "metadata": {"year": 2020}}).status_code
        == 200
    )
    before = _documents(service, OWNER, 8)
    clash = client.put("/v1/sets/8/records/other", json={"text": "x", "metadata": {"year": "twenty"}})
    assert clash.status_code == 422 and clash.json()["context"]["field"] == "metadata.year", clash.text
    batch = client.post(
        "/v1/sets/8/records",
        json={"records": [{"key": "ok", "text": "fine"}, {"key": "nope", "text": "x", "metadata": {"year": "x"}}]},
    )
    assert batch.status_code == 422 and batch.json()["context"]["field"] == "records.1.metadata.year", batch.text
    control = client.put("/v1/sets/8/records/a%07b", json={"text": "x"})
    assert control.status_code == 422 and control.json()["context"]["field"] == "key"
    none = client.put("/v1/sets/8/records/empty-body", json={})
    assert none.status_code == 422 and none.json()["context"]["field"] == "content"
    assert _documents(service, OWNER, 8) == before


def test_a_large_batch_is_a_job(service: Service, clients: dict[str, httpx.Client]) -> None:
    client = clients["owner"]
    records = [{"key": f"bulk/{n}", "text": f"Bulk note {n} about enzyme number {n}."} for n in range(150)]
    answer = client.post("/v1/sets/9/records", json={"records": records})
    assert answer.status_code == 202, answer.text
    accepted = answer.json()
    assert accepted["records"] == 150 and accepted["status"] == "queued"
    job = wait_for_job(client, accepted["job_id"], timeout=300)
    assert job["status"] == "succeeded", job
    assert job["kind"] == "records" and job["files"] == []
    assert job["report"]["documents"]["added"] == 150
    assert len(_documents(service, OWNER, 9)) == 150
    assert "bulk/77" in _keys(_search(client, "enzyme number 77", set_id=9, top_k=20))
    assert not list((service.state.blob_root / ".records").glob("*.json"))  # the saved batch is gone


def test_a_hundred_records_answer_synchronously(clients: dict[str, httpx.Client]) -> None:
    records = [{"key": f"sync/{n}", "text": f"Synchronous note {n} about comet {n}."} for n in range(100)]
    started = time.perf_counter()
    answer = clients["owner"].post("/v1/sets/10/records", json={"records": records})
    elapsed = time.perf_counter() - started
    assert answer.status_code == 200, answer.text
    assert answer.json()["documents"]["added"] == 100
    print(f"100-record synchronous batch: {elapsed:.2f} s")


def test_the_search_filter(clients: dict[str, httpx.Client]) -> None:
    client = clients["owner"]
    records = [
        {
            "key": "f/old",
            "text": "River deltas form where rivers meet the sea.",
            "metadata": {"year": 2001, "lang": "en"},
        },
        {
            "key": "f/new",
            "text": "River deltas shift with each flood season.",
            "metadata": {"year": 2023, "lang": "en"},
        },
        {"key": "f/zh", "text": "River deltas are fertile farmland.", "metadata": {"year": 2022, "lang": "zh"}},
    ]
    assert client.post("/v1/sets/11/records", json={"records": records}).status_code == 200
    recent = _keys(_search(client, "river deltas", set_id=11, filter={"year": {"$gte": 2020}, "lang": "en"}))
    assert recent == ["f/new"]
    either = _keys(_search(client, "river deltas", set_id=11, filter={"$or": [{"lang": "zh"}, {"year": 2001}]}))
    assert sorted(either) == ["f/old", "f/zh"]
    unknown = _search(client, "river deltas", set_id=11, filter={"colour": "red"})
    assert unknown.status_code == 422 and unknown.json()["context"]["field"] == "filter"
    assert "colour" in unknown.json()["message"]
    wrong = _search(client, "river deltas", set_id=11, filter={"year": {"$gte": "soon"}})
    assert wrong.status_code == 422 and wrong.json()["context"]["field"] == "filter"
    assert _search(client, "river deltas", set_id=11, filter="year").status_code == 422  # an object, or null


def test_another_tenant_cannot_read_delete_or_filter(service: Service, clients: dict[str, httpx.Client]) -> None:
    owner, stranger = clients["owner"], clients["stranger"]
    body = {"text": "The qubit secret of tenant 2801.", "metadata": {"secret_level": 5}}
    assert owner.put("/v1/sets/12/records/secret", json=body).status_code == 200
    assert stranger.get("/v1/sets/12/records/secret").status_code == 404
    assert stranger.delete("/v1/sets/12/records/secret").status_code == 404
    assert _keys(_search(stranger, "qubit secret", set_id=12)) == []
    # the owner's field is not the stranger's: filtering on it is an unknown field there
    assert _search(stranger, "qubit secret", set_id=12, filter={"secret_level": 5}).status_code == 422
    # the stranger's own record under the same key is another document
    assert stranger.put("/v1/sets/12/records/secret", json={"text": "Stranger's note."}).status_code == 200
    assert owner.get("/v1/sets/12/records/secret").json()["metadata"]["secret_level"] == 5
    assert "secret" in _keys(_search(owner, "qubit secret", set_id=12))
    assert _documents(service, OWNER, 12) == ["secret"]
