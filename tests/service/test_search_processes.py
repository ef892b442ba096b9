"""``RAGINDEX_SEARCH_PROCESSES``: searches run in search processes, the index stays in the service (issue 27).

A real service over real HTTP with two search processes (spawned, each with the shipped model), the index served
to them over the Unix socket. What must hold: the same answer as a search in the service process, read-your-writes
for a record upsert, a removed record never returned (ghost filtering in the search process), errors answered as
the service process answers them, and the scores the processes observed reaching the service's drift watch.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import ServerThread, Service
from ragindex.config.settings import Settings
from ragindex.service.app import create_app
from ragindex.service.keys import create_key
from ragindex.service.search_pool import SearchPool
from ragindex.service.settings import ServiceSettings

pytestmark = pytest.mark.integration

USER, SET = 7, 1
RECORDS = [
    {"key": "bees", "text": "A honeybee colony has one queen and thousands of workers; honey is harvested in summer."},
    {"key": "tides", "text": "High water at the harbour comes twice a day, pulled by the moon."},
    {"key": "basalt", "text": "Basalt columns form as thick lava cools and cracks into hexagons."},
]


@pytest.fixture(scope="module")
def pooled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Service, httpx.Client]]:
    data_dir = tmp_path_factory.mktemp("pooled-data")
    settings = Settings(_env_file=None, data_dir=data_dir)  # type: ignore[call-arg]
    service = ServiceSettings(_env_file=None, search_processes=2, search_batch_max=4)  # type: ignore[call-arg]
    app = create_app(settings, service)
    server = ServerThread(app)
    server.start()
    try:
        state = app.state.service
        key = str(create_key(state.store, user_id=USER)["key"])
        running = Service(url=server.url, state=state, data_dir=data_dir)
        with running.client(key) as client:
            answer = client.post(f"/v1/sets/{SET}/records", json={"records": RECORDS})
            assert answer.status_code == 200, answer.text
            yield running, client
    finally:
        server.stop()


def _search(client: httpx.Client, query: str, **extra: Any) -> httpx.Response:
    return client.post("/v1/search", json={"query": query, "set_id": SET, **extra})


def _pool(service: Service) -> SearchPool:
    pool = service.state.extra["search_pool"]
    assert isinstance(pool, SearchPool)
    return pool


def test_every_search_process_warms_up_before_the_service_is_ready(pooled: tuple[Service, httpx.Client]) -> None:
    """One warm-up task a process, held until all have one: no process meets its first search cold."""
    service, client = pooled
    pool = _pool(service)
    deadline = time.monotonic() + 180
    while pool.status() != "ok":
        assert pool.status() == "starting" and time.monotonic() < deadline, pool.status()
        time.sleep(0.1)
    assert len(pool.warmed) == pool.processes == 2
    assert all(frozen > 10_000 for frozen in pool.warmed.values())  # the model and modules: out of the GC's walks
    assert client.get("/readyz").status_code == 200


def test_a_search_process_answers_as_the_service_process_does(pooled: tuple[Service, httpx.Client]) -> None:
    service, client = pooled
    before = _pool(service).searches
    for extra in ({}, {"mode": "bm25", "group_by": "none"}, {"expand": "neighbours", "top_k": 2}):
        response = _search(client, "when is honey harvested", **extra)
        assert response.status_code == 200, response.text
        body = response.json()
        expected = service.state.engine.search("when is honey harvested", user_id=USER, set_id=SET, **extra)
        assert [h["chunk_id"] for h in body["hits"]] == [h.chunk_id for h in expected.hits]
        assert body["hits"][0]["key"] == "bees" and body["hits"][0]["source"] == "bees"
        assert [h["score"] for h in body["hits"]] == pytest.approx([h.score for h in expected.hits])
    assert _pool(service).searches >= before + 3  # answered by the search processes, not by the fallback


def test_a_search_by_vector_runs_in_a_search_process(pooled: tuple[Service, httpx.Client]) -> None:
    """The vector travels to the search process, which searches with it and encodes nothing for it."""
    service, client = pooled
    engine = service.state.engine
    vector = [float(x) for x in engine.dense.encode_queries(["lava that cools into columns"])[0]]
    before = _pool(service).searches
    for extra in ({"mode": "dense", "query": ""}, {"mode": "hybrid", "query": "honey harvested in summer"}):
        response = client.post("/v1/search", json={"set_id": SET, "vector": vector, **extra})
        assert response.status_code == 200, response.text
        query = str(extra.pop("query"))
        expected = engine.search(query, user_id=USER, set_id=SET, vector=vector, **extra)
        assert [h["chunk_id"] for h in response.json()["hits"]] == [h.chunk_id for h in expected.hits]
        assert "basalt" in [h["key"] for h in response.json()["hits"][:2]]
    assert _pool(service).searches >= before + 2
    bad = client.post("/v1/search", json={"set_id": SET, "vector": vector[:10], "mode": "dense"})
    assert bad.status_code == 422 and bad.json()["context"]["field"] == "vector"


def test_upserts_are_read_by_the_next_search_and_removed_records_never(pooled: tuple[Service, httpx.Client]) -> None:
    _, client = pooled
    put = client.put(f"/v1/sets/{SET}/records/saffron", json={"text": "Saffron is the dried stigma of a crocus."})
    assert put.status_code == 200, put.text
    keys = [hit["key"] for hit in _search(client, "dried crocus stigma").json()["hits"]]
    assert keys[0] == "saffron"  # read your writes, from another process
    assert client.delete(f"/v1/sets/{SET}/records/saffron").status_code == 200
    for mode in ("hybrid", "dense", "bm25"):
        hits = _search(client, "dried crocus stigma", mode=mode).json()["hits"]
        assert "saffron" not in [hit["key"] for hit in hits], mode


def test_a_record_key_that_looks_like_a_path_is_answered_as_given(pooled: tuple[Service, httpx.Client]) -> None:
    """Only the document's file URI (``record:<key>``) tells a record keyed ``/notes/...`` from a server file."""
    service, client = pooled
    before = _pool(service).searches
    put = client.put(f"/v1/sets/{SET}/records/%2Fnotes%2Fobsidian", json={"text": "Obsidian is volcanic glass."})
    assert put.status_code == 200, put.text
    try:
        hit = _search(client, "volcanic glass").json()["hits"][0]
        assert (hit["key"], hit["source"]) == ("/notes/obsidian", "/notes/obsidian")
        assert _pool(service).searches > before
    finally:
        assert client.delete(f"/v1/sets/{SET}/records/%2Fnotes%2Fobsidian").status_code == 200


