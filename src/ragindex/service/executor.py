"""The service's engine: a :class:`~ragindex.threads.ThreadedEngine` that never optimises on its own.

The threads it runs on (the index thread, the batching query encoder) live in :mod:`ragindex.threads`, shared with
:class:`~ragindex.aio.AsyncEngine`; they are re-exported here for the code that imported them from this module.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragindex.config.settings import Settings
from ragindex.pipeline.report import IngestReport
from ragindex.threads import BatchingQueryEncoder, IndexThread, SerialIndex, ThreadedEngine, set_torch_threads

__all__ = ["BatchingQueryEncoder", "IndexThread", "SerialIndex", "ServiceEngine", "set_torch_threads"]


class ServiceEngine(ThreadedEngine):
    """The Engine as the service runs it: index calls on the index thread, batched query encoding.

    Post-ingest ``optimize()`` is off (``optimize_min_points=0``): on Edge it holds the GIL for
    minutes and would freeze every request. Optimise from ``POST /v1/optimize`` in a quiet hour.

    Args:
        settings: Engine settings.
        query_batch_max: Most queries per forward pass.
        query_torch_threads: torch threads of the query thread.
    """

    def __init__(self, settings: Settings, *, query_batch_max: int = 64, query_torch_threads: int = 1) -> None:
        super().__init__(
            settings.model_copy(update={"optimize_min_points": 0}),
            query_batch_max=query_batch_max,
            query_torch_threads=query_torch_threads,
        )
        self._ingest_locks: dict[tuple[int, int], threading.Lock] = {}
        self._ingest_locks_lock = threading.Lock()

    def ingest(self, paths: Sequence[str | Path], **options: Any) -> IngestReport:
        """:meth:`Engine.ingest`, one at a time per set; ingests of different sets run side by side.

        Two ingests of one set (a job and a ``ragindex watch --serve`` watcher) take turns: both would diff the
        same documents. Ingests of different sets share nothing they write but the index thread and the truth
        store, whose chunk claims are compare-and-set; each parses in a child process of its own.
        """
        with self._set_lock(options):
            return super().ingest(paths, **options)

    def upsert(self, records: Any, **options: Any) -> IngestReport:
        """:meth:`Engine.upsert`, taking turns with the set's ingests (both diff the set's documents)."""
        with self._set_lock(options):
            return super().upsert(records, **options)

    def _set_lock(self, options: dict[str, Any]) -> threading.Lock:
        key = (int(options.get("user_id", 1)), int(options.get("set_id", 1)))
        with self._ingest_locks_lock:
            return self._ingest_locks.setdefault(key, threading.Lock())

    def optimize_all(self) -> dict[str, bool]:
        """Optimise every bucket in use of the ACTIVE collection (blocking; freezes an Edge process)."""
        collection = self.read_collection()
        if collection is None:
            return {}
        index = self.index
        return {str(b): index.optimize(collection, b) for b in self.store.buckets_in_use()}
