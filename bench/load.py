"""Load test of the HTTP service: ``python -m bench.load [--seconds 60] [--clients 32] [--max-uploads 6]``.

Starts ``ragindex serve`` on a free loopback port in a child process over a scratch data dir,
ingests a small SciFact corpus through the API, then runs C concurrent clients for S seconds. Each
client loops: mostly ``POST /v1/search`` with SciFact queries, and now and then (bounded by
``--max-uploads``, one upload in flight at a time) an upload of new records, each of which runs an
ingest job. Searches go over the light keep-alive connections of :mod:`bench.http_load` (~0.1 ms of
CPU a request): one ``httpx.AsyncClient`` took ~0.3-0.4 of the machine's two cores and stalled all its
requests at once when starved of CPU, so the tails were partly its own (docs/service.md, "Reads off the
index thread"); ``--httpx-searches`` sends them through httpx as before. Uploads always use httpx.
Reports throughput, latency percentiles per request type, errors, and search latency while an ingest
job was running vs while none was. Loopback only; the server process is stopped at the end. The
server's CPU includes its search processes (``RAGINDEX_SEARCH_PROCESSES``); ``--data-dir`` keeps the
data dir (its corpus ingested once) for A/B runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson

from bench.common import cpu_seconds
from bench.http_load import Connection, json_post
from ragindex.testing.processes import descendants

SCIFACT = Path(os.environ.get("BENCH_SCIFACT", "/work/shared/data/beir/scifact"))
RAGINDEX = [sys.executable, "-c", "from ragindex.cli import main; main()"]


@dataclass
class Sample:
    kind: str
    started: float  # time.time()
    seconds: float
    status: int
    server_ms: dict[str, float] | None = None  # a search's latency_ms as the server reports it


@dataclass
class Run:
    samples: list[Sample] = field(default_factory=list)
    server_ms: list[dict[str, float]] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    jobs: list[str] = field(default_factory=list)
    uploads_left: int = 0
    upload_in_flight: bool = False


def _tree_cpu_seconds(pid: int) -> float:
    """CPU of the descendants of ``pid`` (not its own)."""
    total = 0.0
    for kid in descendants(pid):
        try:
            total += cpu_seconds(kid)
        except OSError:  # ended meanwhile
            continue
    return total


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _records(start: int, count: int) -> bytes:
    lines = (SCIFACT / "corpus.jsonl").read_text().splitlines()[start : start + count]
    return ("\n".join(lines) + "\n").encode()


def _queries() -> list[str]:
    return [json.loads(line)["text"] for line in (SCIFACT / "queries.jsonl").read_text().splitlines()]


def _create_key(data_dir: Path) -> str:
    out = subprocess.run(
        [*RAGINDEX, "--data-dir", str(data_dir), "keys", "create", "--user-id", "1", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    return str(json.loads(out.stdout)["key"])


def _start_server(data_dir: Path, port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    cmd = [*RAGINDEX, "--data-dir", str(data_dir), "serve", "--port", str(port)]
    return subprocess.Popen([*cmd, "--log-level", "warning"], env=env)


async def _wait_ready(client: httpx.AsyncClient, proc: subprocess.Popen[bytes], limit_s: float = 300) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < limit_s:
        if proc.poll() is not None:
            raise SystemExit(f"the service exited with {proc.returncode}")
        try:
            if (await client.get("/readyz")).status_code == 200:
                return time.perf_counter() - started
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.2)
    raise SystemExit("the service did not become ready")


async def _wait_job(client: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    while True:
        body: dict[str, Any] = (await client.get(f"/v1/jobs/{job_id}")).json()
        if body["status"] in ("succeeded", "failed"):
            return body
        await asyncio.sleep(0.25)


async def _upload(client: httpx.AsyncClient, name: str, data: bytes) -> httpx.Response:
    return await client.post("/v1/sets/1/documents", files=[("files", (name, data))])


async def _search(
    client: httpx.AsyncClient, light: Connection | None, body: dict[str, Any]
) -> tuple[int, dict[str, float] | None]:
    """POST one search (through ``light`` unless it is None); its status and the server's ``latency_ms``."""
    if light is None:
        response = await client.post("/v1/search", json=body)
        ok = response.status_code == 200
        return response.status_code, response.json()["latency_ms"] if ok else None
    url = f"{client.base_url}".rstrip("/") + "/v1/search"
    headers = {"Authorization": client.headers["Authorization"]}
    try:
        status, data = await light.exchange(json_post(url, headers, body))
    except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
        light.close()
        raise httpx.TransportError(f"{type(exc).__name__}: {exc}") from exc
    return status, orjson.loads(data)["latency_ms"] if status == 200 else None


