"""The routes await the service's AsyncEngine: a request waiting on the engine never holds the event loop."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from conftest import Service
from ragindex.aio import AsyncEngine
from ragindex.service.search_pool import SearchPool

pytestmark = pytest.mark.integration

USER = 401  # this module's tenant (other modules use other ids)


def test_requests_are_served_while_searches_wait_for_the_index(
    service: Service, ingest: Callable[[httpx.Client, int, dict[str, str | bytes]], dict[str, Any]]
) -> None:
    state = service.state
    assert isinstance(state.aengine, AsyncEngine) and state.aengine.engine is state.engine
    with service.client(service.key(USER)) as client:
        ingest(client, 1, {"otters.txt": "Sea otters hold hands while they sleep so they do not drift apart."})
        body = {"query": "otters sleeping", "set_id": 1}
        expected = client.post("/v1/search", json=body).raise_for_status().json()["hits"]
        assert expected[0]["filename"] == "otters.txt"

        gate, holding = threading.Event(), threading.Event()

        def long_index_call() -> None:  # what an optimize() does to the index thread
            holding.set()
            gate.wait(60)

        index_thread = state.engine.index_thread
        blocker = index_thread.submit(long_index_call)
        try:
            assert holding.wait(30)
            # in the service process every search waits on the index thread; search processes (the default on 2+
            # cores) read the embedded index off it (docs/service.md, "Reads off the index thread"): answered now
            pooled = isinstance(state.extra.get("search_pool"), SearchPool)
            with ThreadPoolExecutor(3) as pool:
                searches = [pool.submit(client.post, "/v1/search", json=body) for _ in range(3)]
                if pooled:
                    answers = [s.result(timeout=60).raise_for_status().json()["hits"] for s in searches]
                    assert index_thread.pending == 1 and not blocker.done()
                else:
                    for _ in range(3000):
                        if index_thread.pending == 4:
                            break
                        time.sleep(0.01)
                    assert index_thread.pending == 4
                # the loop is free: other requests are answered, an engine read on the pool included
                assert client.get("/healthz", timeout=10).json() == {"status": "ok"}
                assert client.get("/v1/me", timeout=10).json()["user_id"] == USER
                sets = client.get("/v1/sets", timeout=10).raise_for_status().json()["sets"]
                assert sets == [{"set_id": 1, "documents": 1, "statuses": {"SUCCESS": 1}}]
                if not pooled:
                    assert not any(s.done() for s in searches)
                    gate.set()
                    answers = [s.result(timeout=60).raise_for_status().json()["hits"] for s in searches]
        finally:
            gate.set()
        blocker.result(timeout=60)
    assert all(a == expected for a in answers)
