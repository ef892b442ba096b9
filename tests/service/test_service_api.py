"""The HTTP API end to end over real HTTP: keys, uploads and jobs, search, chunks, documents, admin, errors."""

from __future__ import annotations

import inspect
import json
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ragindex.cli.service  # noqa: F401 - registers serve and keys
from conftest import MAX_FILE_BYTES, MAX_UPLOAD_BYTES, Service, upload, wait_for_job
from ragindex.cli.app import app as cli_app
from ragindex.engine import Engine
from ragindex.service.keys import revoke_key

pytestmark = pytest.mark.integration

USER, OTHER, ADMIN_USER = 1, 2, 3

VITAMIN = "# Bones\n\nVitamin D helps the body absorb calcium, which keeps bones strong.\n"
QUANTUM = "Quantum computers use qubits that can be in superposition.\n"
OCEAN = "The Pacific is the largest and deepest ocean on Earth.\n"


@pytest.fixture(scope="module")
def keys(service: Service) -> dict[str, str]:
    return {
        "user": service.key(USER),
        "other": service.key(OTHER),
        "admin": service.key(ADMIN_USER, admin=True),
    }


@pytest.fixture(scope="module")
def corpus(service: Service, keys: dict[str, str]) -> dict[str, object]:
    """User 1 set 1: two documents; user 2 set 1: one document. Returns ids and the upload's job."""
    with service.client(keys["user"]) as client:
        response = upload(client, 1, {"vitamin.md": VITAMIN, "quantum.txt": QUANTUM})
        assert response.status_code == 202, response.text
        accepted = response.json()
        job = wait_for_job(client, accepted["job_id"])
        docs = client.get("/v1/sets/1/documents").json()["documents"]
    with service.client(keys["other"]) as client:
        other = upload(client, 1, {"ocean.txt": OCEAN}).json()
        other_job = wait_for_job(client, other["job_id"])
        other_docs = client.get("/v1/sets/1/documents").json()["documents"]
    return {"accepted": accepted, "job": job, "docs": docs, "other_job": other_job, "other_docs": other_docs}


def test_health_ready_docs_and_openapi(service: Service) -> None:
    with service.client() as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        deadline = time.monotonic() + 120
        pooled = "search_pool" in service.state.extra  # search processes: the default on 2+ cores
        while (ready := client.get("/readyz")).status_code == 503 and time.monotonic() < deadline:
            checks = ready.json()["checks"]
            # the model loads after start-up, and so do the search processes' models
            assert checks["dense"] == "loading" or checks.get("search_processes") == "starting", ready.text
            time.sleep(0.1)
        assert ready.status_code == 200 and ready.json()["status"] == "ready"
        expected = {"store": "ok", "index": "ok", "dense": "ok"} | ({"search_processes": "ok"} if pooled else {})
        assert ready.json()["checks"] == expected
        assert client.get("/docs").status_code == 200
        paths = client.get("/openapi.json").json()["paths"]
    for path in ("/v1/sets/{set_id}/documents", "/v1/jobs/{job_id}", "/v1/search", "/v1/chunks/{chunk_id}"):
        assert path in paths


def test_no_key_bad_key_and_wrong_scheme_are_401(service: Service) -> None:
    with service.client() as client:
        for headers in ({}, {"Authorization": "Bearer rgx_not-a-key"}, {"Authorization": "Basic dXNlcjpwYXNz"}):
            response = client.post("/v1/search", json={"query": "x", "set_id": 1}, headers=headers)
            assert response.status_code == 401, headers
            assert response.json()["error"] == "AuthenticationError"
            assert response.headers["www-authenticate"] == "Bearer"
        assert client.get("/v1/sets/1/documents").status_code == 401
        assert client.get("/v1/jobs/whatever").status_code == 401