async def _client_loop(
    client: httpx.AsyncClient, run: Run, rng: random.Random, queries: list[str], deadline: float, args: Any
) -> None:
    light = None if args.httpx_searches else Connection(client.base_url.host, client.base_url.port or 80)
    try:
        await _client_requests(client, light, run, rng, queries, deadline, args)
    finally:
        if light is not None:
            light.close()


async def _client_requests(
    client: httpx.AsyncClient,
    light: Connection | None,
    run: Run,
    rng: random.Random,
    queries: list[str],
    deadline: float,
    args: Any,
) -> None:
    next_record = args.corpus
    while time.perf_counter() < deadline:
        kind = "search"
        if run.uploads_left > 0 and not run.upload_in_flight and rng.random() < args.upload_rate:
            kind = "upload"
            run.uploads_left -= 1
            run.upload_in_flight = True
        started_wall, started = time.time(), time.perf_counter()
        server_ms = None
        try:
            if kind == "search":
                body = {"query": rng.choice(queries), "set_id": 1, "top_k": 10, "mode": args.mode}
                status, server_ms = await _search(client, light, body)
                if server_ms is not None:
                    run.server_ms.append(server_ms)
            else:
                start = next_record + (args.max_uploads - run.uploads_left - 1) * args.upload_records
                response = await _upload(client, f"batch-{start}.jsonl", _records(start, args.upload_records))
                if response.status_code == 202:
                    run.jobs.append(response.json()["job_id"])
                status = response.status_code
        except httpx.HTTPError as exc:
            status = 0
            run.errors[f"{kind}:{type(exc).__name__}"] = run.errors.get(f"{kind}:{type(exc).__name__}", 0) + 1
        finally:
            if kind == "upload":
                run.upload_in_flight = False
        run.samples.append(Sample(kind, started_wall, time.perf_counter() - started, status, server_ms))
        if status and status >= 400:
            run.errors[f"{kind}:{status}"] = run.errors.get(f"{kind}:{status}", 0) + 1


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] * 1000


def _line(label: str, values: list[float], seconds: float) -> str:
    if not values:
        return f"| {label} | 0 | - | - | - | - | - |"
    return (
        f"| {label} | {len(values)} | {len(values) / seconds:.1f} | {_pct(values, 50):.1f} | {_pct(values, 95):.1f} "
        f"| {_pct(values, 99):.1f} | {max(values) * 1000:.1f} |"
    )


def _utc(ts: str | None) -> float | None:
    return datetime.fromisoformat(ts).replace(tzinfo=UTC).timestamp() if ts else None


