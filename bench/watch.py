"""(f) ``ragindex watch``: file saved -> searchable, against the raw encode of the saved file's chunks.

A real ``ragindex watch DIR --serve --json`` child watches a folder holding one note. The note is saved
``BENCH_WATCH_SAVES`` times (default 10), each time with new text (so all its chunks are new and embedded)
carrying a word no earlier version had; after each save the benchmark polls the service's BM25 search
for that word every 20 ms and records the seconds from the end of the write to the first answer that
finds it. The target is ``<= 1 s + the encode time of its new chunks``; that encode time is the median of
10 raw ``SentenceTransformer.encode`` calls of one version's chunks (model loaded and warmed up).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import BENCH_DIR, RAGINDEX, env_int, machine, ragindex, save_section

WORDS: tuple[str, ...] = (
    "river",
    "mountain",
    "glacier",
    "basalt",
    "quartz",
    "enzyme",
    "protein",
    "market",
    "ledger",
    "harbor",
)
WORDS += ("comet", "orbit", "nebula", "violin", "sonata", "bridge", "tunnel", "engine", "turbine", "algae")
POLL_S = 0.02
DEADLINE_S = 120.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _note(i: int, rng: random.Random) -> tuple[str, str]:
    """A note of three paragraphs (about three chunks at the default 512/64 chunking) and its unique word."""
    word = f"marker{i}x{rng.randrange(10**6)}"
    paragraphs = [
        " ".join(" ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + "." for _ in range(4)) for _ in range(3)
    ]
    paragraphs[1] += f" The code word of this version is {word}."
    return f"# Note {i}\n\n" + "\n\n".join(paragraphs) + "\n", word


def _chunk_texts(data: Path) -> list[str]:
    """The texts of the ACTIVE chunks (not sections: only chunks are dense-embedded) of a data dir."""
    from ragindex.store.sql import SqlTruthStore
    from ragindex.types import Unit

    store = SqlTruthStore(f"sqlite:///{(data / 'ragindex.db').resolve()}")
    try:
        rows = store.get_chunks(store.all_active_chunk_ids())
    finally:
        store.close()
    return [r.content for r in sorted(rows, key=lambda r: r.chunk_index) if r.unit == Unit.CHUNK]


def _encode_s(texts: list[str], precision: str, repeat: int = 10) -> float:
    """Median seconds of ``repeat`` raw ``SentenceTransformer.encode`` calls of ``texts`` (model loaded, warmed up).

    As ``bench/encode.py`` encodes (batch 64, normalised, bf16 under ``torch.autocast``), but a median of several
    calls: one call of a few short texts is a few milliseconds, and a single timing on a shared machine is noise.
    """
    import torch
    from sentence_transformers import SentenceTransformer

    from bench.common import torch_threads
    from ragindex.config.settings import DEFAULT_DENSE_MODEL
    from ragindex.encoders.dense.sentence_transformers import resolve_model_source

    if torch_threads():
        torch.set_num_threads(torch_threads() or 1)
    model = SentenceTransformer(resolve_model_source(DEFAULT_DENSE_MODEL), device="cpu", local_files_only=True)
    model.eval()

    def encode() -> float:
        started = time.perf_counter()
        with torch.inference_mode():
            if precision == "bfloat16":
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
            else:
                model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
        return time.perf_counter() - started

    for _ in range(3):
        encode()
    return statistics.median(encode() for _ in range(repeat))


def _events(log: Path) -> list[dict[str, Any]]:
    out = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def _wait(what: str, condition: Any, proc: subprocess.Popen[bytes]) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        value = condition()
        if value:
            return value
        if proc.poll() is not None:
            raise RuntimeError(f"ragindex watch ended ({proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"gave up waiting for {what}")
        time.sleep(POLL_S)


def bench_watch() -> dict[str, Any]:
    """Median save -> searchable latency of ``BENCH_WATCH_SAVES`` saves, and the raw encode of one version."""
    saves = env_int("BENCH_WATCH_SAVES", 10)
    root = BENCH_DIR / "watch"
    shutil.rmtree(root, ignore_errors=True)
    folder, data = root / "docs", root / "data"
    folder.mkdir(parents=True)
    rng = random.Random(13)
    note = folder / "note.md"
    note.write_text(_note(0, rng)[0], encoding="utf-8")
    key = ragindex(data, "keys", "create", "--user-id", "1", "--json").json()["key"]
    port = _free_port()
    log = root / "watch.log"
    args = [RAGINDEX, "--data-dir", str(data), "watch", str(folder), "--serve", "--port", str(port), "--json"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGINDEX_") or k == "RAGINDEX_TORCH_THREADS"}
    with log.open("wb") as out:
        proc = subprocess.Popen([*args, "--log-level", "warning"], stdout=out, stderr=subprocess.STDOUT, env=env)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key}"}, timeout=60)

    def found(word: str) -> bool:
        try:
            response = client.post("/v1/search", json={"query": word, "set_id": 1, "mode": "bm25", "top_k": 1})
        except httpx.TransportError:
            return False
        return response.status_code == 200 and bool(response.json()["hits"])

    measured: list[dict[str, Any]] = []
    try:
        _wait("the ready line", lambda: any(e["event"] == "ready" for e in _events(log)), proc)
        _wait("the service", lambda: found("note"), proc)
        for i in range(1, saves + 1):
            text, word = _note(i, rng)
            seen = len(_events(log))
            note.write_text(text, encoding="utf-8")
            saved = time.perf_counter()
            _wait(f"save {i} to be searchable", lambda w=word: found(w), proc)
            latency = time.perf_counter() - saved
            line = _wait(f"the line of save {i}", lambda n=seen: _events(log)[n:], proc)[0]
            measured.append(
                {"save_to_searchable_s": latency, "reported_ms": line["latency_ms"], "embedded": line["embedded"]}
            )
            time.sleep(0.5)
    finally:
        client.close()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(120)
    texts = _chunk_texts(data)
    precision = "bfloat16" if machine()["native_bf16"] else "float32"
    encode_s = _encode_s(texts, precision)
    latencies = [m["save_to_searchable_s"] for m in measured]
    median = statistics.median(latencies)
    result = {
        "saves": saves,
        "chunks_per_save": len(texts),
        "median_save_to_searchable_s": median,
        "min_s": min(latencies),
        "max_s": max(latencies),
        "median_reported_ms": statistics.median(m["reported_ms"] for m in measured),
        "embedded_per_save": statistics.median(m["embedded"] for m in measured),
        "encode_s": encode_s,
        "encode_precision": precision,
        "target_s": 1.0 + encode_s,
        "met": median <= 1.0 + encode_s,
        "debounce_s": 0.3,
        "exit_code": code,
        "per_save": measured,
        "command": f"ragindex --data-dir {data} watch {folder} --serve --json (debounce 0.3 s); "
        f"BM25 search polled every {POLL_S * 1000:.0f} ms",
    }
    save_section("watch", result)
    return result
