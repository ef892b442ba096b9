"""``ragindex.client.Client`` against a real ``ragindex serve``: every route, and the errors mapped back."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from ragindex.client import Client, models
from ragindex.errors import (
    AuthenticationError,
    BackendError,
    JobStateError,
    NotFoundError,
    PermissionDeniedError,
    UnsupportedFormatError,
    ValidationError,
)
from ragindex.types import SearchResult
from servekit import CORPUS_SET, CORPUS_USER, Served, free_port, ready_checks

pytestmark = pytest.mark.integration

USER = 11  # this module's own tenant for the flows that write


@pytest.fixture
def client(served: Served) -> Client:
    with Client(served.url, api_key=served.key(CORPUS_USER), timeout=60) as c:
        yield c


def test_probes_answer_without_a_key(served: Served) -> None:
    with Client(served.url) as anonymous:
        assert anonymous.health().status == "ok"
        ready = anonymous.ready()
        assert ready.ready and ready.checks == ready_checks()
    # /metrics needs an admin key unless RAGINDEX_METRICS_PUBLIC=true
    with Client(served.url, api_key=served.key(CORPUS_USER, admin=True)) as admin:
        assert "ragindex_http_request_duration_seconds" in admin.metrics()


def test_me_names_the_tenant_and_role(served: Served, client: Client) -> None:
    me = client.me()
    assert isinstance(me, models.KeyInfo) and me.user_id == CORPUS_USER and not me.admin
    with Client(served.url, api_key=served.key(CORPUS_USER, admin=True)) as admin:
        assert admin.me().admin


def test_search_returns_the_engines_search_result(served: Served, client: Client) -> None:
    result = client.search("how many queens does a honeybee colony have", set_id=CORPUS_SET, top_k=2)
    assert isinstance(result, SearchResult) and result.mode == "hybrid"
    assert [h.filename for h in result.hits][:1] == ["bees.txt"] and len(result.hits) == 2
    top = result.hits[0]
    assert top.rank == 1 and top.set_id == CORPUS_SET and "queen" in top.text
    assert set(top.scores) == {"dense", "bm25"} and top.scores["bm25"].rank == 1
    assert result.latency_ms["total"] > 0

    # options pass through: mode, doc_ids, expand
    bm25 = client.search("congestion window", set_id=CORPUS_SET, mode="bm25", expand="neighbours")
    assert bm25.mode == "bm25" and [h.filename for h in bm25.hits] == ["tcp.txt"]
    assert set(bm25.hits[0].scores) == {"bm25"} and bm25.hits[0].context is not None
    only = client.search("queen", set_id=CORPUS_SET, doc_ids=[bm25.hits[0].doc_id], mode="dense")
    assert {h.doc_id for h in only.hits} == {bm25.hits[0].doc_id}
    narrowed = client.search("queen bees", set_id=CORPUS_SET, sources=["bm25"], on_source_error="degrade")
    assert narrowed.hits and all(set(h.scores) == {"bm25"} for h in narrowed.hits) and narrowed.degraded == {}
    with pytest.raises(ValidationError) as refused:
        client.search("queen", set_id=CORPUS_SET, sources=["colbert"])
    assert refused.value.context["field"].startswith("sources")


def test_search_by_vector_sends_an_array_as_floats(served: Served, client: Client) -> None:
    from ragindex import factory
    from ragindex.config.settings import Settings

    dense = factory.build_dense_encoder(Settings(_env_file=None, data_dir=served.data_dir))  # type: ignore[call-arg]
    vector = dense.encode_queries(["how many queens does a honeybee colony have"])[0]  # float32, not JSON as is
    result = client.search("", set_id=CORPUS_SET, mode="dense", vector=vector, top_k=1)
    assert [h.filename for h in result.hits] == ["bees.txt"] and set(result.hits[0].scores) == {"dense"}
    with pytest.raises(ValidationError) as refused:
        client.search("", set_id=CORPUS_SET, mode="dense", vector=vector[:5])  # another model's dimension
    assert refused.value.context["field"] == "vector"
    with pytest.raises(ValidationError, match="numbers"):
        client.search("", set_id=CORPUS_SET, mode="dense", vector=["a", "b"])


def test_search_parser_keeps_every_field_of_the_wire_format(served: Served, client: Client) -> None:
    """What the service sends is what ``SearchResult.to_dict`` gives back after parsing: nothing is lost."""
    body = {"query": "sugar from light", "set_id": CORPUS_SET, "expand": "section", "group_by": "document"}
    headers = {"Authorization": f"Bearer {served.key(CORPUS_USER)}"}
    raw = httpx.post(f"{served.url}/v1/search", json=body, headers=headers, timeout=60).raise_for_status().json()
    assert raw["hits"] and models.search_result(raw).to_dict() == raw


def test_an_empty_or_foreign_set_answers_no_hits(served: Served) -> None:
    """Sets are per tenant: another tenant's key sees no hits in set 1, and learns nothing about it."""
    with Client(served.url, api_key=served.key(USER + 1)) as other:
        assert other.search("honeybee queen", set_id=CORPUS_SET).hits == ()
        assert other.sets().sets == []


