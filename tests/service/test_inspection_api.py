"""Inspection over HTTP on the real service: document and job pages, one document's stages and chunks, cancel.

Every route is tenant-scoped: another tenant's document or job answers 404 (never 403) and is never listed.
"""

from __future__ import annotations

import random
import time
from typing import Any

import httpx
import pytest

from conftest import Service, upload, wait_for_job

pytestmark = pytest.mark.integration

OWNER, STRANGER, CANCELLER = 301, 302, 303
WORDS = ["harbour", "lantern", "meadow", "quartz", "saffron", "tundra", "violet", "walnut", "zephyr", "orchid"]


def _pages(client: httpx.Client, path: str, key: str, **params: Any) -> list[list[dict[str, Any]]]:
    """Every page of a listing, following next_cursor."""
    pages: list[list[dict[str, Any]]] = []
    cursor = None
    while True:
        query = {**params, **({"cursor": cursor} if cursor else {})}
        body = client.get(path, params=query).raise_for_status().json()
        pages.append(body[key])
        cursor = body["next_cursor"]
        if cursor is None:
            return pages


@pytest.fixture(scope="module")
def owner(service: Service) -> dict[str, Any]:
    """OWNER's documents: four good files and one bad JSON in set 1, one file in set 2; STRANGER's one file."""
    keys = {OWNER: service.key(OWNER), STRANGER: service.key(STRANGER)}
    with service.client(keys[OWNER]) as client, service.client(keys[STRANGER]) as other:
        files: dict[str, str | bytes] = {
            f"note{n}.txt": f"Owner note {n} about {WORDS[n]} and {WORDS[n + 5]}." for n in range(4)
        }
        files["broken.json"] = "{not json"
        jobs = [
            upload(client, 1, files).json()["job_id"],
            upload(client, 2, {"second.md": "# Second set\n\nA page about quartz clocks."}).json()["job_id"],
            upload(other, 1, {"stranger.txt": "The stranger's only note, about walnut trees."}).json()["job_id"],
        ]
        done = [wait_for_job(client if n < 2 else other, job) for n, job in enumerate(jobs)]
    assert [j["status"] for j in done] == ["failed", "succeeded", "succeeded"], "broken.json fails the first job"
    return {"keys": keys, "jobs": jobs}


def test_documents_are_listed_a_page_at_a_time_and_only_the_tenants(service: Service, owner: dict[str, Any]) -> None:
    with service.client(owner["keys"][OWNER]) as client:
        pages = _pages(client, "/v1/documents", "documents", limit=2)
        assert [len(p) for p in pages] == [2, 2, 2]
        listed = [d for page in pages for d in page]
        assert sorted(d["filename"] for d in listed) == sorted(
            ["broken.json", "second.md", *(f"note{n}.txt" for n in range(4))]
        )
        assert [d["doc_id"] for d in listed] == sorted(d["doc_id"] for d in listed), "stable order: by doc_id"
        assert {d["user_id"] for d in listed} == {OWNER}

        (failed,) = client.get("/v1/documents", params={"status": "FAILED"}).json()["documents"]
        assert failed["filename"] == "broken.json" and "invalid JSON" in failed["error"]
        second = client.get("/v1/documents", params={"set_id": 2}).json()
        assert [d["filename"] for d in second["documents"]] == ["second.md"] and second["next_cursor"] is None

        bad = client.get("/v1/documents", params={"cursor": "garbage"})
        assert bad.status_code == 422 and bad.json()["context"]["field"] == "cursor"
        assert client.get("/v1/documents", params={"status": "PENDING"}).status_code == 422
        assert client.get("/v1/documents", params={"limit": 0}).status_code == 422

    with service.client(owner["keys"][STRANGER]) as other:
        assert [d["filename"] for d in other.get("/v1/documents").json()["documents"]] == ["stranger.txt"]