def test_upload_job_reports_stages_and_report(corpus: dict[str, object]) -> None:
    accepted = corpus["accepted"]
    assert isinstance(accepted, dict)
    assert accepted["status"] == "queued" and accepted["files"] == ["vitamin.md", "quantum.txt"]
    job = corpus["job"]
    assert isinstance(job, dict)
    assert job["status"] == "succeeded" and job["error"] is None
    assert job["report"]["documents"]["added"] == 2
    assert job["report"]["chunks"]["embedded"] >= 2
    assert len(job["runs"]) == 2
    for run in job["runs"]:
        assert run["status"] == "SUCCESS"
        assert run["stages"]["chunking"] == run["stages"]["dense"] == run["stages"]["bm25"] == "SUCCESS"
        assert run["durations_ms"]["dense"] is not None
    docs = corpus["docs"]
    assert isinstance(docs, list)
    assert sorted(d["filename"] for d in docs) == ["quantum.txt", "vitamin.md"]
    assert all(d["status"] == "SUCCESS" and d["chunk_count"] >= 1 for d in docs)


def test_search_answers_the_cli_json_shape(service: Service, keys: dict[str, str], corpus: dict[str, object]) -> None:
    with service.client(keys["user"]) as client:
        body = client.post("/v1/search", json={"query": "what keeps bones strong", "set_id": 1, "top_k": 5}).json()
    expected = service.state.engine.search("what keeps bones strong", user_id=USER, set_id=1, top_k=5).to_dict()
    assert set(body) == set(expected) == {"mode", "hits", "latency_ms"}
    assert [h["chunk_id"] for h in body["hits"]] == [h["chunk_id"] for h in expected["hits"]]
    # the same hit, except that its source is relative to the set's upload folder, not the server's path
    assert expected["hits"][0]["source"] == str(service.state.blob_root / str(USER) / "1" / "vitamin.md")
    public = {**expected["hits"][0]["metadata"], "source": "vitamin.md"}  # a file's derived source: never its path
    assert body["hits"][0] == {**expected["hits"][0], "source": "vitamin.md", "key": "vitamin.md", "metadata": public}
    assert body["hits"][0]["filename"] == "vitamin.md"
    other_doc_ids = {d["doc_id"] for d in corpus["other_docs"]}  # type: ignore[attr-defined]
    assert not other_doc_ids & {h["doc_id"] for h in body["hits"]}


def test_search_field_validation_is_422(service: Service, keys: dict[str, str]) -> None:
    cases = [
        ({"query": "x", "set_id": 1, "top_k": 0}, "top_k"),
        ({"query": "x", "set_id": 0}, "set_id"),
        ({"query": "x", "set_id": -3}, "set_id"),
        ({"query": "x", "set_id": 2**63}, "set_id"),
        ({"set_id": 1}, "query"),
        ({"query": "x", "set_id": 1, "mode": "fuzzy"}, "mode"),
        ({"query": "x", "set_id": 1, "doc_ids": [0]}, "doc_ids.0"),
        ({"query": "x", "set_id": 1, "mode": "dense", "score_threshold": 7}, "score_threshold"),
    ]
    with service.client(keys["user"]) as client:
        for payload, field in cases:
            response = client.post("/v1/search", json=payload)
            assert response.status_code == 422, payload
            assert response.json()["context"]["field"] == field, response.json()
        assert client.get("/v1/sets/0/documents").status_code == 422
        assert upload(client, 0, {"a.txt": "x"}).status_code == 422


def test_rerank_only_when_the_engine_has_it(service: Service, keys: dict[str, str], corpus: dict[str, object]) -> None:
    with service.client(keys["user"]) as client:
        response = client.post("/v1/search", json={"query": "bones", "set_id": 1, "rerank": False})
    if "rerank" in inspect.signature(Engine.search).parameters:
        assert response.status_code == 200
    else:
        assert response.status_code == 422 and "rerank not available" in response.json()["message"]


