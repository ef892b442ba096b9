"""Ingest benchmarks: (a) cold ingest vs raw encode, (b) no-op re-ingest, (c) re-ingest after a 1% change.

Every ingest is a child process of the real CLI (``ragindex --data-dir D ingest corpus.jsonl --json``), timed
wall-clock from fork to exit (process start, imports and model load included) with its peak RSS.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR, SCIFACT, env_int, python_module, ragindex, save_section

CORPUS = BENCH_DIR / "corpus" / "corpus.jsonl"
PRECISIONS = ("float32", "auto", "int8")


def data_dir(precision: str) -> Path:
    return BENCH_DIR / f"ingest-{precision}"


def prepare_corpus() -> Path:
    """A copy of SciFact's corpus.jsonl under BENCH_DIR: its first BENCH_INGEST_DOCS records (default 1000, about
    4.7k chunks, to keep `make bench` within half an hour on 2 cores; 0 takes all 5,183 records, ~24k chunks)."""
    limit = env_int("BENCH_INGEST_DOCS", 1000)
    lines = (SCIFACT / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    lines = [line for line in lines if line.strip()]
    if limit > 0:
        lines = lines[:limit]
    text = "\n".join(lines) + "\n"
    CORPUS.parent.mkdir(parents=True, exist_ok=True)
    if not CORPUS.is_file() or CORPUS.read_text(encoding="utf-8") != text:
        CORPUS.write_text(text, encoding="utf-8")
    return CORPUS


def chunk_texts(directory: Path, hashes: set[str] | None = None) -> list[tuple[str, str]]:
    """(content hash, text) of the ACTIVE chunks of a data dir, in document and chunk order."""
    from ragindex.store.sql import SqlTruthStore

    store = SqlTruthStore(f"sqlite:///{(directory / 'ragindex.db').resolve()}")
    try:
        rows = store.get_chunks(store.all_active_chunk_ids())
    finally:
        store.close()
    rows.sort(key=lambda r: (r.doc_id, r.chunk_index))
    return [(r.content_hash, r.content) for r in rows if hashes is None or r.content_hash not in hashes]


def raw_encode(texts: list[str], precision: str, name: str) -> dict[str, Any]:
    path = BENCH_DIR / f"{name}.json"
    path.write_text(json.dumps(texts))
    proc = python_module("bench.encode", str(path), precision)
    out: dict[str, Any] = proc.json()
    out["wall_s"] = proc.wall_s
    out["command"] = f"python -m bench.encode {path.name} {precision}"
    return out


def cold_ingest(precision: str) -> dict[str, Any]:
    """Ingest the corpus copy into a fresh data dir with RAGINDEX_DENSE_PRECISION=precision."""
    target = data_dir(precision)
    shutil.rmtree(target, ignore_errors=True)
    proc = ragindex(target, "ingest", str(CORPUS), "--json", env={"RAGINDEX_DENSE_PRECISION": precision})
    report = proc.json()
    return {
        "precision": precision,
        "wall_s": proc.wall_s,
        "pipeline_s": report["duration_ms"] / 1000,
        "stage_ms": report["stage_ms"],
        "documents": report["documents"],
        "chunks": report["chunks"],
        "peak_rss_mb": proc.peak_rss_mb,
        "command": f"RAGINDEX_DENSE_PRECISION={precision} ragindex --data-dir {target} ingest {CORPUS} --json",
    }


def bench_ingest() -> dict[str, Any]:
    """(a) Cold ingest (float32, auto and int8) vs the raw float32/bf16 encode of the same chunk texts."""
    prepare_corpus()
    runs = {p: cold_ingest(p) for p in PRECISIONS}
    texts = [t for _, t in chunk_texts(data_dir("auto"))]
    raw = {
        "float32": raw_encode(texts, "float32", "texts-all"),
        "bfloat16": raw_encode(texts, "bfloat16", "texts-all"),
    }
    for precision, run in runs.items():
        base = raw["float32"]
        run["ratio_wall_vs_raw_float32_encode"] = run["wall_s"] / base["encode_s"]
        run["ratio_pipeline_vs_raw_float32_encode"] = run["pipeline_s"] / base["encode_s"]
        run["chunks_per_s"] = run["chunks"]["embedded"] / run["wall_s"]
        same = {"auto": raw["bfloat16"], "float32": raw["float32"]}.get(precision)  # no raw int8 encode to compare
        run["ratio_wall_vs_raw_same_precision"] = run["wall_s"] / same["encode_s"] if same else None
    result = {"corpus_docs": sum(1 for _ in CORPUS.open()), "chunks": len(texts), "ingest": runs, "raw_encode": raw}
    save_section("ingest", result)
    (data_dir("auto") / ".bench-ok").write_text("ok")
    return result


def ensure_ingested() -> Path:
    """The ``auto`` data dir holding the whole corpus copy (a cold ingest first when missing)."""
    prepare_corpus()
    target = data_dir("auto")
    if not (target / ".bench-ok").is_file():
        cold_ingest("auto")
        (target / ".bench-ok").write_text("ok")
    return target


def bench_noop() -> dict[str, Any]:
    """(b) No-op re-ingest of the unchanged corpus: whole-process wall time, BENCH_NOOP_REPEAT times."""
    target = ensure_ingested()
    ragindex(target, "ingest", str(CORPUS), "--json").json()  # settle (e.g. after a change run)
    runs = []
    for _ in range(env_int("BENCH_NOOP_REPEAT", 5)):
        proc = ragindex(target, "ingest", str(CORPUS), "--json")
        report = proc.json()
        runs.append(
            {
                "wall_s": proc.wall_s,
                "pipeline_s": report["duration_ms"] / 1000,
                "rss": proc.peak_rss_mb,
                "embedded": report["chunks"]["embedded"],
                "unchanged": report["documents"]["unchanged"],
            }
        )
    walls = [r["wall_s"] for r in runs]
    import_only = ragindex(target, "--help")
    result = {
        "runs": runs,
        "wall_s_median": statistics.median(walls),
        "wall_s_min": min(walls),
        "wall_s_max": max(walls),
        "pipeline_s_median": statistics.median(r["pipeline_s"] for r in runs),
        "peak_rss_mb": max(r["rss"] for r in runs),
        "embedded": max(r["embedded"] for r in runs),
        "cli_help_wall_s": import_only.wall_s,
        "target_s": 2.0,
        "command": f"ragindex --data-dir {target} ingest {CORPUS} --json",
    }
    full_dir = os.environ.get("BENCH_EVAL_DATA_DIR")
    if full_dir:  # also the whole SciFact corpus, as ingested by `ragindex eval` into set 9001
        corpus = str(SCIFACT / "corpus.jsonl")
        args = ("ingest", corpus, "--user-id", "1", "--set-id", "9001", "--json")
        procs = [ragindex(Path(full_dir), *args) for _ in range(env_int("BENCH_NOOP_REPEAT", 5))]
        reports = [p.json() for p in procs]
        result["full"] = {
            "walls": [p.wall_s for p in procs],
            "wall_s_median": statistics.median(p.wall_s for p in procs),
            "pipeline_s_median": statistics.median(r["duration_ms"] / 1000 for r in reports),
            "embedded": max(r["chunks"]["embedded"] for r in reports),
            "unchanged": reports[0]["documents"]["unchanged"],
            "peak_rss_mb": max(p.peak_rss_mb for p in procs),
            "command": f"ragindex --data-dir {full_dir} {' '.join(args)}",
        }
    save_section("noop", result)
    return result


def bench_change() -> dict[str, Any]:
    """(c) Re-ingest after changing 1% of the records' text vs the raw encode of the changed chunks."""
    target = ensure_ingested()
    ragindex(target, "ingest", str(CORPUS), "--json").json()  # in sync with the pristine copy
    before = {h for h, _ in chunk_texts(target)}
    pristine = CORPUS.read_text(encoding="utf-8")
    lines = pristine.splitlines()
    step = max(1, round(100 / env_int("BENCH_CHANGE_PERCENT", 1)))
    changed = 0
    for i in range(0, len(lines), step):
        record = json.loads(lines[i])
        record["text"] = f"Revised abstract {i}: {record['text']}"
        lines[i] = json.dumps(record, ensure_ascii=False)
        changed += 1
    try:
        CORPUS.write_text("\n".join(lines) + "\n", encoding="utf-8")
        proc = ragindex(target, "ingest", str(CORPUS), "--json")
        report = proc.json()
        new_texts = [t for _, t in chunk_texts(target, hashes=before)]
    finally:
        CORPUS.write_text(pristine, encoding="utf-8")
    restore = ragindex(target, "ingest", str(CORPUS), "--json").json()
    raw = raw_encode(new_texts, "bfloat16", "texts-changed") if new_texts else {"encode_s": 0.0, "load_s": 0.0}
    raw32 = raw_encode(new_texts, "float32", "texts-changed") if new_texts else {"encode_s": 0.0, "load_s": 0.0}
    result = {
        "records": len(lines),
        "records_changed": changed,
        "wall_s": proc.wall_s,
        "pipeline_s": report["duration_ms"] / 1000,
        "stage_ms": report["stage_ms"],
        "documents": report["documents"],
        "chunks": report["chunks"],
        "changed_chunks": len(new_texts),
        "peak_rss_mb": proc.peak_rss_mb,
        "raw_encode_changed_bf16": raw,
        "raw_encode_changed_float32": raw32,
        "restore_embedded": restore["chunks"]["embedded"],
        "command": f"ragindex --data-dir {target} ingest {CORPUS} --json  (after rewriting {changed} records)",
    }
    save_section("change", result)
    return result
