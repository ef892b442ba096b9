"""Searches/s of ``ragindex serve`` on a data dir already ingested, with the CPU a search of each server process.

``python -m bench.serve_load DATA_DIR [--seconds 20] [--clients 8,32] [--mode vector|hybrid|dense|bm25]``

The light load client of the peers run (:mod:`bench.http_load`, ~0.1 ms of CPU a request, so the server has the
cores) sends SciFact queries: their float32 MiniLM vectors with ``--mode vector`` (computed once, before the server
starts), else their texts. For each client count it prints searches/s, p50 and p99, the machine's idle share, and
the CPU milliseconds a search of the service process and of each search process (from ``/proc``). Used for A/B
runs of one change (docs/service.md, "Reads off the index thread"): run it alternately on both sides.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import SCIFACT, cpu_seconds
from bench.http_load import load
from bench.peers import RAGINDEX_BIN, _client_model, _free_port, _stop
from ragindex.testing.processes import descendants


def _cpu_s(pid: int) -> float:
    """:func:`bench.common.cpu_seconds`, 0 for a process that has ended."""
    try:
        return cpu_seconds(pid)
    except OSError:
        return 0.0


def _idle() -> tuple[int, int]:
    """The machine's idle and total jiffies so far."""
    counts = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return counts[3] + counts[4], sum(counts)


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def _bodies(mode: str, queries: list[str]) -> list[dict[str, Any]]:
    if mode != "vector":
        return [{"query": q, "set_id": 1, "top_k": 10, "mode": mode} for q in queries]
    vectors = _client_model().encode(queries, normalize_embeddings=True, show_progress_bar=False)
    return [{"vector": v.tolist(), "set_id": 1, "top_k": 10, "mode": "dense"} for v in vectors]


def run(data_dir: str, seconds: float, clients: list[int], mode: str) -> list[dict[str, Any]]:
    """Serve ``data_dir`` and load it once per client count; the figures of each step."""
    lines = (SCIFACT / "queries.jsonl").read_text().splitlines()[:300]
    bodies = _bodies(mode, [json.loads(line)["text"] for line in lines])
    created = subprocess.run(
        [*RAGINDEX_BIN, "--data-dir", data_dir, "keys", "create", "--user-id", "1", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    headers = {"Authorization": f"Bearer {json.loads(created.stdout)['key']}"}
    port = _free_port()
    cmd = [*RAGINDEX_BIN, "--data-dir", data_dir, "serve", "--port", str(port), "--log-level", "warning"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    steps: list[dict[str, Any]] = []
    try:
        deadline = time.monotonic() + 300
        while not _ready(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"ragindex serve did not get ready (exit {proc.poll()})")
            time.sleep(0.3)
        url = f"http://127.0.0.1:{port}/v1/search"
        asyncio.run(load(url, headers, bodies[:8], 4, 3))  # warm up
        for count in clients:
            pids = [proc.pid, *descendants(proc.pid)]
            before, idle_before, load_avg = {p: _cpu_s(p) for p in pids}, _idle(), os.getloadavg()[0]
            step = asyncio.run(load(url, headers, bodies, count, seconds))
            idle_after, searches = _idle(), step["searches_per_s"] * seconds
            step["cpu_ms_a_search"] = {
                ("service" if p == proc.pid else f"search process {p}"): round(
                    (_cpu_s(p) - before[p]) * 1000 / searches, 2
                )
                for p in pids
                if _cpu_s(p) > before[p]
            }
            step["machine_idle"] = round((idle_after[0] - idle_before[0]) / (idle_after[1] - idle_before[1]), 3)
            step["load_average"] = load_avg
            steps.append(step)
            cpu = step["cpu_ms_a_search"]
            print(
                f"{count} clients: {step['searches_per_s']:.1f} searches/s, p50 {step['p50_ms']:.0f} ms, "
                f"p99 {step['p99_ms']:.0f} ms, errors {step['errors']}; CPU ms a search {cpu} "
                f"({sum(cpu.values()):.2f} in all); machine idle {step['machine_idle']:.0%}, load {load_avg:.1f}",
                flush=True,
            )
    finally:
        _stop(proc)
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", help="A data dir already ingested (set 1 of user 1), e.g. by `ragindex ingest`")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clients", default="8,32", help="Client counts, comma-separated")
    parser.add_argument("--mode", choices=["vector", "hybrid", "dense", "bm25"], default="vector")
    args = parser.parse_args()
    if not Path(args.data_dir).is_dir():
        sys.exit(f"no data dir at {args.data_dir}: ingest first (`ragindex --data-dir DIR ingest FILES`)")
    run(args.data_dir, args.seconds, [int(c) for c in args.clients.split(",")], args.mode)


if __name__ == "__main__":
    main()