def test_chunk_get_patch_delete(service: Service, keys: dict[str, str]) -> None:
    with service.client(keys["user"]) as client:
        job = wait_for_job(
            client, upload(client, 2, {"notes.txt": "Mitochondria are the powerhouse of the cell."}).json()["job_id"]
        )
        assert job["status"] == "succeeded"
        hit = client.post("/v1/search", json={"query": "powerhouse", "set_id": 2}).json()["hits"][0]
        chunk_id = hit["chunk_id"]
        chunk = client.get(f"/v1/chunks/{chunk_id}").json()
        assert chunk["text"].startswith("Mitochondria") and chunk["statuses"]["dense"] == "SUCCESS"

        patched = client.patch(f"/v1/chunks/{chunk_id}", json={"text": "Ribosomes build proteins from amino acids."})
        assert patched.status_code == 200, patched.text
        assert patched.json()["reembedded"] is True and patched.json()["ok"] is True
        top = client.post("/v1/search", json={"query": "protein synthesis amino acids", "set_id": 2}).json()["hits"][0]
        assert top["chunk_id"] == chunk_id and top["text"].startswith("Ribosomes")

        meta = client.patch(f"/v1/chunks/{chunk_id}", json={"metadata": {"reviewed": "yes"}}).json()
        assert meta["reembedded"] is False and meta["metadata_updated"] is True
        assert client.get(f"/v1/chunks/{chunk_id}").json()["metadata"]["reviewed"] == "yes"
        assert client.patch(f"/v1/chunks/{chunk_id}", json={}).status_code == 422
        assert client.patch(f"/v1/chunks/{chunk_id}", json={"text": "x", "bogus": 1}).status_code == 422

        deleted = client.delete(f"/v1/chunks/{chunk_id}")
        assert deleted.status_code == 200 and deleted.json()["removed"] == 1
        assert client.get(f"/v1/chunks/{chunk_id}").status_code == 404
        assert client.delete(f"/v1/chunks/{chunk_id}").status_code == 404
        hits = client.post("/v1/search", json={"query": "ribosomes proteins", "set_id": 2}).json()["hits"]
        assert chunk_id not in {h["chunk_id"] for h in hits}


def test_delete_document(service: Service, keys: dict[str, str]) -> None:
    with service.client(keys["user"]) as client:
        job = wait_for_job(client, upload(client, 3, {"gone.txt": "Tectonic plates drift slowly."}).json()["job_id"])
        doc_id = job["runs"][0]["doc_id"]
        blob = service.state.blob_root / str(USER) / "3" / "gone.txt"
        assert blob.exists()
        response = client.delete(f"/v1/documents/{doc_id}")
        assert response.status_code == 200 and response.json()["removed"] >= 1
        assert client.get("/v1/sets/3/documents").json()["documents"] == []
        assert client.post("/v1/search", json={"query": "tectonic plates", "set_id": 3}).json()["hits"] == []
        assert client.delete(f"/v1/documents/{doc_id}").status_code == 404
        assert not blob.exists()


def test_another_tenants_objects_answer_404_like_missing_ones(
    service: Service, keys: dict[str, str], corpus: dict[str, object]
) -> None:
    store = service.state.engine.store
    doc_id = corpus["docs"][0]["doc_id"]  # type: ignore[index]
    chunk_id = store.chunks_of_document(doc_id)[0].chunk_id
    job_id = corpus["job"]["job_id"]  # type: ignore[index]
    before = store.get_chunks([chunk_id])[0]
    with service.client(keys["other"]) as other:
        for method, path, payload in [
            ("GET", f"/v1/chunks/{chunk_id}", None),
            ("PATCH", f"/v1/chunks/{chunk_id}", {"text": "hijacked"}),
            ("DELETE", f"/v1/chunks/{chunk_id}", None),
            ("DELETE", f"/v1/documents/{doc_id}", None),
            ("GET", f"/v1/jobs/{job_id}", None),
        ]:
            response = other.request(method, path, json=payload)
            assert response.status_code == 404, (method, path)
            missing = other.request(
                method,
                path.replace(str(chunk_id), "0" * 36).replace(str(job_id), "f" * 32).replace(f"/{doc_id}", "/999999"),
                json=payload,
            )
            assert missing.status_code == 404
            assert response.json()["error"] == missing.json()["error"] == "NotFoundError"
        # set ids are per tenant: user 2's set 1 holds only user 2's documents
        names = {d["filename"] for d in other.get("/v1/sets/1/documents").json()["documents"]}
        assert names == {"ocean.txt"}
        hits = other.post("/v1/search", json={"query": "bones calcium", "set_id": 1, "doc_ids": [doc_id]}).json()
        assert hits["hits"] == []
    after = store.get_chunks([chunk_id])[0]
    assert after == before


