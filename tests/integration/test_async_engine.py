"""AsyncEngine on a real engine (SQLite, Qdrant Edge, the shipped model): the loop never blocks, cancellation is safe.

Runs under the anyio pytest plugin on asyncio (the backend AsyncEngine supports).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from corpora import FOUR_DOCS, MANY_DOCS, write_files
from ragindex import AsyncEngine, Engine, Settings
from ragindex.errors import InputError
from ragindex.threads import BatchingQueryEncoder, ThreadedEngine

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

# twelve generated notes, three chunks each: with batches of 8 an ingest runs several batches per stage
NOTES = dict(list(MANY_DOCS.items())[:12])
BATCH = 8

QUERIES = (
    "honeybee queen and drones",
    "how do plants make sugar from light",
    "TCP slow start congestion window",
    "sourdough starter wild yeast",
    "which insect lives in colonies",
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def corpus_files() -> dict[str, str]:
    return dict(FOUR_DOCS)


@pytest.fixture
async def aengine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    async with AsyncEngine(Settings(data_dir=tmp_path / "d", embed_batch_size=BATCH)) as engine:
        yield engine


async def eventually(condition: Callable[[], bool]) -> None:
    for _ in range(3000):  # 30 s
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")


def signature(hit: Any) -> tuple[str, float]:
    return hit.chunk_id, round(hit.score, 5)


# ---------------------------------------------------------------------------------------------- the API
def test_every_public_engine_method_is_a_coroutine_with_the_same_signature() -> None:
    # parts and pipeline objects are reached through `.engine` (they are built for the calling thread's use)
    through_engine = {"index", "dense", "chunker", "reranker", "indexer", "reconciler", "stop_requested"}
    renamed = {"close": "aclose"}
    sync_too = {"request_stop"}  # safe from anywhere, a signal handler included
    checked = []
    for name, member in inspect.getmembers(Engine):
        if name.startswith("_") or name in through_engine:
            continue
        mirror = getattr(AsyncEngine, renamed.get(name, name), None)
        assert mirror is not None, f"AsyncEngine lacks {name}"
        if isinstance(member, property):
            assert isinstance(mirror, property), name
            continue
        if name in renamed:
            assert inspect.iscoroutinefunction(mirror), name
            continue
        assert inspect.iscoroutinefunction(mirror) is (name not in sync_too), name
        assert inspect.signature(mirror) == inspect.signature(member), name
        checked.append(name)
    assert {"ingest", "search", "status", "verify", "repair", "delete_source", "reindex_into"} <= set(checked)


async def test_a_closed_engine_refuses_calls_and_closing_twice_is_fine(tmp_path: Path) -> None:
    engine = await AsyncEngine.open(Settings(data_dir=tmp_path / "d"), workers=2)
    assert isinstance(engine.engine, ThreadedEngine) and engine.workers == 2
    assert (await engine.status()).sets == ()
    await engine.aclose()
    await engine.aclose()
    with pytest.raises(InputError, match="closed"):
        await engine.status()
    with pytest.raises(InputError, match="not both"):
        AsyncEngine(Settings(data_dir=tmp_path / "e"), engine=engine.engine)
    with pytest.raises(InputError, match="at least 1"):
        AsyncEngine(Settings(data_dir=tmp_path / "e"), workers=0)


async def test_a_given_engine_is_left_open(tmp_path: Path, corpus: Path) -> None:
    with ThreadedEngine(Settings(data_dir=tmp_path / "d")) as sync:
        async with AsyncEngine(engine=sync) as engine:
            await engine.ingest([corpus])
        assert sync.status().sets[0].documents == {"SUCCESS": len(FOUR_DOCS)}  # still open


# ---------------------------------------------------------------------------------------------- search
async def test_fifty_concurrent_searches_return_what_sequential_ones_do(aengine: AsyncEngine, corpus: Path) -> None:
    report = await aengine.ingest([corpus])
    assert report.documents["added"] == len(FOUR_DOCS)
    cases = [(q, m) for q in QUERIES for m in ("hybrid", "dense", "bm25")]
    calls = [cases[i % len(cases)] for i in range(50)]

    sequential = [await aengine.search(q, user_id=1, set_id=1, mode=m) for q, m in calls]
    encoder = aengine.engine.dense
    assert isinstance(encoder, BatchingQueryEncoder)
    before = (encoder.batches, encoder.queries)
    concurrent = await asyncio.gather(*(aengine.search(q, user_id=1, set_id=1, mode=m) for q, m in calls))

    for (query, mode), one, many in zip(calls, sequential, concurrent, strict=True):
        assert one.hits, (query, mode)
        assert [signature(h) for h in many.hits] == [signature(h) for h in one.hits], (query, mode)
    batches, queries = encoder.batches - before[0], encoder.queries - before[1]
    assert queries == sum(1 for _, m in calls if m != "bm25")
    assert batches < queries  # concurrent queries were encoded together on the query thread


async def test_a_search_cancelled_mid_flight_raises_and_the_engine_stays_usable(
    aengine: AsyncEngine, corpus: Path
) -> None:
    await aengine.ingest([corpus])
    expected = await aengine.search(QUERIES[0], user_id=1, set_id=1)
    engine = aengine.engine
    assert isinstance(engine, ThreadedEngine)
    gate, holding = threading.Event(), threading.Event()

    def long_index_call() -> None:  # what an optimize() does to the index thread
        holding.set()
        gate.wait(60)

    blocker = engine.index_thread.submit(long_index_call)
    try:
        assert await asyncio.to_thread(holding.wait, 30)
        task = asyncio.create_task(aengine.search(QUERIES[0], user_id=1, set_id=1))
        await eventually(lambda: engine.index_thread.pending == 2)  # the search's thread waits for the index thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert engine.index_thread.pending == 2  # cancelled without waiting for its thread
    finally:
        gate.set()
    await asyncio.wrap_future(blocker)
    again = await aengine.search(QUERIES[0], user_id=1, set_id=1)
    assert [signature(h) for h in again.hits] == [signature(h) for h in expected.hits]


async def test_a_call_cancelled_while_waiting_for_a_thread_never_runs(tmp_path: Path, corpus: Path) -> None:
    async with AsyncEngine(Settings(data_dir=tmp_path / "d"), workers=1) as engine:
        await engine.ingest([corpus])
        doc_id = (await engine.search(QUERIES[0], user_id=1, set_id=1)).hits[0].doc_id
        gate = threading.Event()
        busy = asyncio.create_task(engine.run_sync(gate.wait, 60))  # the only worker is taken
        await asyncio.sleep(0.05)
        delete = asyncio.create_task(engine.delete_document(doc_id))
        await asyncio.sleep(0.05)
        delete.cancel()
        with pytest.raises(asyncio.CancelledError):
            await delete
        gate.set()
        assert await busy is True
        detail = await engine.document(doc_id)
        assert detail.document.lifecycle_status == "ACTIVE"


# ---------------------------------------------------------------------------------------------- ingest
async def test_the_event_loop_keeps_running_during_an_ingest(aengine: AsyncEngine, tmp_path: Path) -> None:
    corpus = write_files(tmp_path / "notes", NOTES)
    events: list[str] = []
    task = asyncio.create_task(aengine.ingest([corpus], progress=lambda event, _data: events.append(event)))
    seen: list[int] = []
    while not task.done():  # a heartbeat: each tick notes how far the ingest got
        seen.append(len(events))
        await asyncio.sleep(0.005)
    report = await task
    assert report.documents["added"] == len(NOTES)
    assert events.count("file") == len(NOTES) and "indexed" in events
    # the loop ticked all along: its ticks saw the ingest at many different points, not only before and after
    in_progress = {n for n in seen if 0 < n < len(events)}
    assert len(in_progress) >= 5, sorted(set(seen))


@pytest.mark.parametrize("heal", ["repair", "ingest"])
async def test_a_cancelled_ingest_stops_at_a_safe_point_and_is_healed(
    aengine: AsyncEngine, tmp_path: Path, heal: str
) -> None:
    corpus = write_files(tmp_path / "notes", NOTES)
    engine = aengine.engine
    loop = asyncio.get_running_loop()
    first_batch = asyncio.Event()

    def progress(event: str, _data: dict[str, Any]) -> None:
        if event != "indexed" or first_batch.is_set():
            return
        loop.call_soon_threadsafe(first_batch.set)
        deadline = time.monotonic() + 60
        while not engine.stop_requested and time.monotonic() < deadline:  # hold here until the task is cancelled
            time.sleep(0.01)

    task = asyncio.create_task(aengine.ingest([corpus], progress=progress, job_id="job-cancelled"))
    await first_batch.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    # stopped at a batch boundary: no claim held, its runs settled, the unfinished work left for later
    counts = (await aengine.status()).sets[0]
    assert all("INDEXING" not in by_status for by_status in counts.chunks.values()), counts
    assert counts.chunks["dense"].get("PENDING", 0) > 0, counts
    assert engine.store.runs(job_id="job-cancelled", status="PROCESSING") == []
    failed = [d for d in engine.store.list_documents() if d.status == "FAILED"]
    assert failed and all("cancelled by its caller" in (d.error or "") for d in failed)
    assert not (await aengine.verify()).ok

    if heal == "repair":
        assert (await aengine.repair()).ok
    else:
        report = await aengine.ingest([corpus])
        assert report.documents["added"] == 0  # nothing parsed again: the PENDING chunks were indexed
    assert (await aengine.verify()).ok
    docs = engine.store.list_documents()
    assert len(docs) == len(NOTES) and {d.status for d in docs} == {"SUCCESS"}
    hits = (await aengine.search("the violin and the orbit met near the glacier", user_id=1, set_id=1)).hits
    assert hits
