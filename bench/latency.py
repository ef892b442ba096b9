"""(d) Query latency at two index sizes: SciFact as ingested by (a) (~10k real chunks) and a synthetic set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR, SCIFACT, env_int, python_module, save_section
from bench.ingest import ensure_ingested


def queries_file() -> Path:
    from ragindex.eval.beir import load_dataset

    path = BENCH_DIR / "queries.json"
    limit = env_int("BENCH_QUERIES", 300)
    path.write_text(json.dumps(list(load_dataset(SCIFACT).queries.values())[:limit]))
    return path


def measure(data_dir: Path, queries: Path) -> dict[str, Any]:
    proc = python_module("bench.query", "measure", str(data_dir), "1", "1", str(queries))
    out: dict[str, Any] = proc.json()
    out["command"] = f"python -m bench.query measure {data_dir} 1 1 {queries}"
    return out


def synthetic(count: int) -> tuple[Path, dict[str, Any] | None]:
    target = BENCH_DIR / f"query-synthetic-{count}"
    marker = target / ".bench-build.json"
    if marker.is_file():
        return target, json.loads(marker.read_text())
    import shutil

    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    proc = python_module("bench.query", "build", str(target), str(count))
    built: dict[str, Any] = proc.json()
    built["wall_s"] = proc.wall_s
    built["command"] = f"python -m bench.query build {target} {count}"
    marker.write_text(json.dumps(built))
    return target, built


def bench_query() -> dict[str, Any]:
    """Latency p50/p95 per mode at SciFact size (real vectors) and at BENCH_QUERY_CHUNKS_LARGE (synthetic)."""
    queries = queries_file()
    result: dict[str, Any] = {"sizes": {}}
    result["sizes"]["scifact"] = measure(ensure_ingested(), queries)
    large = env_int("BENCH_QUERY_CHUNKS_LARGE", 100_000)
    if large > 0:
        target, built = synthetic(large)
        result["sizes"][f"synthetic-{large}"] = {**measure(target, queries), "build": built}
    save_section("query", result)
    return result
