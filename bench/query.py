"""Query latency benchmark (d): p50/p95 per mode, with query encoding (``Engine.search``) and without it.

Child process entry points (each prints one JSON object, peak RSS included):

* ``python -m bench.query measure DATA_DIR USER SET QUERIES.json`` — for dense, bm25 and hybrid: the latency of
  ``Engine.search(top_k=10)`` per query (encode + index search + fusion + backfill), and of the index alone
  (``engine.index.search`` per source on pre-encoded queries, plus RRF for hybrid, with the limits the retriever
  uses: 30 for one source, 50 candidates per source for hybrid).
* ``python -m bench.query build DATA_DIR N`` — about N synthetic chunks (text files of 100 paragraphs of words
  drawn from the SciFact corpus, so BM25 sees a real vocabulary) ingested through the normal pipeline, with the
  dense model swapped for random unit vectors (100k real embeddings would take hours on a small CPU). The
  collection keeps the real model's fingerprint, so ``measure`` encodes queries with the real model.
"""

from __future__ import annotations

import json
import random
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

MODES = ("dense", "bm25", "hybrid")


class RandomUnitEncoder:
    """A dense encoder that returns random unit vectors under another encoder's fingerprint (bench only)."""

    def __init__(self, real: Any, dimension: int = 384, seed: int = 0) -> None:
        self._real = real
        self._dimension = dimension
        self._rng = np.random.default_rng(seed)

    @property
    def fingerprint(self) -> str:
        return str(self._real.fingerprint)

    @property
    def cache_key(self) -> str:
        return f"{self._real.cache_key}|bench-random"

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def languages(self) -> Any:
        """The real model's scripts (the language guard of the set's fusion calibration asks)."""
        return self._real.languages

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = self._rng.standard_normal((len(texts), self._dimension)).astype(np.float32)
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode_documents(texts)


def synthetic_corpus(folder: Path, count: int, scifact: Path, per_doc: int = 100, words: int = 50) -> None:
    """About ``count`` chunks: text files of ``per_doc`` paragraphs of ``words`` words sampled from SciFact's token
    stream (each paragraph fits one 512-character chunk; many chunks per document keep the per-document cost of
    the pipeline from dominating)."""
    tokens: list[str] = []
    with (scifact / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            tokens += re.findall(r"\w+", f"{record.get('title', '')} {record.get('text', '')}")
    rng = random.Random(42)
    folder.mkdir(parents=True, exist_ok=True)
    for number, start in enumerate(range(0, count, per_doc)):
        paragraphs = [" ".join(rng.choices(tokens, k=words)) + "." for _ in range(min(per_doc, count - start))]
        (folder / f"synthetic-{number:05d}.txt").write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")


def build(data_dir: str, count: str) -> None:
    from bench.common import SCIFACT, vm_hwm_mb
    from ragindex.config.settings import Settings
    from ragindex.engine import Engine

    folder = Path(f"{data_dir}-corpus")  # beside the data dir: ingest refuses files inside one (issue 11)
    synthetic_corpus(folder, int(count), SCIFACT)
    started = time.perf_counter()
    # no query-vector LRU: every timed search encodes its query (the warm-up and `encoded` would fill it)
    with Engine(Settings(data_dir=Path(data_dir), query_cache_size=0)) as engine:
        engine._dense = RandomUnitEncoder(engine.dense)
        report = engine.ingest([folder], user_id=1, set_id=1)
    out = {
        "requested_chunks": int(count),
        "chunks": report.chunks,
        "ingest_s": time.perf_counter() - started,
        "stage_ms": report.stage_ms,
        "peak_rss_mb": vm_hwm_mb(),
    }
    sys.stdout.write(json.dumps(out) + "\n")


def _stats(values: list[float]) -> dict[str, float]:
    from bench.common import percentile

    return {"p50": percentile(values, 50), "p95": percentile(values, 95), "mean": sum(values) / len(values)}


def measure(data_dir: str, user_id: str, set_id: str, queries_path: str) -> None:
    from bench.common import vm_hwm_mb
    from ragindex.config.settings import Settings
    from ragindex.engine import Engine
    from ragindex.index.protocol import TenantFilter, VectorQuery
    from ragindex.index.routing import bucket_of
    from ragindex.retrieval.fusion import fuse

    queries: list[str] = json.loads(Path(queries_path).read_text())
    uid, sid = int(user_id), int(set_id)
    out: dict[str, Any] = {"queries": len(queries), "modes": {}}
    # no query-vector LRU: every timed search encodes its query (the warm-up and `encoded` would fill it)
    with Engine(Settings(data_dir=Path(data_dir), query_cache_size=0)) as engine:
        collection = engine.read_collection()
        assert collection is not None
        bucket = bucket_of(uid, engine.settings.bucket_count)
        out["points"] = engine.index.count(collection, bucket)
        tenant = TenantFilter(uid, sid)
        for mode in MODES:  # warm-up: model load, shard open, caches
            engine.search(queries[0], user_id=uid, set_id=sid, mode=mode, top_k=10)
        encoded = {
            "dense": [VectorQuery(using="dense", dense=v) for v in engine.dense.encode_queries(queries)],
            "bm25": [VectorQuery(using="bm25", sparse=v) for v in engine.sparse["bm25"].encode_queries(queries)],
        }
        candidates = engine.settings.candidates_per_source
        for mode in MODES:
            full: list[float] = []
            for query in queries:
                started = time.perf_counter()
                engine.search(query, user_id=uid, set_id=sid, mode=mode, top_k=10)
                full.append((time.perf_counter() - started) * 1000)
            index_only: list[float] = []
            sources = ("dense", "bm25") if mode == "hybrid" else (mode,)
            limit = candidates if mode == "hybrid" else 10 * 2 + 10
            for i in range(len(queries)):
                started = time.perf_counter()
                lists = {
                    s: engine.index.search(collection, bucket, encoded[s][i], tenant, limit=limit) for s in sources
                }
                if mode == "hybrid":
                    fuse("rrf", lists, k=engine.settings.rrf_k)
                index_only.append((time.perf_counter() - started) * 1000)
            out["modes"][mode] = {"with_encoding_ms": _stats(full), "index_only_ms": _stats(index_only)}
    out["peak_rss_mb"] = vm_hwm_mb()
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "build":
        build(*args)
    else:
        measure(*args)
