"""The ``parse_result`` event of a finished ingest job, and its webhook delivery.

The event is what another system (the one that sent the parse task) waits for::

    {"event": "parse_result", "status": "success" | "failed", "job_id": "...", "user_id": 7, "set_id": 1,
     "documents": {"added": 2, ...}, "chunks": {"total": 9, "embedded": 9, "failed": 0, ...},
     "error": "..."}                     # only when failed

``status`` is ``success`` only when every file loaded and every chunk is indexed (a partial
failure is ``failed``, as the job row says). Delivery is at least once: a redelivered job
publishes its event again, so consumers de-duplicate on ``job_id``. The per-document events that come
before it are in :mod:`ragindex.service.document_events`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import httpx

from ragindex.service.job_state import JobState
from ragindex.service.store import JobRow

log = logging.getLogger(__name__)

EVENT = "parse_result"


def parse_result(job: JobRow) -> dict[str, Any]:
    """The event of a finished job (``success`` when the job row says ``succeeded``)."""
    report = job.report or {}
    event: dict[str, Any] = {
        "event": EVENT,
        "status": "success" if job.status == JobState.SUCCEEDED else "failed",
        "job_id": job.job_id,
        "user_id": job.user_id,
        "set_id": job.set_id,
        "documents": dict(report.get("documents") or {}),
        "chunks": dict(report.get("chunks") or {}),
    }
    if event["status"] == "failed":
        event["error"] = job.error or f"job ended {job.status}"
    if job.finished_at is not None:
        event["finished_at"] = job.finished_at.isoformat()
    return event


class Webhook:
    """POSTs events as JSON to one URL: bounded attempts with backoff, a timeout per attempt.

    A delivery that still fails is logged and dropped (the job row and the result queue keep
    the outcome); it never fails the job.

    Args:
        url: The receiver.
        timeout: Seconds per attempt.
        attempts: Attempts in all (retried on transport errors, 429 and 5xx).
        backoff: Seconds before the second attempt, doubling after each.
    """

    def __init__(self, url: str, *, timeout: float = 10.0, attempts: int = 3, backoff: float = 0.5) -> None:
        self.url = url
        self.attempts = attempts
        self.backoff = backoff
        self._client = httpx.Client(timeout=timeout, headers={"user-agent": "ragindex-worker"})

    def send(self, event: dict[str, Any]) -> bool:
        """Deliver one event; True when the receiver answered 2xx."""
        delay = self.backoff
        for attempt in range(1, self.attempts + 1):
            try:
                response = self._client.post(self.url, json=event)
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if response.is_success:
                    return True
                problem = f"HTTP {response.status_code}"
                if response.status_code < 500 and response.status_code != 429:
                    break  # the receiver refuses this event: retrying will not help
            if attempt < self.attempts:
                time.sleep(delay)
                delay *= 2
        log.warning(
            "webhook %s: %s event (job %s, document %s) not delivered (%s)",
            self.url,
            event.get("event"),
            event.get("job_id"),
            event.get("doc_id"),
            problem,
        )
        return False

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()
