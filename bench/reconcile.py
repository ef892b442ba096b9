"""What a reconciler pass costs the database: ``python -m bench.reconcile [--chunks N] [--failed F] [DIALECT ...]``.

A throw-away truth store per dialect (sqlite, mysql, postgres; servers as in ``bench.claims``) gets N chunks in
documents of 1,000, every dense copy SUCCESS except F FAILED ones (attempts 1, failed just now). Then, median of
5 runs each: an idle pass (the lock, release, purge, the retry scan finding nothing due yet, finish, the totals;
no index is attached, so nothing is written to one), and the retry scan once the F chunks are due. Prints one line
per dialect.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import timedelta

from bench.claims import database
from ragindex.clock import utcnow
from ragindex.pipeline.reconcile import ReconcilePolicy, Reconciler
from ragindex.store.sql import SqlTruthStore
from ragindex.testing.contracts.truth_store import ingest


def _median_ms(fn: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _fill(store: SqlTruthStore, chunks: int, failed: int) -> None:
    ids: list[str] = []
    for doc in range(0, chunks, 1000):
        texts = [f"chunk {i}" for i in range(doc, min(doc + 1000, chunks))]
        ids += ingest(store, texts, source_uri=f"doc{doc}.txt", kinds=("dense",))[1]
    ok, bad = ids[failed:], ids[:failed]
    for start in range(0, len(ok), 1000):
        store.mark_success(store.claim("dense", ok[start : start + 1000]))
    for start in range(0, len(bad), 1000):
        part = bad[start : start + 1000]
        store.mark_failed(store.claim("dense", part), part, "bench")


def bench(dialect: str, chunks: int, failed: int) -> str:
    """One dialect's line."""
    with database(dialect) as url:
        store = SqlTruthStore(url)
        try:
            _fill(store, chunks, failed)
            policy = ReconcilePolicy()
            reconciler = Reconciler(store, lambda: None, ("dense",), policy, owner="bench")
            idle = _median_ms(reconciler.run_pass)
            later = utcnow() + timedelta(days=1)
            found: list[str] = []
            due = _median_ms(lambda: found.extend(store.due_retries(("dense",), policy.delays(), now=later)))
            assert len(found) == 5 * failed, len(found)
        finally:
            store.close()
    return f"{dialect:8s} chunks={chunks} failed={failed}: idle pass {idle:.1f} ms, retry scan, all due: {due:.1f} ms"


def main() -> None:
    """Parse the arguments and print one line per dialect."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--failed", type=int, default=1_000)
    parser.add_argument("dialects", nargs="*", default=["sqlite", "mysql", "postgres"])
    args = parser.parse_args()
    for dialect in args.dialects:
        print(bench(dialect, args.chunks, args.failed), flush=True)


if __name__ == "__main__":
    main()