async def main_async(args: Any) -> dict[str, Any]:
    # --data-dir: kept between runs, its corpus ingested once (A/B runs of two builds over the same data)
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="ragindex-load-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    marker = data_dir / ".bench-load-corpus"
    port = _free_port()
    key = _create_key(data_dir)
    # loopback only: /metrics without an admin key (it needs one by default)
    env = {**os.environ, "RAGINDEX_OPTIMIZE_MIN_POINTS": "0", "RAGINDEX_METRICS_PUBLIC": "true"}
    proc = _start_server(data_dir, port, env)
    limits = httpx.Limits(max_connections=args.clients + 4, max_keepalive_connections=args.clients + 4)
    headers = {"Authorization": f"Bearer {key}"}
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=120, limits=limits
        ) as client:
            ready_s = await _wait_ready(client, proc)
            t0 = time.perf_counter()
            if marker.is_file():
                job = json.loads(marker.read_text())
            else:
                first = await _upload(client, "corpus.jsonl", _records(0, args.corpus))
                job = await _wait_job(client, first.json()["job_id"])
                if args.data_dir:
                    marker.write_text(json.dumps(job))
            corpus_s = time.perf_counter() - t0
            print(
                f"ready in {ready_s:.1f} s; corpus of {args.corpus} records ingested in {corpus_s:.1f} s "
                f"({job['report']['chunks']['total']} chunks, job {job['status']})"
            )
            queries = _queries()
            run = Run(uploads_left=args.max_uploads)
            deadline = time.perf_counter() + args.seconds
            rng = random.Random(7)
            load_started = time.time()
            cpu_before, load_before = cpu_seconds(proc.pid), os.getloadavg()[0]
            kids_before = _tree_cpu_seconds(proc.pid)
            client_before = cpu_seconds(os.getpid())
            await asyncio.gather(
                *(
                    _client_loop(client, run, random.Random(rng.random()), queries, deadline, args)
                    for _ in range(args.clients)
                )
            )
            elapsed = time.time() - load_started
            owner_cpu = cpu_seconds(proc.pid) - cpu_before
            server_cpu = owner_cpu + _tree_cpu_seconds(proc.pid) - kids_before
            client_cpu = cpu_seconds(os.getpid()) - client_before
            load_avg = (load_before + os.getloadavg()[0]) / 2
            jobs = [await _wait_job(client, j) for j in run.jobs]
            metrics = (await client.get("/metrics")).text
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        if not args.data_dir:
            shutil.rmtree(data_dir, ignore_errors=True)
    result = _report(args, run, jobs, elapsed, corpus_s, job, metrics)
    if args.samples:  # one line a request, its start in seconds from the load's
        lines = (
            json.dumps(
                {"kind": s.kind, "at": round(s.started - load_started, 4), "seconds": round(s.seconds, 4)}
                | {"status": s.status, "server_ms": s.server_ms}
            )
            for s in run.samples
        )
        args.samples.write_text("\n".join(lines) + "\n")
    result["server_cpu_s"] = round(server_cpu, 1)
    result["server_cpu_cores"] = round(server_cpu / elapsed, 2)
    result["client_cpu_cores"] = round(client_cpu / elapsed, 2)
    result["load_average"] = round(load_avg, 1)
    searches = max(result["search"]["n"], 1)
    result["server_cpu_ms_per_search"] = round(server_cpu / searches * 1000, 1)
    result["owner_cpu_ms_per_search"] = round(owner_cpu / searches * 1000, 1)
    print(
        f"server process CPU: {server_cpu:.1f} s over {elapsed:.0f} s ({server_cpu / elapsed:.2f} cores, "
        f"{server_cpu / searches * 1000:.1f} ms a search, the service process "
        f"{owner_cpu / searches * 1000:.1f} ms of it); the load client's own CPU: {client_cpu / elapsed:.2f} "
        f"cores; machine load average {load_avg:.1f} on {os.cpu_count()} CPUs"
    )
    return result


