"""Searches in worker processes, so that reads use every core while one process owns the embedded index (issue 27).

One process holds the GIL for all of its Python, and Qdrant Edge lets one process own the shards. The service
starts ``RAGINDEX_SEARCH_PROCESSES`` search processes (``spawn``; by default one per core, at most 2) that do a
search's Python: the query encode (one ONNX pass per batch of concurrent queries), the truth-store reads and ghost
filtering, fusion, hit building and the answer's JSON. Only the index query stays in the service (the owner): a
search process sends it over a Unix socket (:class:`IndexServer`), where it runs on that connection's thread
(Qdrant Edge; another backend's on the owner's index thread, like any other index call).

What a search reads is as fresh as in the owner: the truth store is shared (SQLite in WAL mode, or the server
database), so a record upserted and acknowledged is read by the next search of any process, and a chunk REMOVED in
the truth store is dropped at backfill whatever the index still holds. The score-drift watch of the owner receives
the scores the processes observed. A search that fails in a search process (a bad filter, an unreachable source, a
crashed process) runs again in the owner, which raises its error as it always did.

Concurrent searches are batched: each search process takes up to ``RAGINDEX_SEARCH_BATCH_MAX`` waiting searches at a
time and encodes their queries in one forward pass. A ``POST /v1/search`` body may travel as it was received
(:class:`SearchBody`, from :class:`~ragindex.service.search_path.SearchFastPath`): the search process decodes and
validates it, so that the service process spends no time on it. The design and its measurements: docs/service.md,
"The read path (issue 27)".
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any, Literal, cast

import orjson

from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import RagindexError, RetrievalBackendError, ValidationError
from ragindex.gc_freeze import freeze_heap, own_process
from ragindex.index.protocol import VectorIndex
from ragindex.service.schemas import SearchRequest
from ragindex.service.sources import SourcePaths
from ragindex.threads import reads_of

log = logging.getLogger(__name__)

_READS = frozenset({"search"})
"""The index methods a search process may call on the owner's index."""


