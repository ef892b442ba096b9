"""The in-process job runner of the embedded default: one background thread runs upload ingests in order.

A job is recorded in the truth store (``jobs``) before it is queued, so a restarted service
re-queues whatever was queued or running (ingest is idempotent: files already done are
skipped by their hash). The job thread limits its torch threads so that query encoding keeps
a core while chunks are being embedded.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragindex.engine import Engine
from ragindex.pipeline.sync import IngestReport
from ragindex.service.cancel import CancelCheck, JobCancelled, finish_cancelled
from ragindex.service.executor import set_torch_threads
from ragindex.service.job_state import JobState, outcome
from ragindex.service.store import JobRow, JobStore

log = logging.getLogger(__name__)


_ACTIVE = (JobState.RUNNING, JobState.CANCELLING)  # a job that ends on its own ends from these, cancel or not
JobDone = Callable[[JobRow, IngestReport | None], None]
Dispatch = Callable[[str, int, int, Sequence[Path]], None]  # (job_id, user_id, set_id, files) -> enqueued


class JobRunner:
    """Runs ingest jobs one after another on the ``ragindex-jobs`` thread.

    Args:
        engine: The service's engine.
        store: Where jobs are recorded (the service's own store).
        torch_threads: torch threads of the job thread.
        on_done: Called after each job (metrics).
    """

    def __init__(
        self,
        engine: Engine,
        store: JobStore,
        *,
        torch_threads: int = 1,
        on_done: JobDone | None = None,
        dispatch: Dispatch | None = None,
    ) -> None:
        self.dispatch = dispatch  # set: jobs go to the broker's workers (ragindex.service.queue), none run here
        self.engine = engine
        self.store = store
        self.torch_threads = torch_threads
        self.on_done = on_done
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._progress: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.current: str | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Re-queue jobs a previous process left unfinished (finish those it was cancelling), then start the thread."""
        for job in self.store.jobs_with_status([JobState.CANCELLING]):
            finish_cancelled(self.store, self.engine.store, job.job_id, self.engine.kinds)
        for job in self.store.jobs_with_status([JobState.RUNNING, JobState.QUEUED]):
            log.info("re-queueing unfinished job %s", job.job_id)
            self.store.set_job_status(job.job_id, JobState.QUEUED)
            self._queue.put(job.job_id)
        self._thread = threading.Thread(target=self._loop, name="ragindex-jobs", daemon=True)
        self._thread.start()

    def stop(self, timeout: float) -> bool:
        """Stop after the running job (waiting up to ``timeout`` s); True when the thread ended."""
        if self._thread is None:
            return True
        self._queue.put(None)
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def depth(self) -> int:
        """Jobs waiting in the queue."""
        return self._queue.qsize()

    # ------------------------------------------------------------------ API
    def submit_ingest(self, *, user_id: int, set_id: int, files: Sequence[Path]) -> str:
        """Record and queue an ingest of saved upload files; return the job id."""
        job_id = uuid.uuid4().hex
        self.store.create_job(
            job_id,
            user_id=user_id,
            set_id=set_id,
            kind="ingest",
            status=JobState.QUEUED,
            files=[str(f) for f in files],
        )
        if self.dispatch is not None:
            try:
                self.dispatch(job_id, user_id, set_id, files)
            except Exception as exc:
                message = getattr(exc, "message", None) or str(exc)
                self.store.set_job_status(job_id, JobState.FAILED, finished=True, error=message)
                raise
            return job_id
        self._queue.put(job_id)
        return job_id

    def progress(self, job_id: str) -> dict[str, Any] | None:
        """Live progress of a running job (files done, copies indexed per stage), else None."""
        with self._lock:
            live = self._progress.get(job_id)
            return {k: dict(v) if isinstance(v, dict) else v for k, v in live.items()} if live else None

    # ------------------------------------------------------------------ the job thread
    def _loop(self) -> None:
        set_torch_threads(self.torch_threads)
        for job_id in iter(self._queue.get, None):  # until stop() queues None
            try:
                self._run(job_id)
            except Exception:  # the runner must survive anything a job does
                log.exception("job %s crashed", job_id)

    def _run(self, job_id: str) -> None:
        job = self.store.get_job(job_id)
        # a job cancelled while queued is skipped: the compare-and-set never lets it start
        if not self.store.set_job_status(job_id, JobState.RUNNING, started=True, expected=[JobState.QUEUED]):
            return
        self.current = job_id
        with self._lock:
            self._progress[job_id] = {"files": {"total": len(job.files), "done": 0}, "indexed": {}, "stage": None}
        started = time.perf_counter()
        report: IngestReport | None = None
        cancel = CancelCheck(self.store, job_id)

        def progress(event: str, data: dict[str, Any]) -> None:
            self._on_progress(job_id, event, data)
            cancel(event, data)

        try:
            report = self.engine.ingest(
                [Path(f) for f in job.files],
                user_id=job.user_id,
                set_id=job.set_id,
                keep_missing=True,
                per_file=True,
                job_id=job_id,
                progress=progress,
            )
        except JobCancelled:
            log.info("job %s cancelled", job_id)
            finish_cancelled(self.store, self.engine.store, job_id, self.engine.kinds)
        except Exception as exc:
            log.warning("job %s failed: %s", job_id, exc)
            message = getattr(exc, "message", None) or str(exc)
            self.store.set_job_status(
                job_id, JobState.FAILED, finished=True, error=f"{type(exc).__name__}: {message}", expected=_ACTIVE
            )
        else:
            state, error = outcome(report)
            self.store.set_job_status(
                job_id, state, finished=True, report=report.to_dict(), error=error, expected=_ACTIVE
            )
        finally:
            self.current = None
            with self._lock:
                self._progress.pop(job_id, None)
            log.info("job %s done in %.1f s", job_id, time.perf_counter() - started)
        if self.on_done is not None:
            self.on_done(self.store.get_job(job_id), report)

    def _on_progress(self, job_id: str, event: str, data: dict[str, Any]) -> None:
        with self._lock:
            live = self._progress.get(job_id)
            if live is None:
                return
            if event == "file":
                live["files"]["done"] += 1
            elif event == "stage":
                live["stage"] = data.get("kind")
            elif event == "indexed":
                kind = str(data.get("kind"))
                live["indexed"][kind] = live["indexed"].get(kind, 0) + int(data.get("n", 0))
