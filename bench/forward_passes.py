"""Passes of 32 or 64 texts inside the ingest's batches of 64: what ``RAGINDEX_DENSE_BATCH_SIZE`` was chosen by.

``python -m bench.forward_passes DATA_DIR [ROUNDS]`` reads the dense units an ingest into ``DATA_DIR`` embedded (its
SQLite truth store), sorts them by length as the indexer does, and encodes them in child processes, alternating the
pass sizes ``ROUNDS`` times (default 2): sentence-transformers in float32, calls of 64 texts (one ingest batch) with
the heap released after each call, as the dense encoder does. Prints one JSON line per run: wall, user and kernel
seconds of the encode, and the child's peak RSS.
"""

from __future__ import annotations

import json
import resource
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

CALL = 64


def _texts(data_dir: Path) -> list[str]:
    from ragindex.store.records import indexed_text

    with sqlite3.connect(data_dir / "ragindex.db") as db:
        rows = db.execute("SELECT content, context FROM chunks WHERE dense_status = 'SUCCESS'").fetchall()
    return sorted((indexed_text(content, context) for content, context in rows), key=len)


def child(data_dir: str, passes: str) -> None:
    """One run: every text in calls of :data:`CALL`, passes of ``passes``; prints its JSON line."""
    from sentence_transformers import SentenceTransformer

    from ragindex.config.settings import DEFAULT_DENSE_MODEL
    from ragindex.encoders.dense.sentence_transformers import resolve_model_source
    from ragindex.encoders.heap import release_heap

    texts = _texts(Path(data_dir))
    model = SentenceTransformer(resolve_model_source(DEFAULT_DENSE_MODEL), device="cpu", local_files_only=True)
    model.encode(texts[:CALL], batch_size=int(passes))  # warm
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    for i in range(0, len(texts), CALL):
        model.encode(texts[i : i + CALL], batch_size=int(passes), normalize_embeddings=True)
        release_heap()
    after = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "passes": int(passes),
                "texts": len(texts),
                "wall_s": round(time.perf_counter() - started, 1),
                "user_s": round(after.ru_utime - before.ru_utime, 1),
                "kernel_s": round(after.ru_stime - before.ru_stime, 1),
                "peak_rss_mb": round(after.ru_maxrss / 1024),
            }
        ),
        flush=True,
    )


def main(data_dir: str, rounds: str = "2") -> None:
    for _ in range(int(rounds)):
        for passes in (64, 32):
            subprocess.run([sys.executable, "-m", "bench.forward_passes", "--child", data_dir, str(passes)], check=True)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: python -m bench.forward_passes DATA_DIR [ROUNDS]")
    if sys.argv[1] == "--child":
        child(*sys.argv[2:])
    else:
        main(*sys.argv[1:])
