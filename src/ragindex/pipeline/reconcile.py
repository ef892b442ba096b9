"""Automatic compensation (seed section 4.6): the reconciler that ``ragindex serve`` and every worker run.

Every ``RAGINDEX_RECONCILE_INTERVAL_SECONDS`` each process tries to take the database's reconciler lock
(:meth:`~ragindex.store.protocol.ReconcileStore.reconcile_lock`); the one that gets it runs one pass, the others
skip theirs. A pass, in order:

=======  ========================================================================================
release  INDEXING claims older than the stale timeout go back to PENDING (their owner died)
purge    REMOVED chunks whose index copies are not yet confirmed gone are deleted from the index
retry    copies PENDING or FAILED below ``max_attempts`` whose wait is over are indexed again; after
         ``a`` failures a chunk waits ``min(backoff_max, backoff * 2**(a-1))`` seconds from its last
         change, a PENDING copy nobody claimed waits the stale timeout
finish   runs a dead process left PROCESSING are closed (SUCCESS, or FAILED once their failed copies
         are exhausted) and FAILED documents whose copies are all written now are SUCCESS
=======  ========================================================================================

Chunks at ``max_attempts`` are never retried automatically (seed section 7); ``ragindex reindex --failed`` does.
The backoff needs no state of its own: it is computed from a chunk's ``attempts`` and ``updated_at``.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ragindex.clock import utcnow
from ragindex.config.sections import PipelineSettings
from ragindex.errors import ValidationError
from ragindex.pipeline.compensation import recover_documents, release_stale_claims, settle_stuck_runs
from ragindex.pipeline.indexer import Indexer
from ragindex.pipeline.manage import purge_rows
from ragindex.pipeline.repair import index_chunks
from ragindex.store.protocol import TruthStore

log = logging.getLogger(__name__)

ACTIONS = ("retry", "release", "purge", "finish")


def retry_delay(attempts: int, *, backoff: float, backoff_max: float) -> float:
    """Seconds a chunk that failed ``attempts`` times (>= 1) waits, from its last change, before its next retry."""
    return float(min(backoff_max, backoff * 2 ** (attempts - 1)))


@dataclass(frozen=True, slots=True)
class ReconcilePolicy:
    """When and how much a reconciler pass does (see :class:`~ragindex.config.sections.PipelineSettings`)."""

    interval_seconds: float = 60.0
    backoff_seconds: float = 30.0
    backoff_max_seconds: float = 3600.0
    max_attempts: int = 5
    stale_seconds: float = 600.0
    batch: int = 1000

    @classmethod
    def from_settings(cls, settings: PipelineSettings) -> ReconcilePolicy:
        """The policy of ``RAGINDEX_RECONCILE_*``, ``RAGINDEX_MAX_ATTEMPTS`` and ``RAGINDEX_INDEXING_STALE_SECONDS``."""
        return cls(
            interval_seconds=settings.reconcile_interval_seconds,
            backoff_seconds=settings.reconcile_backoff_seconds,
            backoff_max_seconds=settings.reconcile_backoff_max_seconds,
            max_attempts=settings.max_attempts,
            stale_seconds=settings.indexing_stale_seconds,
            batch=settings.reconcile_batch,
        )

    def delays(self) -> list[float]:
        """The wait before a chunk with ``a`` attempts is due, for ``a`` in ``0 .. max_attempts - 1``."""
        return [
            self.stale_seconds,  # a PENDING copy that no live ingest claimed for this long was left by a dead one
            *(
                retry_delay(a, backoff=self.backoff_seconds, backoff_max=self.backoff_max_seconds)
                for a in range(1, self.max_attempts)
            ),
        ]


@dataclass
class PassReport:
    """What one pass did; ``held`` is False when another process held the lock (nothing was done)."""

    held: bool
    actions: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ACTIONS, 0))
    retry_failed: int = 0
    finished: list[int] = field(default_factory=list)
    duration_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (logs, tests)."""
        return {
            "held": self.held,
            "actions": dict(self.actions),
            "retry_failed": self.retry_failed,
            "finished": list(self.finished),
            "duration_ms": round(self.duration_ms, 1),
        }