def test_a_document_shows_its_stages_counts_and_chunks(service: Service, owner: dict[str, Any]) -> None:
    with service.client(owner["keys"][OWNER]) as client:
        listed = client.get("/v1/documents", params={"set_id": 1}).json()["documents"]
        by_name = {d["filename"]: d for d in listed}

        good = client.get(f"/v1/documents/{by_name['note0.txt']['doc_id']}").raise_for_status().json()
        assert good["document"]["status"] == "SUCCESS" and good["run"]["job_id"] == owner["jobs"][0]
        stages = {s["stage"]: s for s in good["stages"]}
        assert [s["stage"] for s in good["stages"]] == ["loading", "chunking", "dense", "bm25", "sparse"]
        assert all(
            stages[s]["status"] == "SUCCESS" and stages[s]["duration_ms"] is not None for s in ("loading", "dense")
        )
        assert stages["sparse"]["status"] == "SKIPPED"
        assert good["counts"]["chunk"]["dense"] == {"SUCCESS": good["document"]["chunk_count"]}
        assert good["chunks"] is None

        rows = client.get(f"/v1/documents/{by_name['note0.txt']['doc_id']}", params={"chunks": "true"}).json()["chunks"]
        assert {r["unit"] for r in rows} == {"chunk", "section"}
        assert all(r["attempts"] == 0 and r["last_error"] is None for r in rows)
        assert any(r["preview"].startswith("Owner note 0") for r in rows)

        broken = client.get(f"/v1/documents/{by_name['broken.json']['doc_id']}").json()
        loading = broken["stages"][0]
        assert (loading["stage"], loading["status"]) == ("loading", "FAILED") and "invalid JSON" in loading["error"]
        assert broken["run"]["failed_stage"] == "loading" and broken["counts"] == {}

    with service.client(owner["keys"][STRANGER]) as other:
        foreign = other.get(f"/v1/documents/{by_name['note0.txt']['doc_id']}")
        assert foreign.status_code == 404 and foreign.json()["error"] == "NotFoundError"
        assert other.get("/v1/documents/999999999").status_code == 404


def test_a_documents_parsed_markdown_is_served_to_its_tenant_only(service: Service, owner: dict[str, Any]) -> None:
    with service.client(owner["keys"][OWNER]) as client:
        (second,) = client.get("/v1/documents", params={"set_id": 2}).json()["documents"]
        doc = client.get(f"/v1/documents/{second['doc_id']}").raise_for_status().json()["document"]
        parsed = client.get(f"/v1/documents/{second['doc_id']}/parsed").raise_for_status().json()
        assert parsed["text"] == "# Second set\n\nA page about quartz clocks." and parsed["parser"] == "markdown"
        assert (parsed["doc_id"], parsed["content_hash"]) == (second["doc_id"], doc["content_hash"])
        assert parsed["chars"] == len(parsed["text"]) and parsed["blocks"] == [] and parsed["pages"] == []

        (broken,) = client.get("/v1/documents", params={"status": "FAILED"}).json()["documents"]
        never = client.get(f"/v1/documents/{broken['doc_id']}/parsed")
        assert never.status_code == 404 and "failed to load" in never.json()["message"]
        assert never.json()["context"] == {"doc_id": broken["doc_id"], "reason": "no_parsed_artifact"}
        assert client.get("/v1/documents/999999999/parsed").status_code == 404

    with service.client(owner["keys"][STRANGER]) as other:
        foreign = other.get(f"/v1/documents/{second['doc_id']}/parsed")
        assert foreign.status_code == 404 and foreign.json()["error"] == "NotFoundError"
        assert "no parsed artifact" not in foreign.json()["message"], "nothing tells a stranger the document exists"


def test_jobs_are_listed_newest_first_a_page_at_a_time(service: Service, owner: dict[str, Any]) -> None:
    with service.client(owner["keys"][OWNER]) as client:
        pages = _pages(client, "/v1/jobs", "jobs", limit=1)
        assert [[j["job_id"] for j in p] for p in pages] == [[owner["jobs"][1]], [owner["jobs"][0]]]
        assert pages[1][0]["status"] == "failed" and pages[1][0]["files"][-1] == "broken.json"
        assert [j["job_id"] for j in client.get("/v1/jobs", params={"status": "failed"}).json()["jobs"]] == [
            owner["jobs"][0]
        ]
        assert client.get("/v1/jobs", params={"status": "lost"}).status_code == 422
    with service.client(owner["keys"][STRANGER]) as other:
        assert [j["job_id"] for j in other.get("/v1/jobs").json()["jobs"]] == [owner["jobs"][2]]


def test_cancel_answers_404_across_tenants_and_409_when_finished(service: Service, owner: dict[str, Any]) -> None:
    with service.client(owner["keys"][STRANGER]) as other:
        foreign = other.delete(f"/v1/jobs/{owner['jobs'][1]}")
        assert foreign.status_code == 404 and foreign.json()["error"] == "NotFoundError"
        assert other.delete("/v1/jobs/no-such-job").status_code == 404
    with service.client(owner["keys"][OWNER]) as client:
        finished = client.delete(f"/v1/jobs/{owner['jobs'][1]}")
        assert finished.status_code == 409 and "already succeeded" in finished.json()["message"]
        assert client.get(f"/v1/jobs/{owner['jobs'][1]}").json()["status"] == "succeeded"