def test_upload_inspect_edit_and_delete(served: Served, tmp_path: Path) -> None:
    path = tmp_path / "comets.txt"
    path.write_text("Comets are icy bodies whose tails point away from the Sun.", encoding="utf-8")
    with Client(served.url, api_key=served.key(USER)) as c:
        accepted = c.upload(3, [path, ("owls.md", b"# Owls\n\nOwls hunt at night with silent feathers.")])
        assert accepted.status == "queued" and accepted.files == ["comets.txt", "owls.md"]
        job = c.wait_for_job(accepted.job_id)
        assert job.status == "succeeded" and job.finished and len(job.runs) == 2 and job.report
        assert all(r.status == "SUCCESS" for r in job.runs)
        assert accepted.job_id in [j.job_id for j in c.jobs().jobs]
        assert c.jobs(status="failed").jobs == []

        assert [(s.set_id, s.documents, s.statuses) for s in c.sets().sets] == [(3, 2, {"SUCCESS": 2})]
        listed = c.set_documents(3)
        assert sorted(d.filename for d in listed.documents) == ["comets.txt", "owls.md"]
        first = c.documents(set_id=3, limit=1)
        assert len(first.documents) == 1 and first.next_cursor is not None
        second = c.documents(set_id=3, limit=1, cursor=first.next_cursor)
        assert second.next_cursor is None and second.documents[0].doc_id != first.documents[0].doc_id
        owls = next(d for d in listed.documents if d.filename == "owls.md")

        detail = c.document(owls.doc_id, chunks=True)
        assert detail.document.doc_id == owls.doc_id and detail.chunks
        assert c.document(owls.doc_id).chunks is None
        parsed = c.parsed_document(owls.doc_id)
        assert parsed.doc_id == owls.doc_id and "silent feathers" in parsed.text

        chunk_id = next(ch.chunk_id for ch in detail.chunks if ch.unit == "chunk")
        chunk = c.chunk(chunk_id)
        assert chunk.doc_id == owls.doc_id and "silent feathers" in chunk.text and chunk.statuses["dense"] == "SUCCESS"
        tagged = c.update_chunk(chunk_id, metadata={"reviewed": "yes"})
        assert tagged.metadata_updated and not tagged.content_changed and tagged.ok
        assert c.chunk(chunk_id).metadata["reviewed"] == "yes"
        rewritten = c.update_chunk(chunk_id, text="Owls hunt mice at night on silent wings.")
        assert rewritten.content_changed and rewritten.reembedded
        assert c.search("silent wings", set_id=3, mode="bm25").hits[0].chunk_id == chunk_id

        gone = c.delete_chunk(chunk_id)
        assert gone.removed == 1 and gone.chunk_ids == [chunk_id]
        with pytest.raises(NotFoundError):
            c.chunk(chunk_id)
        deleted = c.delete_document(owls.doc_id)
        assert deleted.doc_ids == [owls.doc_id]
        with pytest.raises(NotFoundError) as missing:
            c.document(owls.doc_id)
        assert missing.value.context["status"] == 404 and f"/v1/documents/{owls.doc_id}" in missing.value.context["url"]

        # a finished job cannot be cancelled: 409 comes back as the service's own class
        with pytest.raises(JobStateError, match="already"):
            c.cancel_job(accepted.job_id)