class IndexServer:
    """Serves the owner's index to the search processes over a Unix socket (reads only).

    Each connection has its thread, and a search runs there, straight on the index, where the index allows it
    (:func:`~ragindex.threads.reads_of`: Qdrant Edge), rather than queued on the owner's index thread: it waits
    for no ingest write queued there, and crosses no thread hand-off (~25% more searches/s with query vectors,
    docs/service.md). A search that meets a shard closed meanwhile fails in its search process and runs again in
    the owner.

    Args:
        index: The owner's index (the service's, whose every other call runs on its index thread).
    """

    def __init__(self, index: VectorIndex) -> None:
        self.index = reads_of(index)
        self.authkey = secrets.token_bytes(32)
        self._dir = tempfile.TemporaryDirectory(prefix="ragindex-search-")
        self.folder = self._dir.name
        self.address = str(Path(self.folder) / "index.sock")
        self._listener = Listener(self.address, family="AF_UNIX", authkey=self.authkey)
        self._closed = False
        self._connections: list[Connection] = []
        threading.Thread(target=self._accept, name="ragindex-index-server", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn = self._listener.accept()
            except (OSError, EOFError):
                if self._closed:
                    return
                log.warning("a search process could not connect to the index server", exc_info=True)
                continue
            self._connections.append(conn)
            threading.Thread(target=self._serve, args=(conn,), name="ragindex-index-conn", daemon=True).start()

    def _serve(self, conn: Connection) -> None:
        while True:
            try:
                method, args, kwargs = conn.recv()
            except (EOFError, OSError):
                return
            try:
                if method not in _READS:
                    raise RetrievalBackendError(f"the index server serves no {method!r}")
                conn.send(("ok", getattr(self.index, method)(*args, **kwargs)))
            except Exception as exc:  # the search process fails its search; the owner runs it again and raises
                conn.send(("error", f"{type(exc).__name__}: {exc}"))

    def close(self) -> None:
        """Stop accepting and close every connection."""
        self._closed = True
        self._listener.close()
        for conn in self._connections:
            conn.close()
        self._dir.cleanup()


class RemoteIndex:
    """The owner's index as a search process sees it: ``search`` only, over the index server's socket."""

    def __init__(self, address: str, authkey: bytes) -> None:
        self._conn = Client(address, family="AF_UNIX", authkey=authkey)
        self.backend = "remote"

    def search(self, *args: Any, **kwargs: Any) -> list[tuple[str, float]]:
        """:meth:`VectorIndex.search` of the owner's index."""
        self._conn.send(("search", args, kwargs))
        status, value = self._conn.recv()
        if status != "ok":
            raise RetrievalBackendError(f"search failed in the index owner: {value}")
        return cast("list[tuple[str, float]]", value)

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()


@dataclass
class _Observed:
    """Stands for the score-drift watch in a search process: the scores go back to the owner's watch."""

    calls: list[tuple[str, str, list[float]]] = field(default_factory=list)

    def observe(self, source: str, fingerprint: str, scores: Sequence[float]) -> None:
        self.calls.append((source, fingerprint, list(scores)))

    def close(self) -> None:
        """Nothing to save here: the owner's watch saves."""


@dataclass
class _Worker:
    engine: Engine
    sources: SourcePaths
    observed: _Observed
    started: tuple[Path, int]  # where each process marks its warm-up done, and how many processes there are


_worker: _Worker | None = None


PARENT_CHECK_S = 1.0
"""How often a search process checks that the service that started it still runs."""


def exit_with_parent(interval: float = PARENT_CHECK_S) -> threading.Thread:
    """End this process (``os._exit``) once the process that started it is gone; checked every ``interval`` s.

    A search process waits on its pool's call queue and never learns that the service died: a service killed by
    SIGKILL (the OOM killer, ``kill -9``, a container runtime) left its search processes behind, ~250 MiB each, for
    good. The check is the parent pid: an orphan is re-parented (to init or a subreaper). The pid to compare is the
    one multiprocessing recorded at spawn, so a service that died while this process still imported is noticed too.
    """
    spawner = multiprocessing.parent_process()
    parent = spawner.pid if spawner is not None and spawner.pid is not None else os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(0)

    thread = threading.Thread(target=watch, name="ragindex-parent-watch", daemon=True)
    thread.start()
    return thread


def _start_worker(
    settings: Settings,
    address: str,
    authkey: bytes,
    paths: tuple[Path, list[Path], Path],
    started: tuple[Path, int],
) -> None:
    global _worker
    exit_with_parent()
    own_process()
    engine = Engine(settings)
    engine._index = cast("VectorIndex", RemoteIndex(address, authkey))  # never opens (nor locks) the shards
    if engine.score_watch is not None:
        engine.score_watch.close()
    observed = _Observed()
    engine.score_watch = cast("Any", observed)
    blob_root, roots, data_dir = paths
    _worker = _Worker(engine, SourcePaths(blob_root, roots, data_dir=data_dir), observed, started)


WARM_UP_WAIT_S = 600.0
"""How long a search process that has warmed up waits for the others (each loads a model; a slow disk is slow)."""


def _warm() -> tuple[int, int]:
    """Warm this process up, then wait for every other process's; return the pid and the objects frozen.

    The warm-up loads the query model and the search path's modules, then freezes the heap (:func:`freeze_heap`).
    The pool hands a task to whichever process is free, so without the wait one process could take every warm-up
    task and another meet its first search cold (~0.1 s of model load in a burst of searches: the tail of the
    first second under load). An encoder that fails here is the service's own dense check to report (a remote
    encoder may come up later): the process is started, and each search meets its own error.
    """
    assert _worker is not None
    from ragindex.retrieval import context, fusion, search, sources  # noqa: F401 - what Engine.search imports

    try:
        _worker.engine.dense.encode_queries(["warm up"])
    except Exception as exc:
        log.warning("a search process could not warm its query encoder up: %s", exc)
    frozen = freeze_heap()
    folder, processes = _worker.started
    (folder / str(os.getpid())).touch()
    deadline = time.monotonic() + WARM_UP_WAIT_S
    # a file a process, not a multiprocessing Barrier: a service that ends by os._exit leaves its semaphores behind
    while sum(1 for _ in folder.iterdir()) < processes and time.monotonic() < deadline:
        time.sleep(0.01)
    return os.getpid(), frozen


Outcome = tuple[bytes, dict[str, str], list[tuple[str, str, list[float]]]] | None
"""A search's answer (JSON), its degraded sources and the scores it observed; None: run it in the owner."""

INVALID: Literal["invalid"] = "invalid"
"""The outcome of a :class:`SearchBody` that did not decode or validate: the service's route answers it."""

BodyOutcome = Outcome | Literal["invalid"]
"""The outcome of a :class:`SearchBody`: a search's, or :data:`INVALID`."""


@dataclass(frozen=True)
class SearchBody:
    """A ``POST /v1/search`` body as the service received it, for a search process to decode, validate and run.

    Args:
        body: The request's body (JSON).
        user_id: The tenant of the request's key (checked by the service).
        rerank_supported: Whether the deployment can rerank (a body asking for it otherwise is the route's 422).
    """

    body: bytes
    user_id: int
    rerank_supported: bool


def engine_call(body: SearchRequest, user_id: int, *, rerank_supported: bool) -> dict[str, Any]:
    """The :meth:`Engine.search` keyword arguments of a validated ``POST /v1/search`` body.

    Raises:
        ValidationError: The body has neither a ``query`` nor a ``vector``, or asks a deployment that cannot
            rerank to rerank.
    """
    if "query" not in body.model_fields_set and body.vector is None:
        raise ValidationError("query", "Field required: the query text, or a `vector` (with mode dense)")
    call: dict[str, Any] = {
        "query": body.query,
        "user_id": user_id,
        "set_id": body.set_id,
        "doc_ids": body.doc_ids,
        "mode": body.mode or "hybrid",
        "top_k": body.top_k,
        "score_threshold": body.score_threshold,
        "fusion": body.fusion,
        "expand": body.expand,
        "context_chars": body.context_chars,
        "group_by": body.group_by,
        "sources": body.sources,
        "on_source_error": body.on_source_error,
        "filter": body.filter,
        "vector": body.vector,
    }
    if body.rerank is not None:
        if not rerank_supported:
            raise ValidationError("rerank", "rerank not available")
        call["rerank"] = body.rerank
    return call


def _decoded(item: SearchBody) -> dict[str, Any] | None:
    """The call of a received body, or None where it does not decode or validate.

    orjson is stricter than the service's JSON decoder (no ``NaN``, no lone surrogates, no other encoding than
    UTF-8) and the model is the route's, validated as the route validates it (from Python objects): a body refused
    here is the route's to answer (its 422, or its search where its decoder accepted what orjson did not), so a
    search here never accepts a body the route would refuse.
    """
    try:
        return engine_call(
            SearchRequest.model_validate(orjson.loads(item.body)), item.user_id, rerank_supported=item.rerank_supported
        )
    except (ValueError, RagindexError):  # orjson's and pydantic's errors are ValueErrors
        return None


def _search_batch(items: Sequence[Mapping[str, Any] | SearchBody]) -> list[BodyOutcome]:
    """Run ``items`` (:meth:`Engine.search` keyword arguments, or bodies) one by one, their queries encoded at once."""
    assert _worker is not None
    engine = _worker.engine
    calls = [_decoded(item) if isinstance(item, SearchBody) else item for item in items]
    texts = (call["query"] for call in calls if call is not None and call.get("vector") is None)
    encoded = (text for text in texts if str(text).strip())
    queries = list(dict.fromkeys(encoded))
    if len(queries) > 1:
        try:  # fills the query-vector cache: each search below finds its vector there
            engine.dense.encode_queries(queries)
        except Exception:  # each search meets (and reports) its own failure
            log.debug("batched query encode failed", exc_info=True)
    out: list[BodyOutcome] = []
    for call in calls:
        if call is None:
            out.append(INVALID)
            continue
        _worker.observed.calls = []
        try:
            result = engine.search(**call)
            answer = _worker.sources.answer(result, user_id=call["user_id"])
            body = orjson.dumps(answer, option=orjson.OPT_NON_STR_KEYS)
            out.append((body, dict(result.degraded), _worker.observed.calls))
        except Exception:
            out.append(None)
    return out


@dataclass
class _Waiting:
    item: dict[str, Any] | SearchBody
    future: asyncio.Future[BodyOutcome]


class SearchPool:
    """N search processes fed from one queue; each takes up to ``batch_max`` waiting searches at a time.

    Args:
        settings: The engine settings the processes open their engines with.
        index: The owner's index (served to them).
        processes: How many search processes.
        batch_max: Most searches a process takes at once (their queries are encoded together).
        paths: What public sources are relative to: the blob root, the source roots, the data dir.
    """

    def __init__(
        self,
        settings: Settings,
        index: VectorIndex,
        *,
        processes: int,
        batch_max: int,
        paths: tuple[Path, list[Path], Path],
    ) -> None:
        self.server = IndexServer(index)
        self.batch_max = batch_max
        started = Path(self.server.folder) / "warmed"
        started.mkdir()
        self._pool = ProcessPoolExecutor(
            processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=(settings, self.server.address, self.server.authkey, paths, (started, processes)),
        )
        self._processes = processes
        self._ready = False
        self._failed: str | None = None
        self._queue: asyncio.Queue[_Waiting] | None = None
        self._feeders: list[asyncio.Task[None]] = []
        self.warmed: dict[int, int] = {}
        """The processes that have warmed up: pid -> objects their warm-up froze."""
        self.batches = 0
        self.searches = 0
        self.bodies = 0
        """Searches sent as received bodies (:meth:`search_body`), of ``searches``."""

    @property
    def processes(self) -> int:
        """How many search processes this pool runs."""
        return self._processes

    def warm_up(self) -> None:
        """Start every process and load its model (blocking; the service calls it at start-up on a thread).

        One warm-up task per process, each held until all have run theirs, so every process gets one.
        """
        try:
            futures = [self._pool.submit(_warm) for _ in range(self._processes)]
            self.warmed = dict(future.result() for future in futures)
        except Exception as exc:  # searches fall back to the service process; readiness reports it
            log.exception("the search processes did not start")
            self._failed = f"failed to start: {exc}"
            return
        freeze_heap()  # the service process's too: what its start-up built since the model's warm-up
        self._ready = True

    def status(self) -> str:
        """``ok`` once every search process has loaded its model, else why not (``/readyz``)."""
        return "ok" if self._ready else self._failed or "starting"

    async def search(self, call: dict[str, Any]) -> Outcome:
        """The outcome of one search (:meth:`Engine.search` keyword arguments) run in a search process."""
        outcome = await self._run(call)
        assert outcome != INVALID  # only a body can be invalid
        return outcome

    async def search_body(self, body: SearchBody) -> BodyOutcome:
        """The outcome of one ``POST /v1/search`` body, decoded, validated and run in a search process."""
        self.bodies += 1
        return await self._run(body)

    async def _run(self, item: dict[str, Any] | SearchBody) -> BodyOutcome:
        if self._queue is None:
            self._queue = asyncio.Queue()
            # two batches in flight a process: it starts the next while the service takes the answers of the last
            self._feeders = [asyncio.create_task(self._feed(self._queue)) for _ in range(self._processes * 2)]
        future: asyncio.Future[BodyOutcome] = asyncio.get_running_loop().create_future()
        await self._queue.put(_Waiting(item, future))
        return await future

    async def _feed(self, queue: asyncio.Queue[_Waiting]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [await queue.get()]
            while len(batch) < self.batch_max and not queue.empty():
                batch.append(queue.get_nowait())
            try:
                outcomes = await loop.run_in_executor(self._pool, _search_batch, [w.item for w in batch])
            except Exception:  # a crashed process: the owner runs these searches itself
                log.exception("a search process failed; its searches run in the service process")
                outcomes = [None] * len(batch)
            self.batches += 1
            self.searches += len(batch)
            for waiting, outcome in zip(batch, outcomes, strict=True):
                if not waiting.future.done():
                    waiting.future.set_result(outcome)

    def close(self) -> None:
        """Stop the processes (their searches in flight end first) and the index server."""
        for task in self._feeders:
            task.cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self.server.close()
