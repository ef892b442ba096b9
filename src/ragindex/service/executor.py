"""Serving while ingesting: one thread owns every index call, one thread encodes queries in batches.

Qdrant Edge holds the GIL for the whole of every call and one process owns the shards
(``shared/DESIGN.md``). So the service never calls the index from the event loop or from many
threads: :class:`SerialIndex` forwards each call to the one ``ragindex-index`` thread, where calls
from searches and from the ingest job interleave call by call (an upsert batch is milliseconds).
Query vectors come from :class:`BatchingQueryEncoder`: concurrent searches are encoded together
in one forward pass on the ``ragindex-query`` thread, with its own torch thread budget, while the
ingest job encodes chunks on its own thread (torch releases the GIL in its kernels).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from ragindex.config.settings import Settings
from ragindex.encoders.protocol import DenseEncoder
from ragindex.engine import Engine
from ragindex.index.protocol import DensePoint, ScoredIds, TenantFilter, VectorIndex, VectorQuery
from ragindex.types import SparseVector

log = logging.getLogger(__name__)
T = TypeVar("T")


def set_torch_threads(n: int) -> None:
    """Limit torch's intra-op threads of the calling thread (OpenMP keeps the setting per thread)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a core dependency
        return
    torch.set_num_threads(n)


class IndexThread:
    """The single thread that runs every call into the vector index."""

    def __init__(self) -> None:
        self._ident: int | None = None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="ragindex-index", initializer=self._remember)

    def _remember(self) -> None:
        self._ident = threading.get_ident()

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on the index thread and wait (directly when already on it)."""
        if threading.get_ident() == self._ident:
            return fn(*args, **kwargs)
        return self._pool.submit(fn, *args, **kwargs).result()

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Queue ``fn`` on the index thread."""
        return self._pool.submit(fn, *args)

    def shutdown(self) -> None:
        """Finish queued calls and stop the thread."""
        self._pool.shutdown(wait=True)


class SerialIndex:
    """A :class:`VectorIndex` whose every call runs on the :class:`IndexThread`.

    Args:
        inner: The index (Qdrant Edge, or a Qdrant server through qdrant-client).
        thread: The index thread.
    """

    def __init__(self, inner: VectorIndex, thread: IndexThread) -> None:
        self.inner = inner
        self.thread = thread
        self.backend = inner.backend

    def upsert_dense(self, collection: str, bucket: int, points: Sequence[DensePoint]) -> None:
        """See :meth:`VectorIndex.upsert_dense`."""
        self.thread.call(self.inner.upsert_dense, collection, bucket, points)

    def update_sparse(self, collection: str, bucket: int, name: str, vectors: Mapping[str, SparseVector]) -> None:
        """See :meth:`VectorIndex.update_sparse`."""
        self.thread.call(self.inner.update_sparse, collection, bucket, name, vectors)

    def delete_points(self, collection: str, bucket: int, chunk_ids: Sequence[str]) -> None:
        """See :meth:`VectorIndex.delete_points`."""
        self.thread.call(self.inner.delete_points, collection, bucket, chunk_ids)

    def set_payload(self, collection: str, bucket: int, chunk_id: str, payload: Mapping[str, object]) -> None:
        """See :meth:`VectorIndex.set_payload`."""
        self.thread.call(self.inner.set_payload, collection, bucket, chunk_id, payload)

    def search(
        self,
        collection: str,
        bucket: int,
        query: VectorQuery,
        tenant: TenantFilter,
        *,
        limit: int,
        score_threshold: float | None = None,
    ) -> ScoredIds:
        """See :meth:`VectorIndex.search`."""
        return self.thread.call(
            self.inner.search, collection, bucket, query, tenant, limit=limit, score_threshold=score_threshold
        )

    def fused_search(
        self,
        collection: str,
        bucket: int,
        queries: Sequence[VectorQuery],
        tenant: TenantFilter,
        *,
        limit: int,
        candidates: int,
        fusion: str,
        rrf_k: int = 60,
        weights: Sequence[float] | None = None,
    ) -> ScoredIds:
        """See :meth:`VectorIndex.fused_search`."""
        return self.thread.call(
            self.inner.fused_search,
            collection,
            bucket,
            queries,
            tenant,
            limit=limit,
            candidates=candidates,
            fusion=fusion,
            rrf_k=rrf_k,
            weights=weights,
        )

    def vectors_present(self, collection: str, bucket: int) -> dict[str, frozenset[str]]:
        """See :meth:`VectorIndex.vectors_present`."""
        return self.thread.call(self.inner.vectors_present, collection, bucket)

    def count(self, collection: str, bucket: int) -> int:
        """See :meth:`VectorIndex.count`."""
        return self.thread.call(self.inner.count, collection, bucket)

    def has_bucket(self, collection: str, bucket: int) -> bool:
        """See :meth:`VectorIndex.has_bucket`."""
        return self.thread.call(self.inner.has_bucket, collection, bucket)

    def drop_collection(self, collection: str, bucket_count: int) -> None:
        """See :meth:`VectorIndex.drop_collection`."""
        self.thread.call(self.inner.drop_collection, collection, bucket_count)

    def optimize(self, collection: str, bucket: int) -> bool:
        """See :meth:`VectorIndex.optimize` (freezes the process on Edge: admin use only)."""
        return self.thread.call(self.inner.optimize, collection, bucket)

    def close(self) -> None:
        """See :meth:`VectorIndex.close`."""
        self.thread.call(self.inner.close)


