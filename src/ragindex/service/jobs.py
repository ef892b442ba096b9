"""The in-process job runner of the embedded default: a few job threads run upload ingests, fair between tenants.

Each tenant has its own queue of waiting jobs. A tenant's jobs run one at a time, in the order they were
submitted; tenants with waiting jobs take turns (round-robin) for the ``RAGINDEX_JOB_WORKERS`` job threads. So a
tenant whose file takes the whole parse timeout holds one thread, never every thread: another tenant's job starts
on the next free thread at once. Two jobs of different tenants run side by side: each ingest parses in a child
process of its own, embeds on its own thread, and writes the index through the one index thread
(:mod:`ragindex.threads`), call by call between the searches; chunk claims are compare-and-set in the truth store.

A job is recorded in the truth store (``jobs``) before it is queued, so a restarted service re-queues whatever was
queued or running (ingest is idempotent: files already done are skipped by their hash). Each start is counted
(``jobs.starts``): a job left ``running`` by ``RAGINDEX_JOB_MAX_STARTS`` processes that ended under it (a crash, an
out-of-memory kill, a liveness probe restarting a frozen process) is failed with that reason instead of being run
again, so one file cannot stop every new process. A job still running at a clean shutdown is handed back to the
queue with its start not counted. Each job thread limits its torch threads so that query encoding keeps a core
while chunks are being embedded.
"""

from __future__ import annotations

import logging
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
from ragindex.service.job_state import JobState, crash_looped, give_up, outcome
from ragindex.service.record_jobs import RECORDS_JOB, discard_batch, run_job
from ragindex.service.store import JobRow, JobStore

log = logging.getLogger(__name__)


_ACTIVE = (JobState.RUNNING, JobState.CANCELLING)  # a job that ends on its own ends from these, cancel or not
JobDone = Callable[[JobRow, IngestReport | None], None]
Dispatch = Callable[[str, int, int, Sequence[Path]], None]  # (job_id, user_id, set_id, files) -> enqueued