def default_owner() -> str:
    """``host:pid:random``: names the process holding the lock, unique per reconciler."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Reconciler:
    """One pass of automatic compensation over the truth store and the ACTIVE collection.

    Args:
        store: The truth store.
        indexer: Returns index stages bound to the ACTIVE collection, or None before the first ingest
            created one (then nothing is indexed, and REMOVED rows are only marked purged).
        kinds: Enabled vector kinds, dense first.
        policy: Interval, backoff, attempts, stale timeout and batch size.
        owner: Who holds the lock (default :func:`default_owner`).
        release_gone: Releases the claims of claim owners that are gone (lease lapsed, process dead, or proven
            gone by the embedded index lock) and returns their ids per kind; None: only stale claims are released.
        clock: Now, in naive UTC (tests move it forward instead of sleeping through a backoff).
    """

    def __init__(
        self,
        store: TruthStore,
        indexer: Callable[[], Indexer | None],
        kinds: Sequence[str],
        policy: ReconcilePolicy,
        *,
        owner: str | None = None,
        release_gone: Callable[[], Mapping[str, list[str]]] | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.store = store
        self.indexer = indexer
        self.kinds = tuple(kinds)
        self.policy = policy
        self.owner = owner or default_owner()
        self.release_gone = release_gone
        self.clock = clock

    def run_pass(self) -> PassReport:
        """Take the lock without waiting; if this process got it, release, purge, retry and finish, then record."""
        started = time.perf_counter()
        # SQLite's lease outlives a crashed holder by the stale timeout, as that holder's claims do
        with self.store.reconcile_lock(self.owner, lease_seconds=self.policy.stale_seconds) as held:
            if not held:
                return PassReport(held=False)
            report = PassReport(held=True)
            indexer = self.indexer()
            report.actions["release"] = len(self.release())
            report.actions["purge"] = self.purge(indexer)
            retried, failed, touched = self.retry(indexer)
            report.actions["retry"], report.retry_failed = retried, failed
            report.finished = self.finish(touched)
            report.actions["finish"] = len(report.finished)
            report.duration_ms = (time.perf_counter() - started) * 1000
            self.store.record_reconcile(
                report.actions, retry_failed=failed, duration_ms=report.duration_ms, owner=self.owner
            )
        if any(report.actions.values()):
            log.info("reconcile pass: %s", report.to_dict())
        return report

    # ------------------------------------------------------------------ one function per action
    def release(self) -> list[str]:
        """Release the claims of gone owners, then stale ownerless ones (to PENDING, or FAILED at ``max_attempts``).

        Returns the released chunk ids.
        """
        gone = self.release_gone() if self.release_gone is not None else {}
        stale = release_stale_claims(
            self.store, self.kinds, self.policy.stale_seconds, max_attempts=self.policy.max_attempts
        )
        return list(dict.fromkeys(cid for released in (gone, stale) for ids in released.values() for cid in ids))

    def purge(self, indexer: Indexer | None) -> int:
        """Delete the index copies of REMOVED chunks not yet purged (up to a batch); return how many were purged."""
        rows = self.store.removed_unpurged(limit=self.policy.batch)
        purged, failed = purge_rows(self.store, indexer, rows)
        if failed:
            log.warning("reconcile: %d REMOVED copies could not be purged (next pass retries)", len(failed))
        return len(purged)

    def retry(self, indexer: Indexer | None) -> tuple[int, int, set[int]]:
        """Index the chunks whose wait is over; return (chunks tried, chunks that failed again, their documents)."""
        if indexer is None:
            return 0, 0, set()
        due = self.store.due_retries(self.kinds, self.policy.delays(), now=self.clock(), limit=self.policy.batch)
        if not due:
            return 0, 0, set()
        results = index_chunks(self.store, indexer, chunk_ids=due, max_attempts=self.policy.max_attempts)
        tried = {cid for r in results.values() for cid in (*r.indexed, *r.failed)}
        failed = {cid for r in results.values() for cid in r.failed}
        touched = {doc_id for r in results.values() for doc_id in r.time_by_doc_ms}
        return len(tried), len(failed), touched

    def finish(self, touched: set[int]) -> list[int]:
        """Close stuck runs and recover the FAILED documents among ``touched``; return the documents settled."""
        _, closed = settle_stuck_runs(
            self.store, self.kinds, stale_seconds=self.policy.stale_seconds, max_attempts=self.policy.max_attempts
        )
        documents = [self.store.get_document(doc_id) for doc_id in sorted(touched - set(closed))]
        return [*closed, *recover_documents(self.store, self.kinds, documents)]


class ReconcileLoop:
    """Runs :meth:`Reconciler.run_pass` at once and then every ``interval`` seconds on a daemon thread.

    A pass that raises is logged and counted; the loop goes on. ``counts`` holds this process's passes by
    outcome: ``done`` (it held the lock), ``skipped`` (another process did), ``error``.

    Args:
        reconciler: The reconciler.
        interval: Seconds between passes (> 0).
        on_pass: Called with each pass's report (events of the documents it finished).
        before_pass: Runs on the loop's thread before each pass (the service limits the thread's torch threads
            there, once torch is loaded).
    """

    def __init__(
        self,
        reconciler: Reconciler,
        interval: float,
        *,
        on_pass: Callable[[PassReport], None] | None = None,
        before_pass: Callable[[], None] | None = None,
    ) -> None:
        if interval <= 0:
            raise ValidationError(
                "interval", f"must be > 0 (RAGINDEX_RECONCILE_INTERVAL_SECONDS=0: no loop), got {interval}"
            )
        self.reconciler = reconciler
        self.interval = interval
        self.on_pass = on_pass
        self.before_pass = before_pass
        self.counts = {"done": 0, "skipped": 0, "error": 0}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread (its first pass runs at once)."""
        self._thread = threading.Thread(target=self._loop, name="ragindex-reconcile", daemon=True)
        self._thread.start()

    def stop(self, timeout: float) -> bool:
        """Stop after the running pass (waiting up to ``timeout`` s); True when the thread ended."""
        self._stop.set()
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _loop(self) -> None:
        while not self._stop.is_set():
            if self.before_pass is not None:
                self.before_pass()
            self.tick()
            self._stop.wait(self.interval)

    def tick(self) -> PassReport | None:
        """Run one pass now and count it (None when it raised)."""
        try:
            report = self.reconciler.run_pass()
        except Exception:  # the loop must outlive a database outage or an index error
            self.counts["error"] += 1
            log.exception("reconcile pass failed (the next pass retries in %.0f s)", self.interval)
            return None
        self.counts["done" if report.held else "skipped"] += 1
        if self.on_pass is not None and report.held:
            try:
                self.on_pass(report)
            except Exception:
                log.exception("reconcile: publishing the pass's events failed")
        return report
