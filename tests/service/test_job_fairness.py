"""Issue 23: one tenant's document cannot stop another's work.

The runner's scheduling (pure logic: one queue per tenant, taken round-robin, one job of a tenant at a time), then
the real service with its default job threads: while one tenant's 150,000-paragraph docx is being parsed (about two
minutes here), another tenant's one-line upload runs to the end and its search is answered.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest
from slowdocs import slow_docx

from conftest import Service, upload, wait_for_job
from ragindex.service.jobs import TenantQueues
from ragindex.service.settings import ServiceSettings

BIG, SMALL = 2301, 2302


def test_tenants_take_turns_and_a_tenant_runs_one_job_at_a_time() -> None:
    queues = TenantQueues()
    for job in ("a1", "a2", "a3"):
        queues.put(1, job)
    queues.put(2, "b1")
    queues.put(3, "c1")
    queues.put(2, "b2")
    assert len(queues) == 6
    # tenant 1 is first in turn; its next job waits while a1 runs, so the others come next
    assert [queues.take(), queues.take(), queues.take()] == [(1, "a1"), (2, "b1"), (3, "c1")]
    assert len(queues) == 3
    queues.done(2)
    assert queues.take() == (2, "b2"), "tenant 1 is still busy: tenant 2's next job goes first"
    queues.done(1)
    assert queues.take() == (1, "a2")

    waiting: list[tuple[int, str] | None] = []
    thread = threading.Thread(target=lambda: waiting.append(queues.take()))
    thread.start()
    thread.join(0.2)
    assert thread.is_alive(), "a3 waits until a2 is done: one job of a tenant at a time"
    queues.done(1)
    thread.join(10)
    assert waiting == [(1, "a3")]

    blocked = threading.Thread(target=lambda: waiting.append(queues.take()))
    blocked.start()
    queues.close()
    blocked.join(10)
    assert waiting[-1] is None and not blocked.is_alive()


def test_the_default_runs_two_job_threads() -> None:
    settings = ServiceSettings(_env_file=None)  # type: ignore[call-arg]
    assert (settings.job_workers, settings.job_max_starts) == (2, 3)


def _status(client: httpx.Client, job_id: str) -> dict[str, Any]:
    body: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").raise_for_status().json()
    return body


@pytest.mark.integration
def test_a_tenants_job_runs_while_another_tenants_huge_docx_is_parsed(service: Service) -> None:
    assert service.state.jobs.workers == 2, "the shared service runs the default"
    with service.client(service.key(BIG)) as big, service.client(service.key(SMALL)) as small:
        slow = upload(big, 1, {"paragraphs.docx": slow_docx()}).json()["job_id"]
        try:
            deadline = time.monotonic() + 60
            while _status(big, slow)["status"] != "running":
                assert time.monotonic() < deadline, _status(big, slow)
                time.sleep(0.05)

            quick = upload(small, 1, {"kettle.txt": "The lighthouse keeper's copper kettle whistles at dawn."})
            done = wait_for_job(small, quick.json()["job_id"], timeout=90)
            assert done["status"] == "succeeded", done
            assert _status(big, slow)["status"] == "running", "the small job did not wait for the docx"

            body = small.post("/v1/search", json={"query": "copper kettle", "set_id": 1, "top_k": 3})
            assert body.status_code == 200, body.text
            assert [h["filename"] for h in body.json()["hits"]][:1] == ["kettle.txt"]
            assert _status(big, slow)["status"] == "running", "searched while the docx was still being parsed"
        finally:
            big.delete(f"/v1/jobs/{slow}")  # the job ends now (or at the end of its parse)
            deadline = time.monotonic() + 300
            while _status(big, slow)["status"] in ("queued", "running", "cancelling"):
                assert time.monotonic() < deadline, _status(big, slow)
                time.sleep(0.2)