def _many_files(n: int, seed: int) -> dict[str, str | bytes]:
    """``n`` files of about 1,100 characters (several 200-character chunks each), unlike any other test's."""
    rng = random.Random(seed)
    return {
        f"n{i:03d}.txt": "\n\n".join(
            f"Canceller note {i}.{p}: " + " ".join(rng.choice(WORDS) for _ in range(20)) + f" ({rng.random()})."
            for p in range(7)
        )
        for i in range(n)
    }


def _wait(client: httpx.Client, job_id: str, ready: Any, timeout: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").raise_for_status().json()
        if ready(job):
            return job
        assert time.monotonic() < deadline, f"job {job_id} never got there: {job['status']} {job['progress']}"
        time.sleep(0.05)


def test_cancel_a_queued_and_a_running_job(service: Service) -> None:
    """The queued job never runs; the running one stops between two batches, holding no claim.

    What the running job committed stays: its dense copies written before the cancel stay SUCCESS; its documents
    are FAILED with the reason, and the set's next ingest finishes their chunks.
    """
    store = service.state.engine.store
    with service.client(service.key(CANCELLER)) as client:
        running = upload(client, 1, _many_files(40, seed=1)).json()["job_id"]
        queued = upload(client, 1, {"never.txt": "This upload is cancelled before it runs."}).json()["job_id"]

        gone = client.delete(f"/v1/jobs/{queued}")
        assert (gone.status_code, gone.json()) == (200, {"job_id": queued, "status": "cancelled"})

        _wait(client, running, lambda j: (j["progress"] or {}).get("indexed", {}).get("dense", 0) > 0)
        stopping = client.delete(f"/v1/jobs/{running}")
        assert (stopping.status_code, stopping.json()["status"]) == (202, "cancelling")
        assert client.delete(f"/v1/jobs/{running}").json()["status"] in ("cancelling", "cancelled"), "idempotent"
        job = _wait(client, running, lambda j: j["status"] not in ("running", "cancelling"))
        assert job["status"] == "cancelled", job
        assert job["report"]["cancelled"] is True and "cancelled by request" in job["error"]

        never = client.get(f"/v1/jobs/{queued}").json()
        assert never["status"] == "cancelled" and never["started_at"] is None and never["runs"] == []
        docs = [d for page in _pages(client, "/v1/documents", "documents", limit=500) for d in page]
        assert "never.txt" not in {d["filename"] for d in docs}
        assert len(docs) == 40

        counts = store.status_counts()
        (mine,) = [s for s in counts["sets"] if s["user_id"] == CANCELLER]
        dense = mine["chunks"]["dense"]
        assert "INDEXING" not in dense and "INDEXING" not in mine["chunks"]["bm25"], "no claim is left behind"
        assert 0 < dense.get("SUCCESS", 0) < sum(dense.values()), dense
        assert all(r.status != "PROCESSING" for r in store.runs(job_id=running))
        unfinished = [d for d in docs if d["status"] == "FAILED"]
        assert unfinished and all(d["error"].startswith("cancelled by request") for d in unfinished)
        assert job["report"]["documents"]["unfinished"] == len(unfinished)

        follow_up = upload(client, 1, {"later.txt": "A later upload to the same set."}).json()["job_id"]
        assert wait_for_job(client, follow_up, timeout=300)["status"] == "succeeded"
        after = [d for page in _pages(client, "/v1/documents", "documents", limit=500) for d in page]
        assert {d["status"] for d in after} == {"SUCCESS"} and len(after) == 41


def test_openapi_describes_the_inspection_routes(service: Service) -> None:
    spec = httpx.get(f"{service.url}/openapi.json").json()
    paths = spec["paths"]
    assert {"get"} <= set(paths["/v1/documents"]) and {"get", "delete"} <= set(paths["/v1/documents/{doc_id}"])
    assert {"get"} <= set(paths["/v1/jobs"]) and {"get", "delete"} <= set(paths["/v1/jobs/{job_id}"])
    ok = paths["/v1/documents/{doc_id}"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok["$ref"].endswith("/DocumentDetailOut")
    params = {p["name"] for p in paths["/v1/documents"]["get"]["parameters"]}
    assert {"set_id", "status", "cursor", "limit"} <= params
    cancel = paths["/v1/jobs/{job_id}"]["delete"]["responses"]
    assert {"200", "202", "409"} <= set(cancel)
    assert {"DocumentPageOut", "DocumentDetailOut", "JobPageOut", "JobCancelOut"} <= set(spec["components"]["schemas"])
    parsed = paths["/v1/documents/{doc_id}/parsed"]["get"]["responses"]["200"]["content"]["application/json"]
    assert parsed["schema"]["$ref"].endswith("/ParsedDocumentOut")