def test_admin_routes_need_an_admin_key(served: Served, client: Client) -> None:
    with pytest.raises(PermissionDeniedError, match="admin key"):
        client.status()
    with Client(served.url, api_key=served.key(CORPUS_USER, admin=True), timeout=120) as admin:
        status = admin.status()
        assert any(s["user_id"] == CORPUS_USER for s in status.sets) and status.collections
        assert set(status.jobs) == {"queued", "running"}
        verified = admin.verify()
        assert verified.ok and verified.collection
        repaired = admin.repair(dry_run=True)
        assert repaired.dry_run and repaired.ok and "samples" in (repaired.model_extra or {})
        assert all(isinstance(v, bool) for v in admin.optimize().optimized.values())


def test_a_missing_or_unknown_key_is_an_authentication_error(served: Served) -> None:
    with Client(served.url) as anonymous, pytest.raises(AuthenticationError, match="missing API key") as caught:
        anonymous.me()
    assert caught.value.context["status"] == 401
    with Client(served.url, api_key="rk_not-a-key") as wrong, pytest.raises(AuthenticationError, match="invalid"):
        wrong.search("queen", set_id=1)


def test_unknown_objects_are_not_found(client: Client) -> None:
    with pytest.raises(NotFoundError):
        client.document(987654)
    with pytest.raises(NotFoundError):
        client.chunk("no-such-chunk")
    with pytest.raises(NotFoundError):
        client.job("no-such-job")


def test_invalid_requests_are_validation_errors_naming_the_field(client: Client) -> None:
    with pytest.raises(ValidationError) as caught:
        client.search("queen", set_id=CORPUS_SET, top_k=0)
    err = caught.value
    assert err.field == "top_k" and err.message.startswith("top_k: ") and err.context["status"] == 422
    assert err.context["detail"][0]["loc"] == ["body", "top_k"]
    with pytest.raises(ValidationError) as unknown_mode:
        client.search("queen", set_id=CORPUS_SET, mode="telepathy")
    assert unknown_mode.value.field == "mode"
    with pytest.raises(ValidationError) as extra:  # request fields of newer servers are sent; this one refuses them
        client.search("queen", set_id=CORPUS_SET, no_such_option=True)
    assert extra.value.field == "no_such_option"
    with pytest.raises(ValidationError, match="text"):
        client.update_chunk("any-chunk")
    with pytest.raises(UnsupportedFormatError):
        client.upload(CORPUS_SET, [("tool.exe", b"MZ")])


def test_a_server_that_is_down_is_a_backend_error_naming_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with Client(url, api_key="k") as c, pytest.raises(BackendError, match="unreachable") as caught:
        c.search("queen", set_id=1)
    assert url in caught.value.message and "ragindex serve" in caught.value.message
    assert caught.value.context["url"] == f"{url}/v1/search"


def test_a_server_that_does_not_answer_in_time_is_a_backend_error() -> None:
    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with Client(url, timeout=0.3) as c, pytest.raises(BackendError, match=r"did not answer within 0\.3 s"):
            c.health()


def test_constructor_validates_its_arguments() -> None:
    with pytest.raises(ValidationError, match="url"):
        Client("127.0.0.1:8000")
    with pytest.raises(ValidationError, match="timeout"):
        Client("http://127.0.0.1:8000", timeout=0)
    with pytest.raises(ValidationError, match="files"):
        Client("http://127.0.0.1:8000").upload(1, "one.txt")  # type: ignore[arg-type]
