"""Cancelling ingest jobs (``DELETE /v1/jobs/{id}``), for the in-process job thread and the broker workers alike.

The job row is the signal, so a cancel reaches a job wherever it runs. A queued job is cancelled at once (its
runner skips it). A running job moves to ``cancelling``; its ingest checks the row at each file and batch
boundary, and while a file is parsed or chunked in the parse child (the ingest's ``parsing`` progress event, about
every 0.2 s), through :class:`CancelCheck` (at most every :data:`CHECK_INTERVAL_S`). It stops there holding no
claim: inside a file, the parse child is killed and nothing of that file is recorded (it is not a failure). Its
runner closes the runs it left open (:func:`ragindex.pipeline.cancel.close_open_runs`) and marks it ``cancelled``.
Files it had not reached are not ingested; what it committed stays (see that module for what that means).
A running job that finishes before it reaches a boundary ends as it would have (``succeeded`` or ``failed``).
"""

from __future__ import annotations

import time
from typing import Any

from ragindex.errors import JobStateError
from ragindex.pipeline.cancel import close_open_runs
from ragindex.service.job_state import JobState
from ragindex.service.store import JobRow, JobStore
from ragindex.store.protocol import TruthStore

CHECK_INTERVAL_S = 0.25
REASON = "cancelled by request"


class JobCancelled(BaseException):
    """Raised inside a running ingest (at a file or batch boundary, or while a file parses) once its job is cancelling.

    A :class:`BaseException` like :class:`KeyboardInterrupt` (and dramatiq's ``TimeLimitExceeded``), for the same
    reason: the pipeline's per-file and per-batch ``except Exception`` handlers must not record it as a failure.
    It never reaches a caller: the job runner turns it into the ``cancelled`` state.
    """


class CancelCheck:
    """An ingest progress callback that raises :class:`JobCancelled` once the job's row says ``cancelling``.

    Args:
        store: Where the job row is.
        job_id: The running job.
        interval: Seconds between two reads of the row (boundaries in between pass unchecked).
    """

    def __init__(self, store: JobStore, job_id: str, *, interval: float = CHECK_INTERVAL_S) -> None:
        self.store = store
        self.job_id = job_id
        self.interval = interval
        self._next = 0.0

    def __call__(self, _event: str, _data: dict[str, Any]) -> None:
        """Check the row (when the interval has passed); raise :class:`JobCancelled` if the job is being cancelled."""
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self.interval
        if self.store.get_job(self.job_id).status == JobState.CANCELLING:
            raise JobCancelled(self.job_id)


def request_cancel(store: JobStore, job_id: str, *, user_id: int) -> JobRow:
    """Cancel a job of ``user_id``: queued -> cancelled, running -> cancelling; return the job as it is now.

    Cancelling a job that is already cancelling or cancelled changes nothing.

    Raises:
        NotFoundError: No such job for this tenant (another tenant's job included).
        JobStateError: The job already succeeded or failed.
    """
    for _ in range(3):  # each lost compare-and-set means the job moved on: look again
        job = store.get_job(job_id, user_id=user_id)
        if job.status in (JobState.CANCELLING, JobState.CANCELLED):
            return job
        if job.status == JobState.QUEUED:
            moved = store.set_job_status(
                job_id, JobState.CANCELLED, finished=True, error=REASON, expected=[JobState.QUEUED]
            )
        elif job.status == JobState.RUNNING:
            moved = store.set_job_status(job_id, JobState.CANCELLING, expected=[JobState.RUNNING])
        else:
            raise JobStateError(
                f"job {job_id} already {job.status}; only a queued or running job can be cancelled",
                job_id=job_id,
                status=job.status,
            )
        if moved:
            return store.get_job(job_id, user_id=user_id)
    raise JobStateError(f"job {job_id} changed state while being cancelled; try again", job_id=job_id)


def finish_cancelled(store: JobStore, truth: TruthStore, job_id: str, kinds: tuple[str, ...]) -> None:
    """Close the runs a stopped job left open and mark it ``cancelled`` with what it finished."""
    documents = close_open_runs(truth, job_id=job_id, kinds=kinds, reason=REASON)
    error = REASON
    if documents["unfinished"]:
        error += f"; {documents['unfinished']} documents were left unfinished (see GET /v1/documents?status=FAILED)"
    store.set_job_status(
        job_id,
        JobState.CANCELLED,
        finished=True,
        report={"cancelled": True, "documents": documents},
        error=error,
        expected=[JobState.CANCELLING, JobState.RUNNING],
    )