def test_upload_type_size_and_name_rules(service: Service, keys: dict[str, str]) -> None:
    with service.client(keys["user"]) as client:
        bad_type = upload(client, 4, {"tool.exe": b"MZ\x90\x00"})
        assert bad_type.status_code == 415 and bad_type.json()["error"] == "UnsupportedFormatError"
        too_big = upload(client, 4, {"big.txt": "a" * (MAX_FILE_BYTES + 1)})
        assert too_big.status_code == 413 and too_big.json()["error"] == "DocumentTooLargeError"
        body_too_big = upload(client, 4, {"huge.txt": "b" * (MAX_UPLOAD_BYTES + 10)})
        assert body_too_big.status_code == 413
        assert client.post("/v1/sets/4/documents").status_code == 422  # no files
        sneaky = upload(client, 4, {"../../../etc/passwd.txt": "root:x:0:0"})
        assert sneaky.status_code == 202 and sneaky.json()["files"] == ["passwd.txt"]
        wait_for_job(client, sneaky.json()["job_id"])
    saved = list((service.state.blob_root / str(USER) / "4").iterdir())
    assert [p.name for p in saved] == ["passwd.txt"]
    assert not any(p.name.startswith(".upload-") for p in saved)


def test_a_corrupt_file_fails_its_job_with_the_error(service: Service, keys: dict[str, str]) -> None:
    with service.client(keys["user"]) as client:
        job = wait_for_job(client, upload(client, 5, {"broken.pdf": b"%PDF-1.4 this is not a pdf"}).json()["job_id"])
    assert job["status"] == "failed"
    assert "broken.pdf" in job["error"]
    assert job["report"]["documents"]["failed"] == 1


def test_admin_endpoints_need_an_admin_key(service: Service, keys: dict[str, str], corpus: dict[str, object]) -> None:
    with service.client(keys["user"]) as client:
        for method, path in [("GET", "/v1/status"), ("POST", "/v1/verify"), ("POST", "/v1/repair")]:
            response = client.request(method, path)
            assert response.status_code == 403 and response.json()["error"] == "PermissionDeniedError"
        me = client.get("/v1/me").json()
        assert me["user_id"] == USER and me["admin"] is False
    with service.client(keys["admin"]) as admin:
        status = admin.get("/v1/status").json()
        assert {s["user_id"] for s in status["sets"]} >= {USER, OTHER}
        assert admin.post("/v1/verify").json()["ok"] is True
        repair = admin.post("/v1/repair", json={"dry_run": True})
        assert repair.status_code == 200, repair.text


def test_metrics_expose_latency_ingest_and_chunk_gauges(
    service: Service, keys: dict[str, str], corpus: dict[str, object]
) -> None:
    with service.client(keys["admin"]) as client:
        text = client.get("/metrics").text
    assert 'ragindex_http_request_duration_seconds_count{method="POST",route="/v1/search",status="200"}' in text
    assert 'route="/v1/chunks/{chunk_id}"' in text or "route=" in text
    assert "ragindex_ingest_chunks_embedded_total" in text
    assert 'ragindex_ingest_documents_total{outcome="added"}' in text
    assert 'ragindex_chunks{kind="dense",status="SUCCESS"}' in text


def test_keys_cli_create_list_revoke(service: Service) -> None:
    runner = CliRunner()
    base = ["--data-dir", str(service.data_dir), "keys"]
    created = runner.invoke(cli_app, [*base, "create", "--user-id", "9", "--json"])
    assert created.exit_code == 0, created.output
    info = json.loads(created.stdout)
    assert info["key"].startswith("rgx_") and info["user_id"] == 9
    with service.client(info["key"]) as client:
        assert client.get("/v1/me").json()["user_id"] == 9
        listed = runner.invoke(cli_app, [*base, "list", "--json"])
        assert listed.exit_code == 0
        assert info["key"] not in listed.stdout
        assert info["key_id"] in {k["key_id"] for k in json.loads(listed.stdout)["keys"]}
        assert "key_hash" not in listed.stdout
        revoked = runner.invoke(cli_app, [*base, "revoke", info["key_id"]])
        assert revoked.exit_code == 0
        assert client.get("/v1/me").status_code == 401
    assert runner.invoke(cli_app, [*base, "revoke", info["key_id"]]).exit_code == 7


