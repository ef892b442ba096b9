"""The cost of parsing in a child process (``RAGINDEX_PARSE_TIMEOUT_SECONDS`` > 0) against parsing in-process (0).

``python -m bench.parsing`` parses the bundled sample corpus (``examples/``) and 1,000 small text files, each
way, three times, and prints the medians as JSON:

* ``parse``: the loaders alone (the child's start included in the isolated time);
* ``ingest``: a whole ``Engine.ingest`` into a fresh data dir, its ``chunking`` stage (read, parse, chunk and
  stage every file) and its total (the embedding of the chunks dominates it).
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.loaders.isolated import IsolatedParser
from ragindex.loaders.registry import LoaderRegistry

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 3


def small_files(folder: Path, n: int = 1000) -> Path:
    """``n`` text files of one or two sentences each."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"note-{i:04d}.txt").write_text(
            f"Note {i}: the committee met on day {i % 28 + 1} and agreed on item {i * 7 % 101}.", encoding="utf-8"
        )
    return folder


def parse_all(files: list[Path], timeout: float) -> float:
    """Seconds to parse every file (a fresh child for the isolated way, as in one ingest)."""
    started = time.perf_counter()
    with IsolatedParser(LoaderRegistry(), timeout=timeout) as parser:
        for path in files:
            parser.load(path, path.read_bytes())
    return time.perf_counter() - started


def ingest_once(corpus: Path, timeout: float) -> dict[str, float]:
    """One cold ingest of ``corpus`` with ``parse_timeout_seconds=timeout``: chunking stage and total, in ms."""
    data = Path(tempfile.mkdtemp(prefix="bench-parsing-"))
    try:
        with Engine(Settings(data_dir=data, parse_timeout_seconds=timeout)) as engine:
            report = engine.ingest([corpus])
        assert not report.failures, report.failures
        return {"chunking_ms": report.stage_ms["chunking"], "total_ms": report.duration_ms}
    finally:
        shutil.rmtree(data, ignore_errors=True)


def median(values: list[float]) -> float:
    return round(statistics.median(values), 4)


def bench(corpus: Path) -> dict[str, Any]:
    files = sorted(p for p in corpus.iterdir() if p.is_file())
    out: dict[str, Any] = {"files": len(files)}
    for name, timeout in (("in_process", 0.0), ("isolated", 120.0)):
        parse_all(files, timeout)  # warm the page cache and the imports
        out[f"parse_s_{name}"] = median([parse_all(files, timeout) for _ in range(ROUNDS)])
        runs = [ingest_once(corpus, timeout) for _ in range(ROUNDS)]
        out[f"ingest_chunking_ms_{name}"] = median([r["chunking_ms"] for r in runs])
        out[f"ingest_total_ms_{name}"] = median([r["total_ms"] for r in runs])
    return out


def main() -> int:
    scratch = Path(tempfile.mkdtemp(prefix="bench-parsing-files-"))
    try:
        results = {
            "examples": bench(ROOT / "examples"),
            "small_files_1000": bench(small_files(scratch / "small")),
        }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    sys.stdout.write(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