def _report(
    args: Any,
    run: Run,
    jobs: list[dict[str, Any]],
    elapsed: float,
    corpus_s: float,
    corpus_job: dict[str, Any],
    metrics: str,
) -> dict[str, Any]:
    spans = [(_utc(j["started_at"]), _utc(j["finished_at"])) for j in jobs]
    windows = [(a, b) for a, b in spans if a is not None and b is not None]

    def during_ingest(s: Sample) -> bool:
        return any(a <= s.started + s.seconds and s.started <= b for a, b in windows)

    searches = [s for s in run.samples if s.kind == "search" and s.status == 200]
    busy = [s.seconds for s in searches if during_ingest(s)]
    idle = [s.seconds for s in searches if not during_ingest(s)]
    uploads = [s.seconds for s in run.samples if s.kind == "upload" and s.status == 202]
    ingest_s = sum((b - a) for a, b in windows)
    embedded = sum(j["report"]["chunks"]["embedded"] for j in jobs if j.get("report"))
    lines = [
        f"{args.clients} clients, {elapsed:.0f} s, {len(run.samples)} requests, errors: {run.errors or 'none'}",
        f"ingest jobs during the run: {len(jobs)} ({sum(j['status'] == 'succeeded' for j in jobs)} succeeded), "
        f"{embedded} chunks embedded in {ingest_s:.1f} s of job time"
        + (f" ({embedded / ingest_s:.1f} chunks/s)" if ingest_s else ""),
        "",
        "| requests | n | per s | p50 ms | p95 ms | p99 ms | max ms |",
        "|---|---|---|---|---|---|---|",
        _line("search (all)", [s.seconds for s in searches], elapsed),
        _line("search while an ingest job ran", busy, elapsed),
        _line("search with no job running", idle, elapsed),
        _line("upload (202)", uploads, elapsed),
    ]
    for line in lines:
        print(line)
    batches = [ln for ln in metrics.splitlines() if ln.startswith("ragindex_ingest_chunks_embedded_total")]
    encode = [m.get("encode", 0.0) / 1000 for m in run.server_ms]
    engine = [m.get("total", 0.0) / 1000 for m in run.server_ms]
    print(_line("  server: search total (engine)", engine, elapsed))
    print(_line("  server: query encode (batched)", encode, elapsed))
    return {
        "clients": args.clients,
        "mode": args.mode,
        "seconds": round(elapsed, 1),
        "requests": len(run.samples),
        "errors": run.errors,
        "corpus_ingest_s": round(corpus_s, 1),
        "corpus_chunks": corpus_job["report"]["chunks"]["total"],
        "search": {
            "n": len(searches),
            "per_s": round(len(searches) / elapsed, 1),
            "p50_ms": round(_pct([s.seconds for s in searches], 50), 1),
            "p99_ms": round(_pct([s.seconds for s in searches], 99), 1),
        },
        "search_during_ingest": {
            "n": len(busy),
            "p50_ms": round(_pct(busy, 50), 1),
            "p99_ms": round(_pct(busy, 99), 1),
        },
        "search_idle": {"n": len(idle), "p50_ms": round(_pct(idle, 50), 1), "p99_ms": round(_pct(idle, 99), 1)},
        "uploads": len(uploads),
        "jobs": [j["status"] for j in jobs],
        "chunks_embedded_during_run": embedded,
        "metrics_embedded": batches,
        "mean_search_ms": round(statistics.fmean([s.seconds for s in searches]) * 1000, 1) if searches else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--mode", default="hybrid", choices=["hybrid", "dense", "bm25"], help="Search mode")
    parser.add_argument("--corpus", type=int, default=150, help="SciFact records ingested before the load")
    parser.add_argument("--max-uploads", type=int, default=6, help="Most uploads during the load")
    parser.add_argument("--upload-records", type=int, default=25, help="SciFact records per upload")
    parser.add_argument("--upload-rate", type=float, default=0.01, help="Chance that a client's next request uploads")
    parser.add_argument("--json", type=Path, default=None, help="Also write the figures to this file")
    parser.add_argument("--data-dir", type=Path, default=None, help="Keep the data dir here (corpus ingested once)")
    parser.add_argument(
        "--samples", type=Path, default=None, help="Write every request (start, seconds, status, server phases) here"
    )
    parser.add_argument(
        "--httpx-searches",
        action="store_true",
        help="Send searches through httpx (as bench.load did before 2026-12-07 22:40 UTC)",
    )
    args = parser.parse_args()
    result = asyncio.run(main_async(args))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
