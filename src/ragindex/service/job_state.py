"""Job states, the outcome of a finished ingest job, and when a job that kept dying is given up.

One definition for the in-process job threads and the broker workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from ragindex.pipeline.cancel import close_open_runs

if TYPE_CHECKING:
    from ragindex.pipeline.sync import IngestReport
    from ragindex.service.store import JobRow, JobStore
    from ragindex.store.protocol import TruthStore


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
        return JobState.FAILED, "; ".join(f"{_named(str(f['source']))}: {f['error']}" for f in report.failures[:5])
    if report.chunks.get("failed", 0) > 0:
        return JobState.FAILED, f"{report.chunks['failed']} chunks failed to index; `ragindex repair` retries them"
    return JobState.SUCCEEDED, None


def _named(source: str) -> str:
    """A failure's file by its name (never a server path); a record by its key."""
    return Path(source).name if source.startswith("/") else source


def crash_looped(job: JobRow, max_starts: int) -> bool:
    """Whether ``job``, found ``running`` with no process running it, has used up its ``max_starts`` starts."""
    return job.status == JobState.RUNNING and job.starts >= max_starts


def crash_loop_error(starts: int, max_starts: int) -> str:
    """The error of a job given up after ``starts`` starts that each ended with its process."""
    return (
        f"the job was started {starts} times and each time its process ended before the job finished (a crash, an "
        f"out-of-memory kill, or a liveness probe restarting a frozen process); it is not run again after "
        f"RAGINDEX_JOB_MAX_STARTS={max_starts} starts, so that it cannot stop every new process. Upload its files "
        "again in smaller jobs to find the one at fault"
    )


def give_up(store: JobStore, truth: TruthStore, job: JobRow, kinds: Sequence[str], max_starts: int) -> bool:
    """Fail a crash-looped job with :func:`crash_loop_error`, closing the runs it left open; True if it moved."""
    error = crash_loop_error(job.starts, max_starts)
    documents = close_open_runs(truth, job_id=job.job_id, kinds=kinds, reason="its job kept stopping its process")
    return store.set_job_status(
        job.job_id,
        JobState.FAILED,
        finished=True,
        report={"crash_looped": True, "starts": job.starts, "documents": documents},
        error=error,
        expected=[JobState.RUNNING],
    )
