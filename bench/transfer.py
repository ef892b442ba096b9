"""Export and import (issue 29, section (i)): an export of ~100k chunks, its import into PostgreSQL + qdrant local.

Child process entry points (each prints one JSON object):

* ``python -m bench.transfer build DATA_DIR CHUNKS`` -- SciFact's records (title + text) upserted again and again
  under new keys (``<copy>-<id>``) until about CHUNKS chunks, on SQLite + Edge, with the dense model swapped for
  random unit vectors cached under the real model's cache key (100k real embeddings take ~20 minutes here; the
  export and the import only move the vectors, whatever made them).
* ``python -m bench.transfer export DATA_DIR ARCHIVE`` -- ``export_archive`` of everything: seconds, chunks/s, peak RSS.
* ``python -m bench.transfer import ARCHIVE DATABASE_URL QDRANT_PATH`` -- ``Importer`` into PostgreSQL + qdrant-client
  local: seconds per stage, vectors embedded (the target's encoder is the real model: it would have to load and
  encode for any vector the cache did not answer).
* ``python -m bench.transfer cold DATA_DIR RECORDS`` -- the cold-ingest reference: the first RECORDS SciFact records
  upserted with the real model, process start and model load included; its chunks/s prices a cold ingest of the
  exported corpus.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.query import RandomUnitEncoder

_CHUNKS_PER_RECORD = 24_209 / 5_183  # SciFact with the default chunker (docs/evaluation.md)


class CachedRandomEncoder(RandomUnitEncoder):
    """Random unit vectors cached under the real model's own cache key (bench data dirs only)."""

    @property
    def cache_key(self) -> str:
        return str(self._real.cache_key)