class BatchingQueryEncoder:
    """A :class:`DenseEncoder` whose query side batches concurrent callers into one forward pass.

    Document encoding passes straight through in the caller's thread (the ingest job's).

    Args:
        inner: The dense encoder.
        max_batch: Most queries per forward pass.
        torch_threads: torch threads of the query thread.
    """

    def __init__(self, inner: DenseEncoder, *, max_batch: int = 64, torch_threads: int = 1) -> None:
        self.inner = inner
        self.max_batch = max_batch
        self.torch_threads = torch_threads
        self._queue: queue.SimpleQueue[tuple[str, Future[np.ndarray]] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.batches = 0
        self.queries = 0

    @property
    def fingerprint(self) -> str:
        """See :attr:`DenseEncoder.fingerprint`."""
        return self.inner.fingerprint

    @property
    def cache_key(self) -> str:
        """See :attr:`DenseEncoder.cache_key`."""
        return self.inner.cache_key

    @property
    def dimension(self) -> int:
        """See :attr:`DenseEncoder.dimension`."""
        return self.inner.dimension

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (copy, pickle): never recurse
            raise AttributeError(name)
        return getattr(self.inner, name)

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Chunk vectors, computed in the calling thread."""
        return self.inner.encode_documents(texts)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors, encoded on the query thread together with other callers' queries."""
        if not texts:
            return self.inner.encode_queries(texts)
        self._ensure_thread()
        futures: list[Future[np.ndarray]] = []
        for text in texts:
            future: Future[np.ndarray] = Future()
            self._queue.put((text, future))
            futures.append(future)
        return np.stack([f.result() for f in futures])

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="ragindex-query", daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        set_torch_threads(self.torch_threads)
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch = [item]
            while len(batch) < self.max_batch:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._queue.put(None)
                    break
                batch.append(nxt)
            self._encode(batch)

    def _encode(self, batch: list[tuple[str, Future[np.ndarray]]]) -> None:
        try:
            vectors = self.inner.encode_queries([text for text, _ in batch])
        except Exception as exc:  # delivered to every waiting caller
            for _, future in batch:
                future.set_exception(exc)
            return
        self.batches += 1
        self.queries += len(batch)
        for row, (_, future) in zip(vectors, batch, strict=True):
            future.set_result(row)

    def close(self) -> None:
        """Stop the query thread after the queued queries."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout=30)


class ServiceEngine(Engine):
    """The Engine as the service runs it: index calls on the index thread, batched query encoding.

    Post-ingest ``optimize()`` is off (``optimize_min_points=0``): on Edge it holds the GIL for
    minutes and would freeze every request. Optimise from ``POST /v1/optimize`` in a quiet hour.

    Args:
        settings: Engine settings.
        query_batch_max: Most queries per forward pass.
        query_torch_threads: torch threads of the query thread.
    """

    def __init__(self, settings: Settings, *, query_batch_max: int = 64, query_torch_threads: int = 1) -> None:
        super().__init__(settings.model_copy(update={"optimize_min_points": 0}))
        self.index_thread = IndexThread()
        self._query_batch_max = query_batch_max
        self._query_torch_threads = query_torch_threads
        self._batching: BatchingQueryEncoder | None = None

    @property
    def index(self) -> VectorIndex:
        """The vector index behind the index thread (opened there, on first use)."""
        if self._index is None:
            from ragindex import factory

            inner = self.index_thread.call(factory.build_index, self.settings)
            self._index = SerialIndex(inner, self.index_thread)
        return self._index

    @property
    def dense(self) -> DenseEncoder:
        """The dense encoder with batched query encoding."""
        if self._batching is None:
            self._batching = BatchingQueryEncoder(
                super().dense, max_batch=self._query_batch_max, torch_threads=self._query_torch_threads
            )
        return self._batching

    def optimize_all(self) -> dict[str, bool]:
        """Optimise every bucket in use of the ACTIVE collection (blocking; freezes an Edge process)."""
        collection = self.read_collection()
        if collection is None:
            return {}
        index = self.index
        return {str(b): index.optimize(collection, b) for b in self.store.buckets_in_use()}

    def close(self) -> None:
        """Stop the query thread, close the index on its thread, then the store."""
        if self._batching is not None:
            self._batching.close()
        try:
            super().close()
        finally:
            self.index_thread.shutdown()
