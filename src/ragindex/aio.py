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
import inspect
import logging
import threading
import uuid
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Self, TypeVar, cast

from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import InputError, Interrupted
from ragindex.pipeline.stopping import operation_stop

if TYPE_CHECKING:
    from ragindex.pipeline.sync import IngestReport

log = logging.getLogger(__name__)
T = TypeVar("T")
P = ParamSpec("P")

CANCELLED = "cancelled by its caller"

_Coroutine = Callable[Concatenate["AsyncEngine", P], Coroutine[Any, Any, T]]
"""An AsyncEngine method made from an Engine method: the same parameters, awaited."""


def _named(call: Any, method: Callable[..., Any], doc: str) -> None:
    """Give ``call`` the name and the signature of the Engine's ``method``; its docstring links it, then ``doc``."""
    name = method.__name__
    call.__name__ = name
    call.__qualname__ = f"AsyncEngine.{name}"
    call.__signature__ = inspect.signature(method)
    call.__doc__ = f":meth:`Engine.{name} <ragindex.engine.Engine.{name}>`{doc}"


def _forward(method: Callable[Concatenate[Engine, P], T], doc: str, *, write: bool) -> _Coroutine[P, T]:
    """A coroutine method of :class:`AsyncEngine` that runs ``method`` of its engine on the pool.

    The method is looked up on the wrapped engine by name: a subclass (``ThreadedEngine``, ``ServiceEngine``)
    may override it.
    """
    name = method.__name__

    async def call(self: AsyncEngine, /, *args: P.args, **kwargs: P.kwargs) -> T:
        bound = getattr(self.engine, name)
        return await self._call(lambda: bound(*args, **kwargs), write=write)

    _named(call, method, doc)
    return call


def _read(method: Callable[Concatenate[Engine, P], T], doc: str) -> _Coroutine[P, T]:
    """A read: a cancelled caller gets :class:`asyncio.CancelledError` at once, the call runs to its end."""
    return _forward(method, doc, write=False)


def _write(method: Callable[Concatenate[Engine, P], T], doc: str) -> _Coroutine[P, T]:
    """A write: a cancelled caller asks it to stop at its next safe point and waits until it has stopped."""
    return _forward(method, doc, write=True)


def _cancellable_ingest(
    method: Callable[Concatenate[Engine, P], IngestReport],
) -> _Coroutine[P, IngestReport]:
    """``AsyncEngine.ingest``: a write whose runs are settled when its caller cancels it (see the docstring)."""

    async def ingest(self: AsyncEngine, /, *args: P.args, **kwargs: P.kwargs) -> IngestReport:
        job = cast("str | None", kwargs.get("job_id")) or uuid.uuid4().hex
        kwargs["job_id"] = job
        stop = threading.Event()
        engine = self.engine
        run_ingest: Callable[..., IngestReport] = getattr(engine, method.__name__)  # a subclass's override

        def run() -> IngestReport:
            try:
                return run_ingest(*args, **kwargs)
            except Interrupted:
                if stop.is_set():  # this call was cancelled (not the engine stopped): settle its runs now
                    from ragindex.pipeline.cancel import close_open_runs

                    close_open_runs(engine.store, job_id=job, kinds=engine.kinds, reason=CANCELLED)
                raise

        return await self._call(run, write=True, stop=stop)

    _named(
        ingest,
        method,
        " on the pool; cancellable at file and batch bounds.\n\n"
        "``job_id`` is recorded with each pipeline run; default: a fresh id per call, so that a cancelled ingest "
        "can settle the runs it left open (documents it finished are SUCCESS, the others FAILED naming the next "
        "ingest of the set or ``repair``, which finish them). ``progress`` is called from the worker thread "
        "(reach the loop with ``loop.call_soon_threadsafe``).",
    )
    return ingest


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

    # ------------------------------------------------------------------ API: ingest and search
    ingest = _cancellable_ingest(Engine.ingest)
    upsert = _cancellable_ingest(Engine.upsert)
    search = _read(Engine.search, " on the pool (concurrent queries encode together).")

    # ------------------------------------------------------------------ API: reads
    status = _read(Engine.status, ": documents and chunks per status, the collections.")
    score_report = _read(Engine.score_report, ": the score-drift watch.")
    reset_scores = _write(Engine.reset_scores, ": forget the score windows.")
    calibrate_fusion = _write(Engine.calibrate_fusion, ": measure and record the set's fusion weights.")
    verify = _read(Engine.verify, ": compare the truth store with the index.")
    documents = _read(Engine.documents, ": a page of documents by doc_id.")
    document = _read(Engine.document, ": a document, its stages and chunk counts.")
    parsed_document = _read(Engine.parsed_document, ": the markdown it was chunked from.")
    read_collection = _read(Engine.read_collection, ": the ACTIVE collection, or None.")
    write_collection = _write(Engine.write_collection, " (created on first use).")

    # ------------------------------------------------------------------ API: chunk management
    update_chunk = _write(Engine.update_chunk, ": edit one chunk, re-embed if changed.")
    delete_chunks = _write(Engine.delete_chunks, ": REMOVED first, then purged.")
    delete_document = _write(Engine.delete_document, ": a document and its chunks.")
    delete_source = _write(Engine.delete_source, ": the documents of a file or folder.")
    delete = _write(Engine.delete, ": the documents of records' keys (or files' source paths).")

    # ------------------------------------------------------------------ API: maintenance
    repair = _write(Engine.repair, ": converge the index copies to the truth store.")
    repair_stale_indexing = _write(Engine.repair_stale_indexing, ".")
    reindex_failed = _write(Engine.reindex_failed, ": retry FAILED copies explicitly.")
    reindex_chunks = _write(Engine.reindex_chunks, ": rebuild the copies of chunks.")
    reindex_into = _write(
        Engine.reindex_into,
        ": build a collection, then switch to it.\n\n"
        "Cancelled, the build stops before its next batch and stays BUILDING: the same call (or ``repair``) "
        "resumes it. ``progress`` is called from the worker thread.",
    )


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
