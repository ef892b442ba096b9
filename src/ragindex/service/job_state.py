"""Job states, and the outcome of a finished ingest job: one definition for the job thread and the workers."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragindex.pipeline.sync import IngestReport


class JobState(StrEnum):
    """Job states as stored and as the API shows them."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLING = "cancelling"  # cancel requested while running: it stops at its next file or batch boundary
    CANCELLED = "cancelled"


FINISHED: tuple[JobState, ...] = (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)
"""States a job never leaves."""


def outcome(report: IngestReport) -> tuple[JobState, str | None]:
    """The state and error of a job whose ingest returned ``report`` (any failed file or chunk fails the job)."""
    if report.failures:
        return JobState.FAILED, "; ".join(f"{Path(f['source']).name}: {f['error']}" for f in report.failures[:5])
    if report.chunks.get("failed", 0) > 0:
        return JobState.FAILED, f"{report.chunks['failed']} chunks failed to index; `ragindex repair` retries them"
    return JobState.SUCCEEDED, None