class TenantQueues:
    """Waiting jobs, one queue per tenant, handed out round-robin to the tenants that have no job running.

    Thread-safe: job threads block in :meth:`take` until a job of an idle tenant waits or :meth:`close` is called.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._waiting: dict[int, list[str]] = {}  # tenants in turn order (dicts keep insertion order)
        self._busy: set[int] = set()  # tenants with a job running
        self._closed = False

    def put(self, user_id: int, job_id: str) -> None:
        """Queue a job of ``user_id`` behind that tenant's other waiting jobs."""
        with self._cond:
            self._waiting.setdefault(user_id, []).append(job_id)
            self._cond.notify()

    def take(self) -> tuple[int, str] | None:
        """The next job ``(user_id, job_id)`` of the first idle tenant in turn (then last in turn); None once closed.

        The tenant is busy until :meth:`done`.
        """
        with self._cond:
            while not self._closed:
                for user_id, jobs in self._waiting.items():
                    if user_id not in self._busy:
                        job_id = jobs.pop(0)
                        del self._waiting[user_id]
                        if jobs:
                            self._waiting[user_id] = jobs  # its next job waits for its turn again
                        self._busy.add(user_id)
                        return user_id, job_id
                self._cond.wait()
            return None

    def done(self, user_id: int) -> None:
        """The job of ``user_id`` taken last has ended: the tenant's next job may start."""
        with self._cond:
            self._busy.discard(user_id)
            self._cond.notify_all()

    def close(self) -> None:
        """Wake every waiting thread with None (jobs still waiting stay queued in the truth store)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return sum(map(len, self._waiting.values()))


class JobRunner:
    """Runs ingest jobs on ``workers`` job threads (``ragindex-jobs-N``), fair between tenants.

    Args:
        engine: The service's engine.
        store: Where jobs are recorded (the service's own store).
        workers: Job threads (``RAGINDEX_JOB_WORKERS``).
        max_starts: Starts after which a job its processes never finished is failed (``RAGINDEX_JOB_MAX_STARTS``).
        torch_threads: torch threads of each job thread.
        on_done: Called after each job (metrics, events).
        dispatch: Set: jobs go to the broker's workers (:mod:`ragindex.service.queue`) and none runs here.
    """

    def __init__(
        self,
        engine: Engine,
        store: JobStore,
        *,
        workers: int = 2,
        max_starts: int = 3,
        torch_threads: int = 1,
        on_done: JobDone | None = None,
        dispatch: Dispatch | None = None,
    ) -> None:
        self.dispatch = dispatch
        self.engine = engine
        self.store = store
        self.workers = workers
        self.max_starts = max_starts
        self.torch_threads = torch_threads
        self.on_done = on_done
        self._queues = TenantQueues()
        self._threads: list[threading.Thread] = []
        self._progress: dict[str, dict[str, Any]] = {}
        self._running: dict[str, float] = {}  # job id -> when it started (monotonic)
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Settle what a previous process left, then start the job threads.

        Jobs it was cancelling are finished; jobs it left running are re-queued, or failed once they used up
        their starts; queued jobs are re-queued, oldest first.
        """
        for job in self.store.jobs_with_status([JobState.CANCELLING]):
            finish_cancelled(self.store, self.engine.store, job.job_id, self.engine.kinds)
        for job in self.store.jobs_with_status([JobState.RUNNING, JobState.QUEUED]):
            if crash_looped(job, self.max_starts):
                log.error("job %s: its process ended under it %d times; failed, not run again", job.job_id, job.starts)
                if give_up(self.store, self.engine.store, job, self.engine.kinds, self.max_starts):
                    self._finished(job.job_id, None)
                continue
            if job.status == JobState.RUNNING:
                log.warning("job %s was running when its process ended (start %d); re-queued", job.job_id, job.starts)
                if not self.store.set_job_status(job.job_id, JobState.QUEUED, expected=[JobState.RUNNING]):
                    continue
            else:
                log.info("re-queueing job %s", job.job_id)
            self._queues.put(job.user_id, job.job_id)
        for n in range(self.workers):
            thread = threading.Thread(target=self._loop, name=f"ragindex-jobs-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float) -> bool:
        """Stop after the running jobs (waiting up to ``timeout`` s in all); True when every job thread ended.

        A job still running then is handed back to the queue (``queued``, its start not counted: a clean shutdown
        is no crash), so the next start runs it again.
        """
        self._queues.close()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            running = list(self._running)
        for job_id in running:
            if self.store.set_job_status(job_id, JobState.QUEUED, unstarted=True, expected=[JobState.RUNNING]):
                log.warning("job %s is still running at shutdown: handed back to the queue", job_id)
        return not any(t.is_alive() for t in self._threads)

    @property
    def depth(self) -> int:
        """Jobs waiting for a job thread (every tenant's)."""
        return len(self._queues)

    @property
    def running(self) -> list[str]:
        """The jobs running now, the longest-running first."""
        with self._lock:
            return sorted(self._running, key=self._running.__getitem__)

    @property
    def current(self) -> str | None:
        """The longest-running job, or None when no job runs."""
        running = self.running
        return running[0] if running else None

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
        return self._enqueue(job_id, user_id, set_id, files)

    def submit_records(self, *, user_id: int, set_id: int, batch: Path) -> str:
        """Record and queue the upsert of a saved batch of records (:mod:`ragindex.service.record_jobs`)."""
        job_id = batch.stem
        self.store.create_job(
            job_id, user_id=user_id, set_id=set_id, kind=RECORDS_JOB, status=JobState.QUEUED, files=[str(batch)]
        )
        return self._enqueue(job_id, user_id, set_id, [batch])

    def _enqueue(self, job_id: str, user_id: int, set_id: int, files: Sequence[Path]) -> str:
        """Hand a recorded job to the broker (its dispatch failing fails the job) or to the tenant's queue."""
        if self.dispatch is not None:
            try:
                self.dispatch(job_id, user_id, set_id, files)
            except Exception as exc:
                message = getattr(exc, "message", None) or str(exc)
                self.store.set_job_status(job_id, JobState.FAILED, finished=True, error=message)
                raise
            return job_id
        self._queues.put(user_id, job_id)
        return job_id

    def progress(self, job_id: str) -> dict[str, Any] | None:
        """Live progress of a running job (files done, the file being parsed, copies indexed per stage), else None."""
        with self._lock:
            live = self._progress.get(job_id)
            return {k: dict(v) if isinstance(v, dict) else v for k, v in live.items()} if live else None

    # ------------------------------------------------------------------ the job threads
    def _loop(self) -> None:
        while (taken := self._queues.take()) is not None:  # until stop() closes the queues
            user_id, job_id = taken
            try:
                self._run(job_id)
            except Exception:  # the runner must survive anything a job does
                log.exception("job %s crashed", job_id)
            finally:
                self._queues.done(user_id)

    def _run(self, job_id: str) -> None:
        job = self.store.get_job(job_id)
        # a job cancelled while queued is skipped: the compare-and-set never lets it start
        if not self.store.set_job_status(job_id, JobState.RUNNING, started=True, expected=[JobState.QUEUED]):
            return
        with self._lock:
            self._running[job_id] = time.monotonic()
            self._progress[job_id] = {"files": {"total": len(job.files), "done": 0}, "indexed": {}, "stage": None}
        started = time.perf_counter()
        report: IngestReport | None = None
        cancel = CancelCheck(self.store, job_id)

        def progress(event: str, data: dict[str, Any]) -> None:
            self._on_progress(job_id, event, data)
            cancel(event, data)

        try:
            # torch loads with the first job (embedding needs it), not at start: importing it takes the GIL for
            # seconds, and the searches served meanwhile waited (docs/service.md, "Pauses and hand-offs")
            set_torch_threads(self.torch_threads)
            report = run_job(
                self.engine,
                kind=job.kind,
                files=job.files,
                user_id=job.user_id,
                set_id=job.set_id,
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
            with self._lock:
                self._running.pop(job_id, None)
                self._progress.pop(job_id, None)
            if self.store.get_job(job_id).status not in (JobState.RUNNING, JobState.QUEUED):
                discard_batch(job.kind, job.files)  # a records job's saved batch, once the job has ended
            log.info("job %s done in %.1f s", job_id, time.perf_counter() - started)
        self._finished(job_id, report)

    def _finished(self, job_id: str, report: IngestReport | None) -> None:
        if self.on_done is not None:
            self.on_done(self.store.get_job(job_id), report)

    def _on_progress(self, job_id: str, event: str, data: dict[str, Any]) -> None:
        with self._lock:
            live = self._progress.get(job_id)
            if live is None:
                return
            if event == "file":
                live["files"]["done"] += 1
                live.pop("parsing", None)
            elif event == "parsing":  # about every 0.2 s while a file is parsed or chunked in the parse child
                live["parsing"] = Path(str(data.get("path", ""))).name  # its name only: never a server path
            elif event == "stage":
                live["stage"] = data.get("kind")
            elif event == "indexed":
                kind = str(data.get("kind"))
                live["indexed"][kind] = live["indexed"].get(kind, 0) + int(data.get("n", 0))