def test_a_request_reads_its_key_once(service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate checks the key before the body and hands the route its principal: one key lookup a request (a
    second one cost ~0.4 ms of the event loop's time on every search). A revoked key is refused at the next request."""
    key = service.key(31)
    store = service.state.store
    lookups: list[str] = []
    read = store.key_owner

    def counted(key_hash: str) -> object:
        lookups.append(key_hash)
        return read(key_hash)

    monkeypatch.setattr(store, "key_owner", counted)
    with service.client(key) as client:
        me = client.get("/v1/me").json()
        assert me["user_id"] == 31 and len(lookups) == 1
        found = client.post("/v1/search", json={"set_id": 1, "query": "anything"})
        assert found.status_code == 200 and len(lookups) == 2
        revoke_key(store, me["key_id"])
        assert client.get("/v1/me").status_code == 401


def test_searches_are_answered_while_an_ingest_job_runs(service: Service, keys: dict[str, str]) -> None:
    """A job of ~150 chunks runs on the job thread; searches of another set keep answering meanwhile."""
    paragraphs = [f"Paragraph {i} about river deltas, sediment and tides number {i}." * 3 for i in range(150)]
    with service.client(keys["user"]) as client:
        job_id = upload(client, 6, {"rivers.txt": "\n\n".join(paragraphs)}).json()["job_id"]
        during: list[float] = []
        stop = threading.Event()
        while not stop.is_set():
            status = client.get(f"/v1/jobs/{job_id}").json()["status"]
            if status in ("succeeded", "failed"):
                stop.set()
                break
            if status == "running":
                started = time.perf_counter()
                response = client.post("/v1/search", json={"query": "vitamin calcium", "set_id": 1})
                assert response.status_code == 200
                during.append(time.perf_counter() - started)
        assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "succeeded"
    assert during, "the job finished before any search ran"
    assert max(during) < 10.0


def test_blob_paths_stay_under_the_tenant_folder(service: Service) -> None:
    root = service.state.blob_root
    for path in root.rglob("*"):
        if path.is_file():
            assert Path(path).resolve().is_relative_to(root)
            assert path.relative_to(root).parts[0].isdigit()


def test_admin_backup_while_searches_run(service: Service, keys: dict[str, str], corpus: dict[str, object]) -> None:
    from ragindex.transfer.backup import read_backup

    stop = threading.Event()
    statuses: list[int] = []

    def searches() -> None:
        with service.client(keys["user"]) as client:
            while not stop.is_set():
                statuses.append(client.post("/v1/search", json={"query": "vitamin calcium", "set_id": 1}).status_code)

    thread = threading.Thread(target=searches)
    thread.start()
    try:
        with service.client(keys["user"]) as client:
            assert client.post("/v1/backup", json={"name": "nightly"}).status_code == 403
        with service.client(keys["admin"]) as admin:
            response = admin.post("/v1/backup", json={"name": "nightly"})
            assert response.status_code == 200, response.text
            again = admin.post("/v1/backup", json={"name": "nightly"})
            assert again.status_code == 409 and "new directory" in again.json()["message"]
            assert admin.post("/v1/backup", json={"name": "../escape"}).status_code == 422
    finally:
        stop.set()
        thread.join()
    assert statuses and set(statuses) == {200}
    report = response.json()
    assert Path(report["path"]) == service.data_dir / "backups" / "nightly"
    assert report["kind"] == "sqlite" and report["counts"]["documents"] >= 3
    assert read_backup(Path(report["path"]))["counts"] == report["counts"]
