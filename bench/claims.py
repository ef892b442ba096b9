"""Claim throughput under contention: ``python -m bench.claims [--chunks N] [--workers W] [--batch B] [DIALECT ...]``.

W spawned processes drain N PENDING chunks (claim, then mark_success) from one truth store with
each approach: ``claim`` (``pending_chunks`` then the compare-and-set ``claim``, whose selections
overlap across workers) and ``claim_next`` (select and claim in one transaction: ``FOR UPDATE SKIP
LOCKED`` on PostgreSQL and MariaDB, ``BEGIN IMMEDIATE`` on SQLite). Dialects: sqlite, mysql,
postgres (servers at RAGINDEX_TEST_MYSQL / RAGINDEX_TEST_POSTGRES, defaults as in the tests); a
throw-away database is created and dropped for each. Prints one line per (dialect, approach).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import secrets
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from ragindex.store.sql import SqlTruthStore
from ragindex.testing.claims import drain_claims
from ragindex.testing.contracts.truth_store import ingest

MYSQL_SERVER = os.environ.get("RAGINDEX_TEST_MYSQL", "root@127.0.0.1:3306")
POSTGRES_SERVER = os.environ.get("RAGINDEX_TEST_POSTGRES", "postgres@127.0.0.1:5432")


def _drain(url: str, approach: str, batch: int, barrier: Any, results: Any) -> None:
    store = SqlTruthStore(url)
    barrier.wait()
    try:
        results.put(drain_claims(store, approach, batch))
    finally:
        store.close()


@contextmanager
def database(dialect: str) -> Iterator[str]:
    """A throw-away database URL of ``dialect``."""
    name = f"ragindex_bench_{secrets.token_hex(4)}"
    if dialect == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            yield f"sqlite:///{Path(tmp) / 'truth.db'}"
        return
    if dialect == "mysql":
        admin_url, url, drop = f"mysql+pymysql://{MYSQL_SERVER}/", f"mysql+pymysql://{MYSQL_SERVER}/{name}", ""
    else:
        admin_url = f"postgresql+psycopg://{POSTGRES_SERVER}/postgres"
        url, drop = f"postgresql+psycopg://{POSTGRES_SERVER}/{name}", " WITH (FORCE)"
    admin = create_engine(admin_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name}{drop}"))
        admin.dispose()


def bench(dialect: str, approach: str, chunks: int, workers: int, batch: int) -> str:
    """Drain ``chunks`` with ``workers`` processes; return the report line."""
    with database(dialect) as url:
        store = SqlTruthStore(url)
        per_doc = 50
        for d in range(0, chunks, per_doc):
            texts = [f"document {d} chunk {i}" for i in range(min(per_doc, chunks - d))]
            ingest(store, texts, source_uri=f"doc-{d}.txt", kinds=["dense"])
        ctx = multiprocessing.get_context("spawn")
        barrier, results = ctx.Barrier(workers), ctx.Queue()
        procs = [ctx.Process(target=_drain, args=(url, approach, batch, barrier, results)) for _ in range(workers)]
        for proc in procs:
            proc.start()
        reports = [results.get(timeout=600) for _ in procs]
        for proc in procs:
            proc.join()
        owned = Counter(cid for r in reports for cid in r["got"])
        assert len(owned) == chunks and max(owned.values()) == 1, "a chunk was lost or claimed twice"
        assert store.chunk_count_by_status("dense") == {"SUCCESS": chunks}
        store.close()
    elapsed = max(r["end"] for r in reports) - min(r["start"] for r in reports)
    claims = sum(r["claims"] for r in reports)
    return (
        f"{dialect:9s} {approach:10s} {chunks / elapsed:7.0f} chunks/s {claims / elapsed:6.0f} claims/s "
        f"({elapsed:.2f} s; {claims} claims, {sum(r['partial'] for r in reports)} partial, "
        f"{sum(r['empty'] for r in reports)} empty)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("dialects", nargs="*", default=["sqlite", "mysql", "postgres"])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=50)
    args = parser.parse_args()
    print(f"{args.workers} processes, {args.chunks:,} chunks, batches of {args.batch}")
    for dialect in args.dialects:
        for approach in ("claim", "claim_next"):
            print(bench(dialect, approach, args.chunks, args.workers, args.batch), flush=True)


if __name__ == "__main__":
    main()
