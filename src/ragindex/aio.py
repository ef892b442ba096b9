"""``AsyncEngine``: the Engine's API as coroutines, for asyncio applications (the HTTP service uses it).

Every call runs the synchronous :class:`~ragindex.engine.Engine` method on a bounded thread pool
(``RAGINDEX_ASYNC_WORKERS`` threads), never on the event loop. The engine it builds is a
:class:`~ragindex.threads.ThreadedEngine`, so the pool's threads share it the way the service's do: every index
call runs on the one index thread and concurrent queries are encoded together on the query thread.

Cancelling the task that awaits a call:

* A call still waiting for a thread never starts.
* A read (``search``, ``status``, ``verify``, ``documents``, ...) raises :class:`asyncio.CancelledError` at once; its
  thread finishes the call and the result is dropped. The engine stays usable.
* A write (``ingest``, ``repair``, the deletes, ``reindex_*``, ``update_chunk``) is asked to stop at its next safe
  point (before a file or a batch: no claim is held there) and the cancellation completes once its thread has
  stopped, so what follows the ``await`` never races it. A stopped ingest keeps what it committed and settles its
  runs (:mod:`ragindex.pipeline.cancel`): its unfinished chunks stay PENDING and the next ingest of the set, or
  :meth:`AsyncEngine.repair`, indexes them. A short write with no safe point in it finishes first.

Only this call stops: other calls sharing the engine go on (see :mod:`ragindex.pipeline.stopping`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, Self, TypeVar

from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import InputError, Interrupted
from ragindex.pipeline.stopping import operation_stop

if TYPE_CHECKING:
    from ragindex.pipeline.inspection import DocumentDetail, DocumentPage
    from ragindex.pipeline.reindex import ReindexReport
    from ragindex.pipeline.repair import RepairReport
    from ragindex.pipeline.sync import IngestReport, ProgressFn
    from ragindex.pipeline.verify import VerifyReport
    from ragindex.results import ChunkUpdate, DeleteResult, ReindexResult, StaleRelease, StatusReport
    from ragindex.store.records import ParsedDocument
    from ragindex.types import SearchResult

log = logging.getLogger(__name__)
T = TypeVar("T")
P = ParamSpec("P")

CANCELLED = "cancelled by its caller"


class AsyncEngine:
    """The :class:`~ragindex.engine.Engine`'s public methods as coroutines, run on a bounded thread pool.

    Args:
        settings: Settings of the engine it builds (default: from the environment and ``.env``).
        engine: Wrap this engine instead of building one; the caller keeps it and closes it after :meth:`aclose`
            (the HTTP service passes its :class:`~ragindex.service.executor.ServiceEngine`). Prefer a
            :class:`~ragindex.threads.ThreadedEngine`: the pool's threads call it at once.
        workers: Threads of the pool (default ``RAGINDEX_ASYNC_WORKERS``): the most calls running at once; the
            others wait for a thread.

    Use ``async with await AsyncEngine.open() as engine:`` (or ``AsyncEngine()``), or call :meth:`aclose`.
    Cancellation: see :mod:`ragindex.aio`.
    """

    def __init__(
        self, settings: Settings | None = None, *, engine: Engine | None = None, workers: int | None = None
    ) -> None:
        if engine is not None and settings is not None:
            raise InputError("give settings or an engine, not both (the engine has its settings)")
        if workers is not None and workers < 1:
            raise InputError(f"workers must be at least 1, not {workers}")
        if engine is None:
            from ragindex.threads import ThreadedEngine

            engine = ThreadedEngine(settings)
            self._owns_engine = True
        else:
            self._owns_engine = False
        self.engine = engine
        size = workers if workers is not None else engine.settings.async_workers
        self.workers = size
        self._pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="ragindex-async")
        self._closed = False

    @classmethod
    async def open(cls, settings: Settings | None = None, *, workers: int | None = None) -> Self:
        """Build the engine on a thread, so that opening the truth store (and migrating it) never blocks the loop.

        ``AsyncEngine(settings)`` does the same in the calling thread (milliseconds for SQLite, a connection for
        a database server).
        """
        return await asyncio.to_thread(cls, settings, workers=workers)

    # ------------------------------------------------------------------ lifecycle
    @property
    def settings(self) -> Settings:
        """The engine's settings."""
        return self.engine.settings

    @property
    def kinds(self) -> tuple[str, ...]:
        """Enabled vector kinds in stage order (dense first)."""
        return self.engine.kinds

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Let the calls already submitted finish, then close the engine if this object built it; idempotent.

        Calls made after it raise :class:`~ragindex.errors.InputError`.
        """
        if self._closed:
            return
        self._closed = True

        def shut() -> None:
            self._pool.shutdown(wait=True)
            if self._owns_engine:
                self.engine.close()

        # its own thread, not the pool being shut down, and shielded: a cancelled aclose still closes
        await asyncio.shield(asyncio.to_thread(shut))

    def request_stop(self) -> None:
        """Stop every running operation of the engine at its next safe point (``Interrupted``), as a signal would."""
        self.engine.request_stop()

    # ------------------------------------------------------------------ running calls on the pool
    async def run_sync(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a blocking callable on the pool, like a read (for the engine's parts the API does not cover).

        A cancelled caller gets :class:`asyncio.CancelledError` at once; ``fn`` still runs to its end.
        """
        return await self._call(lambda: fn(*args, **kwargs), write=False)

    async def _call(self, fn: Callable[[], T], *, write: bool, stop: threading.Event | None = None) -> T:
        if self._closed:
            raise InputError("this AsyncEngine is closed; open a new one")
        stop = stop or threading.Event()

        def work() -> T:
            with operation_stop(stop):
                return fn()

        submitted = self._pool.submit(work)
        done = asyncio.wrap_future(submitted)
        try:
            # shielded: cancelling the caller must not cancel the asyncio future (that would abandon a started write)
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            if not submitted.cancel() and write:  # cancel() is True when it had not started: it never runs
                stop.set()
                await _wait_out(done)
            raise

    async def _write(self, fn: Callable[[], T], stop: threading.Event | None = None) -> T:
        return await self._call(fn, write=True, stop=stop)

    async def _read(self, fn: Callable[[], T]) -> T:
        return await self._call(fn, write=False)

    # ------------------------------------------------------------------ API: ingest and search
    async def ingest(
        self,
        paths: Sequence[str | Path],
        *,
        user_id: int = 1,
        set_id: int = 1,
        full: bool = False,
        keep_missing: bool = False,
        allow_mass_delete: bool = False,
        exclude: Sequence[str | Path] = (),
        per_file: bool = False,
        job_id: str | None = None,
        progress: ProgressFn | None = None,
        vanished: Sequence[str | Path] = (),
        vanished_within: Sequence[str | Path] = (),
    ) -> IngestReport:
        """:meth:`Engine.ingest <ragindex.engine.Engine.ingest>` on the pool; cancellable at file and batch bounds.

        ``job_id`` is recorded with each pipeline run; default: a fresh id per call, so that a cancelled ingest
        can settle the runs it left open (documents it finished are SUCCESS, the others FAILED naming the next
        ingest of the set or ``repair``, which finish them). ``progress`` is called from the worker thread
        (reach the loop with ``loop.call_soon_threadsafe``).
        """
        job = job_id or uuid.uuid4().hex
        stop = threading.Event()
        engine = self.engine

        def run() -> IngestReport:
            try:
                return engine.ingest(
                    paths,
                    user_id=user_id,
                    set_id=set_id,
                    full=full,
                    keep_missing=keep_missing,
                    allow_mass_delete=allow_mass_delete,
                    exclude=exclude,
                    per_file=per_file,
                    job_id=job,
                    progress=progress,
                    vanished=vanished,
                    vanished_within=vanished_within,
                )
            except Interrupted:
                if stop.is_set():  # this call was cancelled (not the engine stopped): settle its runs now
                    from ragindex.pipeline.cancel import close_open_runs

                    close_open_runs(engine.store, job_id=job, kinds=engine.kinds, reason=CANCELLED)
                raise

        return await self._write(run, stop)

    async def search(
        self,
        query: str,
        *,
        user_id: int,
        set_id: int,
        doc_ids: Sequence[int] | None = None,
        mode: str = "hybrid",
        top_k: int | None = None,
        score_threshold: float | None = None,
        fusion: str | None = None,
        candidates: int | None = None,
        rerank: bool | None = None,
        expand: str | None = None,
        context_chars: int | None = None,
        group_by: str | None = None,
        sources: str | Sequence[str] | None = None,
        on_source_error: str | None = None,
    ) -> SearchResult:
        """:meth:`Engine.search <ragindex.engine.Engine.search>` on the pool (concurrent queries encode together)."""
        return await self._read(
            lambda: self.engine.search(
                query,
                user_id=user_id,
                set_id=set_id,
                doc_ids=doc_ids,
                mode=mode,
                top_k=top_k,
                score_threshold=score_threshold,
                fusion=fusion,
                candidates=candidates,
                rerank=rerank,
                expand=expand,
                context_chars=context_chars,
                group_by=group_by,
                sources=sources,
                on_source_error=on_source_error,
            )
        )

    # ------------------------------------------------------------------ API: reads
    async def status(self) -> StatusReport:
        """:meth:`Engine.status <ragindex.engine.Engine.status>`: documents and chunks per status, the collections."""
        return await self._read(self.engine.status)

    async def score_report(self) -> list[dict[str, Any]]:
        """:meth:`Engine.score_report <ragindex.engine.Engine.score_report>`: the score-drift watch."""
        return await self._read(self.engine.score_report)

    async def reset_scores(self, *, source: str | None = None) -> int:
        """:meth:`Engine.reset_scores <ragindex.engine.Engine.reset_scores>`: forget the score windows."""
        return await self._write(lambda: self.engine.reset_scores(source=source))

    async def verify(self) -> VerifyReport:
        """:meth:`Engine.verify <ragindex.engine.Engine.verify>`: compare the truth store with the index."""
        return await self._read(self.engine.verify)

    async def documents(
        self,
        *,
        user_id: int | None = None,
        set_id: int | None = None,
        status: str | None = None,
        cursor: str | None = None,
        limit: int = 100,
    ) -> DocumentPage:
        """:meth:`Engine.documents <ragindex.engine.Engine.documents>`: a page of documents by doc_id."""
        return await self._read(
            lambda: self.engine.documents(user_id=user_id, set_id=set_id, status=status, cursor=cursor, limit=limit)
        )

    async def document(self, doc_id: int, *, user_id: int | None = None, chunks: bool = False) -> DocumentDetail:
        """:meth:`Engine.document <ragindex.engine.Engine.document>`: a document, its stages and chunk counts."""
        return await self._read(lambda: self.engine.document(doc_id, user_id=user_id, chunks=chunks))

    async def parsed_document(self, doc_id: int, *, user_id: int | None = None) -> ParsedDocument:
        """:meth:`Engine.parsed_document <ragindex.engine.Engine.parsed_document>`: the markdown it was chunked from."""
        return await self._read(lambda: self.engine.parsed_document(doc_id, user_id=user_id))

    async def read_collection(self) -> str | None:
        """:meth:`Engine.read_collection <ragindex.engine.Engine.read_collection>`: the ACTIVE collection, or None."""
        return await self._read(self.engine.read_collection)

    async def write_collection(self) -> str:
        """:meth:`Engine.write_collection <ragindex.engine.Engine.write_collection>` (created on first use)."""
        return await self._write(self.engine.write_collection)

    # ------------------------------------------------------------------ API: chunk management
    async def update_chunk(
        self, chunk_id: str, content: str | None = None, metadata: dict[str, Any] | None = None
    ) -> ChunkUpdate:
        """:meth:`Engine.update_chunk <ragindex.engine.Engine.update_chunk>`: edit one chunk, re-embed if changed."""
        return await self._write(lambda: self.engine.update_chunk(chunk_id, content, metadata))

    async def delete_chunks(self, chunk_ids: Sequence[str]) -> DeleteResult:
        """:meth:`Engine.delete_chunks <ragindex.engine.Engine.delete_chunks>`: REMOVED first, then purged."""
        return await self._write(lambda: self.engine.delete_chunks(chunk_ids))

    async def delete_document(self, doc_id: int, *, user_id: int | None = None) -> DeleteResult:
        """:meth:`Engine.delete_document <ragindex.engine.Engine.delete_document>`: a document and its chunks."""
        return await self._write(lambda: self.engine.delete_document(doc_id, user_id=user_id))

    async def delete_source(self, path: str | Path, *, user_id: int = 1, set_id: int = 1) -> DeleteResult:
        """:meth:`Engine.delete_source <ragindex.engine.Engine.delete_source>`: the documents of a file or folder."""
        return await self._write(lambda: self.engine.delete_source(path, user_id=user_id, set_id=set_id))

    # ------------------------------------------------------------------ API: maintenance
    async def repair(self, dry_run: bool = False, *, stale_seconds: float | None = None) -> RepairReport:
        """:meth:`Engine.repair <ragindex.engine.Engine.repair>`: converge the index copies to the truth store."""
        return await self._write(lambda: self.engine.repair(dry_run, stale_seconds=stale_seconds))

    async def repair_stale_indexing(
        self, limit: int | None = None, *, stale_seconds: float | None = None
    ) -> StaleRelease:
        """:meth:`Engine.repair_stale_indexing <ragindex.engine.Engine.repair_stale_indexing>`."""
        return await self._write(lambda: self.engine.repair_stale_indexing(limit, stale_seconds=stale_seconds))

    async def reindex_failed(self, ids: Sequence[str] | None = None) -> ReindexResult:
        """:meth:`Engine.reindex_failed <ragindex.engine.Engine.reindex_failed>`: retry FAILED copies explicitly."""
        return await self._write(lambda: self.engine.reindex_failed(ids))

    async def reindex_chunks(self, ids: Sequence[str]) -> ReindexResult:
        """:meth:`Engine.reindex_chunks <ragindex.engine.Engine.reindex_chunks>`: rebuild the copies of chunks."""
        return await self._write(lambda: self.engine.reindex_chunks(ids))

    async def reindex_into(
        self,
        name: str,
        model: str | None = None,
        drop_old: bool = False,
        *,
        progress: Callable[[str, int], None] | None = None,
    ) -> ReindexReport:
        """:meth:`Engine.reindex_into <ragindex.engine.Engine.reindex_into>`: build a collection, then switch to it.

        Cancelled, the build stops before its next batch and stays BUILDING: the same call (or ``repair``)
        resumes it. ``progress`` is called from the worker thread.
        """
        return await self._write(lambda: self.engine.reindex_into(name, model, drop_old, progress=progress))


async def _wait_out(done: asyncio.Future[Any]) -> None:
    """Wait until ``done`` is done, whatever it ends with, even if the waiting task is cancelled again."""
    while not done.done():
        try:
            await asyncio.shield(done)
        except asyncio.CancelledError:
            continue
        except Interrupted:  # the stop it was asked for
            return
        except BaseException:  # the caller re-raises its own cancellation: this outcome is only logged
            log.warning("a cancelled call ended with an error", exc_info=True)
            return