def test_errors_are_answered_as_in_the_service_process(pooled: tuple[Service, httpx.Client]) -> None:
    _, client = pooled
    bad = _search(client, "honey", filter={"year": {"$gte": 2020}})
    assert bad.status_code == 422 and bad.json()["context"]["field"] == "filter"
    assert _search(client, "honey", mode="sparse").status_code == 422  # not configured
    assert _search(client, "   ").json()["hits"] == []


def test_the_drift_watch_gets_the_scores_of_the_search_processes(pooled: tuple[Service, httpx.Client]) -> None:
    service, client = pooled
    watch = service.state.engine.score_watch
    if watch is None:
        pytest.skip("the drift watch is off in this configuration")
    seen: list[str] = []
    real = watch.observe

    def observe(source: str, fingerprint: str, scores: Any) -> None:
        seen.append(source)
        real(source, fingerprint, scores)

    watch.observe = observe  # type: ignore[method-assign]
    try:
        assert _search(client, "basalt lava columns").status_code == 200
    finally:
        watch.observe = real  # type: ignore[method-assign]
    assert {"dense", "bm25", "fused"} <= set(seen)


def test_the_index_server_serves_reads_only(pooled: tuple[Service, httpx.Client], tmp_path: Path) -> None:
    from ragindex.service.search_pool import RemoteIndex

    service, _ = pooled
    server = _pool(service).server
    remote = RemoteIndex(server.address, server.authkey)
    try:
        remote._conn.send(("delete_points", ("c", 0, ["x"]), {}))
        status, message = remote._conn.recv()
        assert status == "error" and "delete_points" in message
    finally:
        remote.close()


