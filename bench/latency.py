"""(d) Query latency: the SciFact copy ingested by (a) (real vectors) and synthetic sets of 10k and 100k chunks."""

from __future__ import annotations

import json
import os
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
    """Latency p50/p95 per mode on the SciFact copy of (a) (real vectors) and synthetic sets of BENCH_QUERY_SIZES."""
    queries = queries_file()
    result: dict[str, Any] = {"sizes": {}}
    result["sizes"]["scifact"] = measure(ensure_ingested(), queries)
    sizes = [int(x) for x in os.environ.get("BENCH_QUERY_SIZES", "10000,100000").split(",") if x.strip()]
    for size in sizes:
        target, built = synthetic(size)
        result["sizes"][f"synthetic-{size}"] = {**measure(target, queries), "build": built}
    save_section("query", result)
    return result
