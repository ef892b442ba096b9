"""Many threads over one Engine: one thread owns every index call, one thread encodes queries in batches.

Qdrant Edge holds the GIL for the whole of every call and one process owns the shards
(``shared/DESIGN.md``). So an engine shared by threads (:class:`ThreadedEngine`: the HTTP service's,
:class:`~ragindex.aio.AsyncEngine`'s) never calls the index from an event loop or from many threads:
:class:`SerialIndex` forwards each call to the one ``ragindex-index`` thread, where calls from searches
and from an ingest interleave call by call (an upsert batch is milliseconds). Query vectors come from
:class:`BatchingQueryEncoder`: concurrent searches are encoded together in one forward pass on the
``ragindex-query`` thread, with its own torch thread budget, while an ingest encodes chunks on its own
thread (torch releases the GIL in its kernels).
"""

from __future__ import annotations

import functools
import logging
import queue
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar, cast

import numpy as np

from ragindex.config.settings import Settings
from ragindex.encoders.protocol import DenseEncoder
from ragindex.encoders.wrapping import DenseEncoderWrapper
from ragindex.engine import Engine
from ragindex.gc_freeze import freeze_heap
from ragindex.index.protocol import VectorIndex

log = logging.getLogger(__name__)
T = TypeVar("T")


def set_torch_threads(n: int, *, load: bool = True) -> None:
    """Limit torch's intra-op threads of the calling thread (OpenMP keeps the setting per thread).

    With ``load=False`` nothing happens until something else has imported torch. The call that imports torch (a
    service's first ingest job) also freezes the heap (:func:`~ragindex.gc_freeze.freeze_heap`, without a
    collection): torch's ~90,000 objects would otherwise be walked by every full collection of a long-running
    process (~40 ms each in the service, measured).
    """
    imported = "torch" not in sys.modules
    if imported and not load:
        return
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a core dependency
        return
    torch.set_num_threads(n)
    if imported:
        freeze_heap(collect=False)


class IndexThread:
    """The single thread that runs every call into the vector index."""

    def __init__(self) -> None:
        self._ident: int | None = None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="ragindex-index", initializer=self._remember)
        self._pending = 0
        self._count_lock = threading.Lock()

    def _remember(self) -> None:
        self._ident = threading.get_ident()

    @property
    def pending(self) -> int:
        """Calls queued on the index thread or running there (a long one, an ``optimize``, holds the others)."""
        return self._pending

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on the index thread and wait (directly when already on it)."""
        if threading.get_ident() == self._ident:
            return fn(*args, **kwargs)
        return self.submit(fn, *args, **kwargs).result()

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        """Queue ``fn`` on the index thread."""
        with self._count_lock:
            self._pending += 1
        future = self._pool.submit(fn, *args, **kwargs)
        future.add_done_callback(self._finished)
        return future

    def _finished(self, _future: Future[Any]) -> None:
        with self._count_lock:
            self._pending -= 1

    def shutdown(self) -> None:
        """Finish queued calls and stop the thread."""
        self._pool.shutdown(wait=True)

    def serial(self, index: VectorIndex) -> VectorIndex:
        """``index`` with every call run on this thread (an ``index_wrapper`` of :class:`~ragindex.engine.Engine`)."""
        # SerialIndex forwards each VectorIndex method by name instead of restating it, so mypy cannot see them
        return cast("VectorIndex", SerialIndex(index, self))


class SerialIndex:
    """A proxy of a :class:`VectorIndex` whose every method runs on the :class:`IndexThread`.

    Methods are forwarded by name (:meth:`__getattr__`), so the proxy restates no signature of the
    Protocol; attributes that are not callable (``backend``) are read from the index directly.
    :meth:`IndexThread.serial` creates it typed as the :class:`VectorIndex` it stands for.

    Args:
        inner: The index (Qdrant Edge, or a Qdrant server through qdrant-client).
        thread: The index thread.
    """

    def __init__(self, inner: VectorIndex, thread: IndexThread) -> None:
        self.inner = inner
        self.thread = thread

    def __getattr__(self, name: str) -> Any:
        if name in ("inner", "thread"):  # not set yet (copy, pickle): never recurse
            raise AttributeError(name)
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def on_index_thread(*args: Any, **kwargs: Any) -> Any:
            return self.thread.call(attr, *args, **kwargs)

        setattr(self, name, on_index_thread)  # found directly from now on
        return on_index_thread


def reads_of(index: VectorIndex) -> VectorIndex:
    """The index a search may call from any thread.

    The index inside ``index`` if it is a :class:`SerialIndex` whose index says its reads need no index thread
    (``reads_from_any_thread``: Qdrant Edge), else ``index``. A search sent to the index thread waits for the calls
    queued there (an ingest's writes) and costs two thread hand-offs under the GIL; the search processes' reads skip
    both (docs/service.md, "Reads off the index thread").
    """
    if isinstance(index, SerialIndex) and getattr(index.inner, "reads_from_any_thread", False):
        return index.inner
    return index


class BatchingQueryEncoder(DenseEncoderWrapper):
    """A :class:`DenseEncoder` whose query side batches concurrent callers into one forward pass.

    Document encoding passes straight through in the caller's thread (the ingest job's).

    Args:
        inner: The dense encoder.
        max_batch: Most queries per forward pass.
        torch_threads: torch threads of the query thread.
    """

    def __init__(self, inner: DenseEncoder, *, max_batch: int = 64, torch_threads: int = 1) -> None:
        super().__init__(inner)
        self.max_batch = max_batch
        self.torch_threads = torch_threads
        self._queue: queue.SimpleQueue[tuple[str, Future[np.ndarray]] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.batches = 0
        self.queries = 0

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
        limited = False
        for item in iter(self._queue.get, None):  # until close() queues None
            # limit torch only once something loaded it (the light encoder failed, an ingest): importing it here
            # would cost a process that encodes its queries with ONNX Runtime seconds and hundreds of MB
            if not limited and "torch" in sys.modules:
                set_torch_threads(self.torch_threads)
                limited = True
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


class ThreadedEngine(Engine):
    """An :class:`~ragindex.engine.Engine` for many threads: index calls on the index thread, batched query encoding.

    :class:`~ragindex.aio.AsyncEngine` builds one by default, and the HTTP service's engine is one.

    Args:
        settings: Engine settings (default: from the environment).
        query_batch_max: Most queries per forward pass.
        query_torch_threads: torch threads of the query thread.
    """

    def __init__(
        self, settings: Settings | None = None, *, query_batch_max: int = 64, query_torch_threads: int = 1
    ) -> None:
        self.index_thread = IndexThread()
        super().__init__(settings, index_wrapper=self.index_thread.serial)
        self._query_batch_max = query_batch_max
        self._query_torch_threads = query_torch_threads
        self._batching: BatchingQueryEncoder | None = None
        self._batching_lock = threading.Lock()

    @property
    def dense(self) -> DenseEncoder:
        """The dense encoder with batched query encoding."""
        if self._batching is None:
            inner = super().dense  # built under the parts lock, which is not reentrant: take it before ours
            with self._batching_lock:  # threads asking at once share one query thread
                if self._batching is None:
                    self._batching = BatchingQueryEncoder(
                        inner, max_batch=self._query_batch_max, torch_threads=self._query_torch_threads
                    )
        return self._batching

    def close(self, *, process_exit: bool = False) -> None:
        """Stop the query thread, close the index on its thread, then the store."""
        if self._batching is not None:
            self._batching.close()
        try:
            super().close(process_exit=process_exit)
        finally:
            self.index_thread.shutdown()