def test_a_search_process_reads_the_index_while_the_index_thread_is_busy(pooled: tuple[Service, httpx.Client]) -> None:
    """A search process's index read runs on its connection's thread in the service, not behind queued writes."""
    service, client = pooled
    busy, release = threading.Event(), threading.Event()

    def long_write() -> None:  # an ingest's writes queued on the index thread, or an optimize
        busy.set()
        release.wait(60)

    held = service.state.engine.index_thread.submit(long_write)
    try:
        assert busy.wait(10)
        pool = _pool(service)
        searches = pool.searches
        answer = _search(client, "honey harvest", mode="dense")
        assert answer.status_code == 200 and answer.json()["hits"][0]["key"] == "bees"
        assert pool.searches == searches + 1 and not held.done()
    finally:
        release.set()
        held.result(10)


def test_a_search_body_goes_to_a_search_process_as_received(pooled: tuple[Service, httpx.Client]) -> None:
    """The fast path: the service hands the body over undecoded; the answer is the route's, and so is its label."""
    service, client = pooled
    pool = _pool(service)
    before, searches = pool.bodies, pool.searches
    registry = service.state.metrics.registry
    labels = {"route": "/v1/search", "method": "POST", "status": "200"}
    counted = registry.get_sample_value("ragindex_http_request_duration_seconds_count", labels) or 0.0
    response = _search(client, "when is honey harvested", top_k=2)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    expected = service.state.engine.search("when is honey harvested", user_id=USER, set_id=SET, top_k=2)
    assert [h["chunk_id"] for h in response.json()["hits"]] == [h.chunk_id for h in expected.hits]
    assert (pool.bodies, pool.searches) == (before + 1, searches + 1)  # one search process run, no other
    # labelled by its route, as the route's answers are
    assert registry.get_sample_value("ragindex_http_request_duration_seconds_count", labels) == counted + 1


def test_bodies_a_search_process_refuses_are_answered_by_the_route(pooled: tuple[Service, httpx.Client]) -> None:
    """Invalid bodies get the route's own 422s; what only orjson refuses still gets the route's answer."""
    service, client = pooled
    pool = _pool(service)
    searches = pool.searches
    missing = client.post("/v1/search", json={"query": "honey"})
    assert missing.status_code == 422 and missing.json()["context"]["field"] == "set_id"
    no_query = client.post("/v1/search", json={"set_id": SET})
    assert no_query.status_code == 422 and no_query.json()["context"]["field"] == "query"
    not_json = client.post("/v1/search", content=b"{not json", headers={"content-type": "application/json"})
    assert not_json.status_code == 422
    nan = client.post(
        "/v1/search",
        content=b'{"set_id": 1, "query": "x", "score_threshold": NaN}',
        headers={"content-type": "application/json"},
    )
    assert nan.status_code == 422 and nan.json()["context"]["field"] == "score_threshold"
    assert pool.searches == searches + 4  # each refused once by a search process, then answered by the route alone
    # UTF-16 is JSON to the route's decoder, not to orjson: the route runs it (in a search process, as a call)
    utf16 = json.dumps({"set_id": SET, "query": "when is honey harvested"}).encode("utf-16")
    answer = client.post("/v1/search", content=utf16, headers={"content-type": "application/json"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["hits"][0]["key"] == "bees"


def test_a_body_without_a_length_or_of_another_type_goes_to_the_route(pooled: tuple[Service, httpx.Client]) -> None:
    service, client = pooled
    pool = _pool(service)
    bodies, searches = pool.bodies, pool.searches
    body = json.dumps({"set_id": SET, "query": "when is honey harvested"}).encode()
    chunked = client.post(
        "/v1/search", content=iter([body[:10], body[10:]]), headers={"content-type": "application/json"}
    )
    assert chunked.status_code == 200, chunked.text
    assert chunked.json()["hits"][0]["key"] == "bees"
    other = client.post("/v1/search", content=body, headers={"content-type": "text/plain"})
    assert other.status_code == 422  # the route's answer to a body that is not JSON to it
    assert pool.bodies == bodies and pool.searches == searches + 1  # the chunked one, as the route's call


def test_a_search_that_fails_in_a_search_process_runs_once_more_in_the_service(
    pooled: tuple[Service, httpx.Client],
) -> None:
    """A failed search is the service process's to run and answer: not a second trip to a search process."""
    service, client = pooled
    pool = _pool(service)
    searches = pool.searches
    bad = _search(client, "honey", filter={"year": {"$gte": 2020}})
    assert bad.status_code == 422 and bad.json()["context"]["field"] == "filter"
    assert pool.searches == searches + 1
