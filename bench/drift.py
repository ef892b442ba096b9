"""What the score-drift watch costs a search, and what one save costs: ``python -m bench.drift [SEARCHES]``.

A hybrid search hands the watch three lists (dense, bm25 and the fused one, 50 candidates each): the figure is the
time of those three :meth:`ScoreWatch.observe` calls, in memory, on the search's own thread. A save is one
:meth:`ScoreWatch.flush` of a window's worth of searches into a real SQLite truth store (a temp file), done by the
watch's thread, never by a search. Prints JSON; nothing is written to docs/benchmarks.json.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ragindex.config.sections import DriftSettings
from ragindex.retrieval.drift import ScoreWatch
from ragindex.store.sql import SqlTruthStore

SOURCES = (("dense", "st:model"), ("bm25", "qdrant-bm25"), ("fused", "dbsf:dense+bm25"))


def main(argv: list[str]) -> int:
    """Time ``SEARCHES`` (default 20,000) observed searches and the saves of their windows."""
    searches = int(argv[0]) if argv else 20_000
    rng = random.Random(1)
    lists = [
        [
            sorted((rng.uniform(0, scale) for _ in range(50)), reverse=True)
            for _, scale in zip(SOURCES, (1, 20, 2), strict=True)
        ]
        for _ in range(200)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        store = SqlTruthStore(f"sqlite:///{Path(tmp) / 'truth.db'}")
        settings = DriftSettings(drift_window_queries=200, drift_flush_seconds=3600)
        watch = ScoreWatch(store, settings)
        per_search: list[float] = []
        saves: list[float] = []
        for i in range(searches):
            scores = lists[i % len(lists)]
            started = time.perf_counter()
            for (source, fingerprint), ranked in zip(SOURCES, scores, strict=True):
                watch.observe(source, fingerprint, ranked)
            per_search.append(time.perf_counter() - started)
            if (i + 1) % 200 == 0:  # as the watch's thread does once a window's worth is held
                started = time.perf_counter()
                watch.flush()
                saves.append(time.perf_counter() - started)
        watch.close()
        windows = len(store.score_windows())
        store.close()
    print(
        json.dumps(
            {
                "searches": searches,
                "observe_us_per_search": {
                    "median": round(statistics.median(per_search) * 1e6, 2),
                    "p99": round(sorted(per_search)[int(len(per_search) * 0.99)] * 1e6, 2),
                },
                "save_ms_per_window": {"median": round(statistics.median(saves) * 1e3, 2) if saves else None},
                "windows_kept": windows,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