def _scifact() -> Iterator[dict[str, str]]:
    from bench.common import SCIFACT

    with (SCIFACT / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            yield {"id": str(record["_id"]), "text": f"{record.get('title', '')}\n\n{record.get('text', '')}".strip()}


def build(data_dir: str, chunks: str) -> None:
    from bench.common import vm_hwm_mb
    from ragindex.config.settings import Settings
    from ragindex.engine import Engine
    from ragindex.records import Record

    wanted = math.ceil(int(chunks) / _CHUNKS_PER_RECORD)
    corpus = list(_scifact())
    started = time.perf_counter()
    with Engine(Settings(data_dir=Path(data_dir))) as engine:
        engine._dense = CachedRandomEncoder(engine.dense)  # type: ignore[assignment]
        batch: list[Record] = []
        for n in range(wanted):
            doc = corpus[n % len(corpus)]
            batch.append(Record(key=f"{n // len(corpus)}-{doc['id']}", text=doc["text"]))
            if len(batch) == 500:
                engine.upsert(batch)
                batch = []
        if batch:
            engine.upsert(batch)
        status = engine.status().to_dict()
    out = {"records": wanted, "build_s": time.perf_counter() - started, "peak_rss_mb": vm_hwm_mb(), "status": status}
    sys.stdout.write(json.dumps(out, default=str) + "\n")


def export(data_dir: str, archive: str) -> None:
    from bench.common import vm_hwm_mb
    from ragindex.config.settings import Settings
    from ragindex.engine import Engine
    from ragindex.store.records import TransferScope
    from ragindex.transfer.export import export_archive

    with Engine(Settings(data_dir=Path(data_dir))) as engine:
        started = time.perf_counter()
        report = export_archive(engine.store, Path(archive), TransferScope())
        seconds = time.perf_counter() - started
    out = {
        "chunks": report.chunks,
        "rows": report.counts,
        "bytes": report.bytes,
        "export_s": seconds,
        "chunks_per_s": report.chunks / seconds,
        "peak_rss_mb": vm_hwm_mb(),
    }
    sys.stdout.write(json.dumps(out) + "\n")


def import_(archive: str, database_url: str, qdrant_path: str) -> None:
    from bench.common import vm_hwm_mb
    from ragindex.config.settings import Settings
    from ragindex.engine import Engine
    from ragindex.transfer.importer import Importer

    settings = Settings(
        data_dir=Path(archive).parent / "import-data",
        database_url=database_url,
        index_backend="qdrant",
        qdrant_path=Path(qdrant_path),
    )
    with Engine(settings) as engine:
        started = time.perf_counter()
        report = Importer(engine, Path(archive)).run()
        seconds = time.perf_counter() - started
        model_loaded = engine._dense is not None and getattr(engine._dense, "_model", None) is not None
    out = {**report.to_dict(), "import_s": seconds, "model_loaded": model_loaded, "peak_rss_mb": vm_hwm_mb()}
    sys.stdout.write(json.dumps(out) + "\n")


def cold(data_dir: str, records: str) -> None:
    from bench.common import vm_hwm_mb
    from ragindex.config.settings import Settings
    from ragindex.engine import Engine
    from ragindex.records import Record

    started = time.perf_counter()
    corpus = list(_scifact())[: int(records)]
    with Engine(Settings(data_dir=Path(data_dir))) as engine:
        reports = [
            engine.upsert([Record(key=d["id"], text=d["text"]) for d in corpus[i : i + 500]])
            for i in range(0, len(corpus), 500)
        ]
        chunks = sum(int(r.to_dict()["chunks"]["total"]) for r in reports)
    seconds = time.perf_counter() - started
    out = {"records": len(corpus), "chunks": chunks, "cold_s": seconds, "chunks_per_s": chunks / seconds}
    sys.stdout.write(json.dumps({**out, "peak_rss_mb": vm_hwm_mb()}) + "\n")


def _postgres_database() -> tuple[str, Any]:
    """A fresh PostgreSQL database (``BENCH_POSTGRES``, default the local test server) and its drop function."""
    import os
    import secrets

    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    server = os.environ.get("BENCH_POSTGRES", "postgres@127.0.0.1:5432")
    admin = create_engine(f"postgresql+psycopg://{server}/postgres", poolclass=NullPool, isolation_level="AUTOCOMMIT")
    name = f"ragindex_bench_{secrets.token_hex(4)}"
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()

    return f"postgresql+psycopg://{server}/{name}", drop


def bench_transfer() -> dict[str, Any]:
    """Section (i): build (once), export, import into PostgreSQL + qdrant local, the cold-ingest reference."""
    import os
    import shutil

    from bench.common import BENCH_DIR, env_int, python_module, save_section

    chunks = env_int("BENCH_EXPORT_CHUNKS", 100_000)
    root = BENCH_DIR / f"transfer-{chunks}"
    source = root / "source"
    result: dict[str, Any] = {"requested_chunks": chunks}
    marker = root / "build.json"
    if not marker.is_file():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        proc = python_module("bench.transfer", "build", str(source), str(chunks))
        marker.write_text(json.dumps(proc.json()))
    result["build"] = {k: v for k, v in json.loads(marker.read_text()).items() if k != "status"}
    archive = root / "all.ragindex"
    proc = python_module("bench.transfer", "export", str(source), str(archive))
    result["export"] = {**proc.json(), "wall_s": proc.wall_s, "process_peak_rss_mb": proc.peak_rss_mb}
    result["export"]["command"] = f"python -m bench.transfer export {source} {archive}"
    url, drop = _postgres_database()
    # qdrant-client's on-disk local mode commits one SQLite transaction per point (27 ms each under load here):
    # in memory by default, BENCH_EXPORT_QDRANT=disk for its directory
    qdrant = root / "qdrant" if os.environ.get("BENCH_EXPORT_QDRANT") == "disk" else Path(":memory:")
    shutil.rmtree(root / "qdrant", ignore_errors=True)
    shutil.rmtree(root / "import-data", ignore_errors=True)
    try:
        proc = python_module("bench.transfer", "import", str(archive), url, str(qdrant))
        result["import"] = {**proc.json(), "wall_s": proc.wall_s, "process_peak_rss_mb": proc.peak_rss_mb}
    finally:
        drop()
    result["import"]["qdrant"] = str(qdrant)
    result["import"]["command"] = f"python -m bench.transfer import {archive} postgresql+psycopg://.../fresh {qdrant}"
    records = env_int("BENCH_EXPORT_COLD_RECORDS", 200)
    cold_dir = root / "cold"
    shutil.rmtree(cold_dir, ignore_errors=True)
    proc = python_module("bench.transfer", "cold", str(cold_dir), str(records))
    result["cold"] = {**proc.json(), "command": f"python -m bench.transfer cold {cold_dir} {records}"}
    exported = result["export"]["chunks"]
    result["cold_estimate_s"] = exported / result["cold"]["chunks_per_s"]
    result["import_vs_cold"] = result["import"]["wall_s"] / result["cold_estimate_s"]
    save_section("export", result)
    return result


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    entry: dict[str, Any] = {"build": build, "export": export, "import": import_, "cold": cold}
    entry[command](*args)
