"""Claims under contention: four worker processes drain the same queue of PENDING chunks.

Each worker opens its own store on the same database and loops claim -> mark_success until
nothing is pending, with one of two approaches:

- ``claim``: ``pending_chunks(limit=50)`` then the compare-and-set ``claim()``; the selections of
  concurrent workers overlap, the CAS decides who owns what (partial or empty claims are normal);
- ``claim_next``: select and claim in one transaction (``FOR UPDATE SKIP LOCKED`` on PostgreSQL
  and MariaDB, ``BEGIN IMMEDIATE`` on SQLite), so concurrent workers take disjoint batches.

Whatever the approach, no chunk may be claimed twice and every chunk must end SUCCESS. The
throughput is printed (run with ``-s``); it is measured, never asserted. Also here: four
processes that open a new database at the same moment all succeed, each migration running once,
and four processes that cache the same vectors at the same moment all succeed.

The four processes are spawned once per module and reused (spawning costs more than the work).
"""

from __future__ import annotations

import multiprocessing
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ragindex.store.sql import SqlTruthStore
from ragindex.testing.claims import drain_claims

CHUNKS = 2000
DOCUMENTS = 40
WORKERS = 4
BATCH = 50
APPROACHES = ("claim", "claim_next")

pytestmark = pytest.mark.slow

_RESULTS: list[str] = []

Run = Callable[..., list[dict[str, Any]]]


# ---------------------------------------------------------------------- worker side (spawned processes)
def _open(url: str, barrier: Any) -> dict[str, Any]:
    """Open (and so migrate) the store at the same moment as the other workers."""
    barrier.wait(timeout=60)
    SqlTruthStore(url).close()
    return {}


def _drain(url: str, approach: str, barrier: Any) -> dict[str, Any]:
    """Claim and finish batches until nothing is claimable; report what this worker owned."""
    store = SqlTruthStore(url)
    barrier.wait(timeout=60)
    try:
        return drain_claims(store, approach, BATCH)
    finally:
        store.close()


def _cache(url: str, barrier: Any) -> dict[str, Any]:
    """Cache the same vectors as the other workers, at the same moment, batch after batch."""
    import numpy as np

    store = SqlTruthStore(url)
    barrier.wait(timeout=60)
    for batch in range(10):
        store.cache_vectors("model", {f"{batch}-{i}": np.full(8, i, dtype=np.float32) for i in range(100)})
    store.close()
    return {}


_TASKS: dict[str, Callable[..., dict[str, Any]]] = {"open": _open, "drain": _drain, "cache": _cache}


def _serve(tasks: Any, barrier: Any, results: Any) -> None:
    """Worker process main loop: run tasks until ``None``; every task waits for all workers at the barrier."""
    while (task := tasks.get()) is not None:
        name, args = task
        try:
            results.put(_TASKS[name](*args, barrier))
        except BaseException:
            results.put({"error": traceback.format_exc()})


# ---------------------------------------------------------------------- test side
@pytest.fixture(scope="module")
def run_workers() -> Iterator[Run]:
    """Four spawned worker processes; ``run_workers(task, *args)`` runs a task on all four at once."""
    ctx = multiprocessing.get_context("spawn")
    tasks, results, barrier = ctx.Queue(), ctx.Queue(), ctx.Barrier(WORKERS)
    workers = [ctx.Process(target=_serve, args=(tasks, barrier, results), daemon=True) for _ in range(WORKERS)]
    for worker in workers:
        worker.start()

    def run(name: str, *args: Any) -> list[dict[str, Any]]:
        barrier.reset()
        for _ in workers:
            tasks.put((name, args))
        reports: list[dict[str, Any]] = [results.get(timeout=120) for _ in workers]
        errors = [r["error"] for r in reports if "error" in r]
        assert not errors, "\n".join(errors)
        return reports

    try:
        yield run
    finally:
        for _ in workers:
            tasks.put(None)
        for worker in workers:
            worker.join(timeout=10)
            if worker.is_alive():
                worker.kill()
                worker.join()
        if _RESULTS:
            print(f"\nclaims under contention ({WORKERS} processes, {CHUNKS:,} chunks, batches of {BATCH}):")
            for line in _RESULTS:
                print("  " + line)


