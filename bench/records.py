"""Records and filters (issue 24): filtered search at 100k chunks, metadata-only updates, re-upserts.

Child process entry points (each prints one JSON object, peak RSS included):

* ``python -m bench.records filtered DATA_DIR QUERIES.json`` -- 1,000 records of 100 pre-cut chunks each (words drawn
  from the SciFact corpus, random unit dense vectors as in ``bench.query build``) with ``group`` = record number mod
  100; then hybrid ``Engine.search(top_k=10)`` p50/p95 unfiltered, with a filter matching 1% (``group == 7``) and one
  matching 50% (``group < 50``), and whether every hit matches.
* ``python -m bench.records update DATA_DIR N`` -- N one-chunk records upserted, then the same N again (0 embedded),
  then the same N with one metadata field changed (0 embedded, every copy rewritten, verify clean).
* ``python -m bench.records encode N`` -- the real model: upsert of N short records against one raw
  ``SentenceTransformer.encode`` of their texts in the same process (the ratio is what the target bounds).
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path
from typing import Any


def _vocabulary(limit: int = 2000) -> list[str]:
    from bench.common import SCIFACT

    words: list[str] = []
    with (SCIFACT / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            words += [w for w in json.loads(line)["text"].split() if w.isalpha()]
            if len(words) > 200_000:
                break
    return words


def _text(rng: random.Random, words: list[str], n: int = 50) -> str:
    return " ".join(rng.choice(words) for _ in range(n))


def _engine(data_dir: str, *, random_vectors: bool) -> Any:
    from bench.query import RandomUnitEncoder
    from ragindex.config.settings import Settings
    from ragindex.engine import Engine

    engine = Engine(Settings(data_dir=Path(data_dir), query_cache_size=0))
    if random_vectors:
        engine._dense = RandomUnitEncoder(engine.dense)
    return engine


def filtered(data_dir: str, queries_path: str) -> None:
    from bench.common import percentile, vm_hwm_mb

    rng = random.Random(0)
    words = _vocabulary()
    out: dict[str, Any] = {}
    marker = Path(data_dir) / ".bench-records.json"
    if not marker.is_file():
        with _engine(data_dir, random_vectors=True) as engine:
            started = time.perf_counter()
            for start in range(0, 1000, 50):
                batch = [
                    {"key": f"rec-{i}", "chunks": [_text(rng, words) for _ in range(100)], "metadata": {"group": g}}
                    for i in range(start, start + 50)
                    for g in [i % 100]
                ]
                engine.upsert(batch)
            upsert_s = time.perf_counter() - started
            started = time.perf_counter()
            from ragindex.index.routing import bucket_of

            collection = engine.read_collection()
            assert collection is not None
            engine.index.optimize(collection, bucket_of(1, engine.settings.bucket_count))  # as after a bulk load
            marker.write_text(json.dumps({"upsert_s": upsert_s, "optimize_s": time.perf_counter() - started}))
    out["build"] = json.loads(marker.read_text())
    # queries are encoded by the real model (the collection keeps its fingerprint), as in bench.query measure
    with _engine(data_dir, random_vectors=False) as engine:
        queries = json.loads(Path(queries_path).read_text())[:200]
        for query in queries[:5]:  # warm-up: the model, the shard, the caches
            engine.search(query, user_id=1, set_id=1, top_k=10)
        cases = {"unfiltered": None, "1%": {"group": 7}, "50%": {"group": {"$lt": 50}}}
        for name, spec in cases.items():
            times: list[float] = []
            mismatched = hits = 0
            for query in queries:
                t0 = time.perf_counter()
                result = engine.search(query, user_id=1, set_id=1, top_k=10, filter=spec)
                times.append((time.perf_counter() - t0) * 1000)
                hits += len(result.hits)
                if spec is not None:
                    groups = [h.metadata.get("group") for h in result.hits]
                    ok = (lambda g: g == 7) if name == "1%" else (lambda g: isinstance(g, int) and g < 50)
                    mismatched += sum(1 for g in groups if not ok(g))
            out[name] = {
                "p50_ms": round(percentile(times, 50), 2),
                "p95_ms": round(percentile(times, 95), 2),
                "hits": hits,
                "mismatched_hits": mismatched,
            }
        out["chunks"] = engine.status().to_dict().get("chunks")
    out["peak_rss_mb"] = vm_hwm_mb()
    sys.stdout.write(json.dumps(out, default=str) + "\n")


def update(data_dir: str, count: str) -> None:
    from bench.common import vm_hwm_mb

    n = int(count)
    rng = random.Random(1)
    words = _vocabulary()
    texts = [_text(rng, words, 30) for _ in range(n)]

    def records(tag: str) -> list[dict[str, Any]]:
        return [{"key": f"r{i}", "text": texts[i], "metadata": {"tag": tag, "n": i}} for i in range(n)]

    out: dict[str, Any] = {"records": n}
    with _engine(data_dir, random_vectors=True) as engine:
        for phase, tag in (("first", "a"), ("same", "a"), ("metadata_only", "b")):
            started = time.perf_counter()
            embedded = total = 0
            documents: dict[str, int] = {}
            for start in range(0, n, 1000):
                report = engine.upsert(records(tag)[start : start + 1000])
                embedded += report.chunks["embedded"]
                total += report.chunks["total"]
                for k, v in report.documents.items():
                    documents[k] = documents.get(k, 0) + v
            out[phase] = {
                "s": round(time.perf_counter() - started, 2),
                "embedded": embedded,
                "chunks_staged": total,
                "documents": {k: v for k, v in documents.items() if v},
            }
        out["verify_ok"] = engine.verify().ok
        hits = engine.search(texts[0][:60], user_id=1, set_id=1, mode="bm25", top_k=3, filter={"tag": "a"}).hits
        out["old_tag_hits"] = len(hits)
    out["peak_rss_mb"] = vm_hwm_mb()
    sys.stdout.write(json.dumps(out) + "\n")


def encode(data_dir: str, count: str) -> None:
    from bench.common import vm_hwm_mb

    n = int(count)
    rng = random.Random(2)
    words = _vocabulary()
    texts = [_text(rng, words, 25) for _ in range(n)]
    out: dict[str, Any] = {"records": n}
    with _engine(data_dir, random_vectors=False) as engine:
        started = time.perf_counter()
        report = engine.upsert([{"key": f"e{i}", "text": t} for i, t in enumerate(texts)])
        out["upsert_s"] = round(time.perf_counter() - started, 2)
        out["embedded"] = report.chunks["embedded"]
    from sentence_transformers import SentenceTransformer

    from ragindex.config.settings import DEFAULT_DENSE_MODEL
    from ragindex.encoders.dense.sentence_transformers import resolve_model_source

    model = SentenceTransformer(resolve_model_source(DEFAULT_DENSE_MODEL), device="cpu", local_files_only=True)
    model.encode(texts[:32])
    started = time.perf_counter()
    model.encode(texts, batch_size=64)
    out["raw_encode_s"] = round(time.perf_counter() - started, 2)
    out["ratio"] = round(out["upsert_s"] / out["raw_encode_s"], 2)
    out["peak_rss_mb"] = vm_hwm_mb()
    sys.stdout.write(json.dumps(out) + "\n")


def bench_records() -> dict[str, Any]:
    """Sections (r1) filtered search at 100k chunks, (r2) metadata-only update of 10,000 records, (r3) encode ratio."""
    import shutil

    from bench.common import BENCH_DIR, env_int, python_module, save_section
    from bench.latency import queries_file

    queries = queries_file()
    result: dict[str, Any] = {}
    filtered_dir = BENCH_DIR / "records-filtered"
    proc = python_module("bench.records", "filtered", str(filtered_dir), str(queries))
    result["filtered"] = {**proc.json(), "command": f"python -m bench.records filtered {filtered_dir} {queries}"}
    count = env_int("BENCH_RECORDS_UPDATE", 10_000)
    update_dir = BENCH_DIR / "records-update"
    shutil.rmtree(update_dir, ignore_errors=True)
    proc = python_module("bench.records", "update", str(update_dir), str(count))
    result["update"] = {**proc.json(), "command": f"python -m bench.records update {update_dir} {count}"}
    encode_dir = BENCH_DIR / "records-encode"
    shutil.rmtree(encode_dir, ignore_errors=True)
    proc = python_module("bench.records", "encode", str(encode_dir), "1000")
    result["encode"] = {**proc.json(), "command": f"python -m bench.records encode {encode_dir} 1000"}
    proc = python_module("bench.records_http", "1000")
    result["http"] = proc.json()
    save_section("records", result)
    return result


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"filtered": filtered, "update": update, "encode": encode}[command](*args)
