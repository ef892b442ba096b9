"""The benchmark suite: ``python -m bench.run [SECTION ...]``, sections as in BENCHMARKS below.

Default: all.

Results go to docs/benchmarks.json (a subset run replaces only its sections) and docs/benchmarks.md.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.common import mark_start
from bench.ingest import bench_change, bench_ingest, bench_noop
from bench.latency import bench_query
from bench.light import bench_light
from bench.ocr_quality import bench_ocr_quality
from bench.oneshot import bench_oneshot
from bench.parse_quality import bench_parse_quality
from bench.pdf import bench_pdf
from bench.peers import bench_peers
from bench.read_path import bench_read_path
from bench.records import bench_records
from bench.report import write
from bench.transfer import bench_transfer
from bench.watch import bench_watch

BENCHMARKS: dict[str, Callable[[], dict[str, Any]]] = {
    "ingest": bench_ingest,
    "noop": bench_noop,
    "change": bench_change,
    "query": bench_query,
    "pdf": bench_pdf,
    "light": bench_light,
    "watch": bench_watch,
    "records": bench_records,
    "parse-quality": bench_parse_quality,
    "ocr-quality": bench_ocr_quality,
    "oneshot": bench_oneshot,
    "peers": bench_peers,
    "read-path": bench_read_path,
    "export": bench_transfer,
}


def main(argv: list[str]) -> int:
    names = argv or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        sys.stderr.write(f"unknown benchmark(s) {unknown}; choose from {', '.join(BENCHMARKS)}\n")
        return 2
    for name in names:
        started = time.perf_counter()
        sys.stderr.write(f"== {name}\n")
        mark_start()
        result = BENCHMARKS[name]()
        sys.stderr.write(
            json.dumps(result, default=str)[:2000] + f"\n== {name} done in {time.perf_counter() - started:.0f} s\n"
        )
        write()
    if not names:
        write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
