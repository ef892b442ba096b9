"""(f) The light query encoder: ONNX Runtime vs torch for a one-shot search, one query, a 1% change, a bulk batch.

``python -m bench.run light``. Every CLI figure is a child process of the real ``ragindex`` on the 1,000-record
SciFact copy of section (a), once with the default (``RAGINDEX_LIGHT_ENCODER=auto``: ONNX Runtime) and once with
``RAGINDEX_LIGHT_ENCODER=off`` (torch, as before the light encoder). ``python -m bench.light encode TEXTS.json``
is the in-process part: per-query and bulk encode times of torch (float32, bf16) and ONNX Runtime.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR, SCIFACT, env_int, python_module, ragindex, save_section
from bench.ingest import CORPUS, chunk_texts, prepare_corpus

ONNX_CACHE = BENCH_DIR / "onnx-cache"
VARIANTS = {"onnx": {}, "torch": {"RAGINDEX_LIGHT_ENCODER": "off"}}


def _env(variant: str) -> dict[str, str]:
    return {"RAGINDEX_ONNX_CACHE_DIR": str(ONNX_CACHE), **VARIANTS[variant]}


def _queries(n: int) -> list[str]:
    lines = (SCIFACT / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines if line.strip()][:n]


def _ingested() -> tuple[Path, dict[str, Any] | None]:
    prepare_corpus()
    target = BENCH_DIR / "light"
    if (target / ".bench-ok").is_file():
        return target, None
    shutil.rmtree(target, ignore_errors=True)
    proc = ragindex(target, "ingest", str(CORPUS), "--json", env=_env("onnx"))
    report = proc.json()
    (target / ".bench-ok").write_text("ok")
    return target, {"wall_s": proc.wall_s, "chunks": report["chunks"], "stage_ms": report["stage_ms"]}


def _export() -> dict[str, Any]:
    shutil.rmtree(ONNX_CACHE, ignore_errors=True)
    first = ragindex(BENCH_DIR, "models", "prepare", "--json", env=_env("onnx"))
    again = ragindex(BENCH_DIR, "models", "prepare", "--json", env=_env("onnx"))
    path = Path(first.json()["onnx"])
    return {"export_wall_s": first.wall_s, "cached_wall_s": again.wall_s, "onnx_mib": path.stat().st_size / 2**20}


def _one_shot(target: Path, variant: str, queries: list[str]) -> dict[str, Any]:
    runs = []
    for query in queries:
        proc = ragindex(target, "search", query, "--json", env=_env(variant))
        latency = proc.json()["latency_ms"]
        runs.append({"wall_s": proc.wall_s, "rss": proc.peak_rss_mb, **latency})
    return {
        "wall_s_median": statistics.median(r["wall_s"] for r in runs),
        "wall_s_min": min(r["wall_s"] for r in runs),
        "wall_s_max": max(r["wall_s"] for r in runs),
        "model_load_ms_median": statistics.median(r.get("model_load", 0.0) for r in runs),
        "encode_ms_median": statistics.median(r.get("encode", 0.0) for r in runs),
        "peak_rss_mb": max(r["rss"] for r in runs),
        "runs": runs,
    }


def _change(target: Path, variant: str) -> dict[str, Any]:
    """Rewrite 1% of the records (a variant-specific sentence: nothing is in the cache), ingest, restore."""
    pristine = CORPUS.read_text(encoding="utf-8")
    lines = pristine.splitlines()
    step = max(1, round(100 / env_int("BENCH_CHANGE_PERCENT", 1)))
    for i in range(0, len(lines), step):
        record = json.loads(lines[i])
        record["text"] = f"Revised abstract {i} ({variant}, {time.time():.0f}): {record['text']}"
        lines[i] = json.dumps(record, ensure_ascii=False)
    try:
        CORPUS.write_text("\n".join(lines) + "\n", encoding="utf-8")
        proc = ragindex(target, "ingest", str(CORPUS), "--json", env=_env(variant))
        report = proc.json()
    finally:
        CORPUS.write_text(pristine, encoding="utf-8")
    ragindex(target, "ingest", str(CORPUS), "--json", env=_env(variant)).json()
    return {
        "wall_s": proc.wall_s,
        "pipeline_s": report["duration_ms"] / 1000,
        "embedded": report["chunks"]["embedded"],
        "stage_ms": report["stage_ms"],
        "peak_rss_mb": proc.peak_rss_mb,
    }


def bench_light() -> dict[str, Any]:
    """(f) ONNX Runtime vs torch: export, one-shot search, 1% change, per-query and bulk encode."""
    target, cold = _ingested()
    result: dict[str, Any] = {"cold_ingest": cold, "export": _export()}
    queries = _queries(env_int("BENCH_LIGHT_SEARCHES", 5))
    ragindex(target, "search", "warm the page cache", "--json", env=_env("onnx")).json()
    result["one_shot"] = {v: _one_shot(target, v, queries) for v in VARIANTS}
    result["change"] = {v: _change(target, v) for v in VARIANTS}
    texts = BENCH_DIR / "light-texts.json"
    chunks = [t for _, t in chunk_texts(target)][: env_int("BENCH_LIGHT_BULK", 512)]
    texts.write_text(json.dumps({"queries": _queries(100), "chunks": chunks}))
    result["encode"] = python_module("bench.light", "encode", str(texts), env=_env("onnx")).json()
    result["commands"] = {
        "one_shot": f"ragindex --data-dir {target} search QUERY --json  (RAGINDEX_LIGHT_ENCODER=auto / off)",
        "change": f"ragindex --data-dir {target} ingest {CORPUS} --json  (after rewriting 1% of the records)",
        "export": "ragindex models prepare --json  (empty ONNX cache, then again)",
        "encode": f"python -m bench.light encode {texts}",
    }
    save_section("light", result)
    return result


def _time_each(encode: Any, texts: list[str]) -> float:
    times = []
    for text in texts:
        started = time.perf_counter()
        encode([text])
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def encode(path: str) -> None:
    """Per-query (median ms over 100 SciFact queries, one at a time) and bulk (chunks/s) encode times."""
    from ragindex import factory
    from ragindex.config.settings import Settings
    from ragindex.encoders.dense.routed import RoutedDenseEncoder
    from ragindex.encoders.dense.sentence_transformers import SentenceTransformerDenseEncoder

    data = json.loads(Path(path).read_text())
    queries, chunks = data["queries"], data["chunks"]
    settings = Settings(query_cache_size=0)
    router = factory.build_dense_encoder(settings)
    assert isinstance(router, RoutedDenseEncoder)
    onnx = router.light()
    assert onnx is not None
    encoders = {
        "onnx": onnx,
        "torch-bfloat16": SentenceTransformerDenseEncoder(settings.dense_model, precision="bfloat16"),
        "torch-float32": SentenceTransformerDenseEncoder(settings.dense_model, precision="float32"),
    }
    out: dict[str, Any] = {"queries": len(queries), "chunks": len(chunks)}
    for name, encoder in encoders.items():
        started = time.perf_counter()
        encoder.encode_queries(["warm up"])
        first_ms = (time.perf_counter() - started) * 1000
        per_query = _time_each(encoder.encode_queries, queries)
        started = time.perf_counter()
        encoder.encode_documents(chunks)
        bulk_s = time.perf_counter() - started
        out[name] = {"first_ms": first_ms, "query_ms_median": per_query, "bulk_s": bulk_s}
        out[name]["bulk_chunks_per_s"] = len(chunks) / bulk_s
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command != "encode":
        raise SystemExit("usage: python -m bench.light encode TEXTS.json")
    encode(*args)
