"""(k) The read path's CPU per search, in process: everything a search does but the query encode.

``python -m bench.run read-path``. The SciFact copy of (a) is searched by ``Engine.search`` (hybrid, top 10, the
settings' defaults) in a child process, query vectors cached (a first pass over the queries fills the engine's
query cache, so the timed passes run the index search, fusion, backfill and hits, not the ONNX encode). The figure
is the process's CPU time per search (``time.process_time``: every thread, so robust to a loaded machine) over
``BENCH_READ_PATH_ROUNDS`` passes of ``BENCH_READ_PATH_QUERIES`` queries. With ``BENCH_BASELINE_SRC`` set to
another checkout's ``src``, the same child runs that code too, alternating with this checkout's: a before/after
of one run under one load. The target (issue 27): at most 5 ms of CPU a search.

Child entry point: ``python -m bench.read_path measure DATA_DIR QUERIES.json ROUNDS`` prints one JSON object.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR, ROOT, SCIFACT, env_int, run_proc, save_section
from bench.ingest import ensure_ingested

TARGET_MS = 5.0


def measure(data_dir: str, queries_file: str, rounds: int) -> dict[str, Any]:
    """CPU and wall time per hybrid search over ``rounds`` passes, after one pass that caches the query vectors."""
    from ragindex.config.settings import Settings
    from ragindex.engine import Engine

    queries = json.loads(Path(queries_file).read_text())
    with Engine(Settings(data_dir=Path(data_dir))) as engine:
        for text in queries:  # loads the model, opens the shards, caches every query vector
            engine.search(text, user_id=1, set_id=1, mode="hybrid", top_k=10)
        walls: list[float] = []
        cpu0 = time.process_time()
        for _ in range(rounds):
            for text in queries:
                started = time.perf_counter()
                engine.search(text, user_id=1, set_id=1, mode="hybrid", top_k=10)
                walls.append((time.perf_counter() - started) * 1000)
        cpu = time.process_time() - cpu0
    return {
        "searches": len(walls),
        "cpu_ms_per_search": cpu * 1000 / len(walls),
        "wall_ms_p50": statistics.median(walls),
        "wall_ms_mean": statistics.fmean(walls),
    }


def _variants() -> dict[str, dict[str, str]]:
    variants = {"ragindex": {"PYTHONPATH": str(ROOT / "src")}}
    baseline = os.environ.get("BENCH_BASELINE_SRC")
    if baseline:
        variants["baseline"] = {"PYTHONPATH": baseline}
    return variants


def bench_read_path() -> dict[str, Any]:
    """This checkout (and the baseline's) in alternating child processes; medians of the per-run CPU figures."""
    target = ensure_ingested()
    count = env_int("BENCH_READ_PATH_QUERIES", 100)
    rounds = env_int("BENCH_READ_PATH_ROUNDS", 5)
    runs = env_int("BENCH_READ_PATH_RUNS", 3)
    lines = (SCIFACT / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    queries = BENCH_DIR / "read-path-queries.json"
    queries.write_text(json.dumps([json.loads(line)["text"] for line in lines if line.strip()][:count]))
    variants = _variants()
    per_run: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    loads = [os.getloadavg()[0]]
    for _ in range(runs):
        for name, env in variants.items():
            args = [sys.executable, "-m", "bench.read_path", "measure", str(target), str(queries), str(rounds)]
            per_run[name].append(run_proc(args, env=env, cwd=ROOT).json())
            loads.append(os.getloadavg()[0])
    result: dict[str, Any] = {
        "queries": count,
        "rounds": rounds,
        "runs": runs,
        "cpu_ms_per_search": {n: statistics.median(r["cpu_ms_per_search"] for r in rs) for n, rs in per_run.items()},
        "cpu_ms_min": {n: min(r["cpu_ms_per_search"] for r in rs) for n, rs in per_run.items()},
        "wall_ms_p50": {n: statistics.median(r["wall_ms_p50"] for r in rs) for n, rs in per_run.items()},
        "per_run": per_run,
        "target_ms": TARGET_MS,
        "load_1min": {"min": min(loads), "max": max(loads)},
        "data_dir": str(target),
        "command": f"python -m bench.read_path measure {target} {queries} {rounds}",
    }
    save_section("read-path", result)
    return result


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] != "measure":
        sys.stderr.write(__doc__ or "")
        raise SystemExit(2)
    sys.stdout.write(json.dumps(measure(sys.argv[2], sys.argv[3], int(sys.argv[4]))) + "\n")