DIALECTS = [
    "sqlite",
    pytest.param("mysql", marks=pytest.mark.mysql),
    pytest.param("postgres", marks=pytest.mark.postgres),
]


@pytest.fixture(params=DIALECTS)
def url(request: pytest.FixtureRequest) -> str:
    """An empty, migrated database of each dialect."""
    name = {"sqlite": "sqlite_url", "mysql": "empty_mysql_url", "postgres": "empty_postgres_url"}[request.param]
    return str(request.getfixturevalue(name))


@pytest.fixture(params=DIALECTS)
def bare_url(request: pytest.FixtureRequest) -> str:
    """A database of each dialect without any truth store table."""
    name = {"sqlite": "sqlite_url", "mysql": "bare_mysql_url", "postgres": "bare_postgres_url"}[request.param]
    return str(request.getfixturevalue(name))


def test_processes_opening_a_new_database_together_all_succeed(run_workers: Run, bare_url: str) -> None:
    from sqlalchemy import select

    from ragindex.store import schema
    from ragindex.store.migrations import MIGRATIONS

    run_workers("open", bare_url)
    store = SqlTruthStore(bare_url)
    try:
        with store.engine.connect() as conn:
            names = [r[0] for r in conn.execute(select(schema.schema_migrations.c.name))]
        assert sorted(names) == sorted(name for name, _ in MIGRATIONS)
    finally:
        store.close()


def test_processes_caching_the_same_vectors_together_all_succeed(run_workers: Run, url: str) -> None:
    run_workers("cache", url)
    store = SqlTruthStore(url)
    try:
        cached = store.cached_vectors("model", [f"{b}-{i}" for b in range(10) for i in range(100)])
        assert len(cached) == 1000
        assert cached["3-7"].tolist() == [7.0] * 8
    finally:
        store.close()


@pytest.mark.parametrize("approach", APPROACHES)
def test_workers_never_share_a_chunk_and_drain_the_queue(run_workers: Run, url: str, approach: str) -> None:
    from ragindex.testing.contracts.truth_store import ingest

    store = SqlTruthStore(url)  # migrates before the workers start
    try:
        per_doc = CHUNKS // DOCUMENTS
        for d in range(DOCUMENTS):
            texts = [f"document {d} chunk {i}" for i in range(per_doc)]
            ingest(store, texts, source_uri=f"doc-{d}.txt", kinds=["dense"])
        all_ids = set(store.all_active_chunk_ids())
        assert len(all_ids) == CHUNKS

        reports = run_workers("drain", url, approach)
        owned = Counter(cid for r in reports for cid in r["got"])
        twice = [cid for cid, n in owned.items() if n > 1]
        assert not twice, f"{len(twice)} chunks were claimed by two workers, e.g. {twice[:3]}"
        assert set(owned) == all_ids, f"{len(all_ids - set(owned))} chunks were never claimed"
        assert store.chunk_count_by_status("dense") == {"SUCCESS": CHUNKS}
        partial = sum(r["partial"] for r in reports)
        if approach == "claim_next":
            assert partial == 0, "claim_next selects and claims under one lock: its claims are complete"

        elapsed = max(r["end"] for r in reports) - min(r["start"] for r in reports)
        claims = sum(r["claims"] for r in reports)
        empty = sum(r["empty"] for r in reports)
        per_worker = "/".join(str(len(r["got"])) for r in reports)
        _RESULTS.append(
            f"{store.engine.dialect.name:10s} {approach:10s} {CHUNKS / elapsed:6.0f} chunks/s "
            f"{claims / elapsed:5.0f} claims/s  ({elapsed:.2f} s, {claims} claims, {partial} partial, "
            f"{empty} empty; chunks per worker {per_worker})"
        )
    finally:
        store.close()
