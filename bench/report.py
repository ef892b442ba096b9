"""Render docs/benchmarks.md from docs/benchmarks.json (every figure with the command that produced it)."""

from __future__ import annotations

from typing import Any

from bench import ocr_quality, parse_quality
from bench.common import REPORT, load_results, machine, now, versions


def _f(value: float, digits: int = 2) -> str:
    return f"{value:,.{digits}f}"


def _machine(m: dict[str, Any]) -> str:
    return (
        f"{m['cpu']}, {m['cores']} cores (native bf16: {'yes' if m['native_bf16'] else 'no'}), {m['ram_gib']} GiB RAM; "
        f"load average (1, 5, 15 min) at start {m['loadavg_at_start']}"
        + (f", at end {m['loadavg_at_end']}" if "loadavg_at_end" in m else "")
        + f"; `RAGINDEX_TORCH_THREADS`: {m.get('torch_threads', 'torch default')} (every child process)"
    )


def _host(m: dict[str, Any]) -> str:
    return (
        f"{m['cpu']}, {m['cores']} cores (native bf16: {'yes' if m['native_bf16'] else 'no'}), {m['ram_gib']} GiB RAM"
    )


def _same_precision(run: dict[str, Any]) -> str:
    ratio = run.get("ratio_wall_vs_raw_same_precision")
    return "-" if ratio is None else f"{_f(ratio)}x"


def _ingest(s: dict[str, Any]) -> list[str]:
    raw32, raw16 = s["raw_encode"]["float32"], s["raw_encode"]["bfloat16"]
    lines = [
        f"SciFact corpus copy: {s['corpus_docs']:,} records -> {s['chunks']:,} chunks (default recursive chunker).",
        "",
        "| run | wall s | pipeline s | chunks/s | peak RSS MiB | wall / raw fp32 encode "
        "| wall / raw encode, same precision |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for precision, run in s["ingest"].items():
        lines.append(
            f"| cold ingest, `RAGINDEX_DENSE_PRECISION={precision}` | {_f(run['wall_s'], 1)} "
            f"| {_f(run['pipeline_s'], 1)} "
            f"| {_f(run['chunks_per_s'], 1)} | {_f(run['peak_rss_mb'], 0)} "
            f"| {_f(run['ratio_wall_vs_raw_float32_encode'])}x | {_same_precision(run)} |"
        )
    for name, raw in (("float32", raw32), ("bf16 autocast", raw16)):
        lines.append(
            f"| raw `SentenceTransformer.encode`, {name} (one call, batch 64; model load {_f(raw['load_s'], 1)} s "
            f"not counted) | {_f(raw['encode_s'], 1)} | | {_f(raw['texts'] / raw['encode_s'], 1)} "
            f"| {_f(raw['peak_rss_mb'], 0)} | | |"
        )
    lines += [
        "",
        "The pipeline overhead over the raw encode of the same precision (`wall / raw encode, same precision`) "
        "covers process start, imports and model load, chunking, BM25, the truth store and the index writes, and "
        "above all batching: the pipeline encodes 64 chunks at a time in document order (so a batch pads to its "
        "longest chunk), while one raw `encode` call sorts all texts by length first. The whole corpus "
        "(5,183 records, 24,209 chunks) was cold-ingested once for the eval: see docs/evaluation.md.",
        "",
        "Stage times of the ingests (ms):",
        "",
    ]
    for precision, run in s["ingest"].items():
        stages = ", ".join(f"{k} {_f(v, 0)}" for k, v in run["stage_ms"].items())
        lines.append(f"- `{precision}`: {stages}")
    lines += ["", "Commands:", ""]
    lines += [f"- `{run['command']}`" for run in s["ingest"].values()]
    lines += [f"- `{raw32['command']}` and `{raw16['command']}` (texts: the chunks of the `auto` ingest, in order)"]
    return lines


def _noop(s: dict[str, Any]) -> list[str]:
    ok = "met" if s["wall_s_median"] <= s["target_s"] else "missed"
    full = s.get("full")
    extra = []
    if full:
        ok_full = "met" if full["wall_s_median"] <= s["target_s"] else "missed"
        extra = [
            "",
            f"Whole SciFact ({full['unchanged']:,} documents, the eval's data dir), {len(full['walls'])} runs: median "
            f"**{_f(full['wall_s_median'])} s** (min {_f(min(full['walls']))}, max {_f(max(full['walls']))}); "
            f"inside the pipeline {_f(full['pipeline_s_median'])} s; {full['embedded']} embedded; peak RSS "
            f"{_f(full['peak_rss_mb'], 0)} MiB; target: **{ok_full}**. Command: `{full['command']}`",
        ]
    return [
        f"No-op re-ingest of the same corpus, whole process (start, imports, store scan), {len(s['runs'])} runs: "
        f"median **{_f(s['wall_s_median'])} s** (min {_f(s['wall_s_min'])}, max {_f(s['wall_s_max'])}); "
        f"inside the pipeline {_f(s['pipeline_s_median'])} s; {s['embedded']} chunks embedded; "
        f"peak RSS {_f(s['peak_rss_mb'], 0)} MiB. Target <= {s['target_s']} s: **{ok}**. "
        f"(`ragindex --help` alone: {_f(s['cli_help_wall_s'])} s.)",
        "",
        f"Command: `{s['command']}`",
        *extra,
    ]


def _change(s: dict[str, Any]) -> list[str]:
    raw16, raw32 = s["raw_encode_changed_bf16"], s["raw_encode_changed_float32"]
    return [
        f"{s['records_changed']} of {s['records']:,} records rewritten (a sentence prepended to each one's text): "
        f"{s['changed_chunks']} chunks have new content (the recursive chunker re-finds the same later boundaries, "
        f"so the rest of those documents' chunks are unchanged); the ingest embedded {s['chunks']['embedded']} and "
        f"reused {s['chunks']['reused']} from the embedding cache. A change this small is encoded by the light "
        "encoder (ONNX Runtime; torch is never imported), whose session is built on the warm-up thread while the "
        "files are still being parsed, so the dense stage is the encode alone.",
        "",
        "| what | seconds |",
        "| --- | ---: |",
        f"| `ragindex ingest` after the change, whole process | {_f(s['wall_s'])} |",
        f"| inside the pipeline (report `duration_ms`) | {_f(s['pipeline_s'])} |",
        f"| raw bf16 encode of the changed chunks (model load {_f(raw16.get('load_s', 0.0))} s not counted) "
        f"| {_f(raw16['encode_s'])} |",
        f"| raw float32 encode of the changed chunks | {_f(raw32['encode_s'])} |",
        "",
        f"Peak RSS {_f(s['peak_rss_mb'], 0)} MiB. Stages (ms): "
        + ", ".join(f"{k} {_f(v, 0)}" for k, v in s["stage_ms"].items())
        + f". Restoring the original file re-embedded {s['restore_embedded']} chunks (embedding cache).",
        "",
        f"Command: `{s['command']}`",
    ]


def _query(s: dict[str, Any]) -> list[str]:
    lines = [
        "| index | points | mode | with encoding p50 / p95 ms | index only p50 / p95 ms | peak RSS MiB |",
        "| --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for name, size in s["sizes"].items():
        for mode, m in size["modes"].items():
            w, i = m["with_encoding_ms"], m["index_only_ms"]
            lines.append(
                f"| {name} | {size['points']:,} | {mode} | {_f(w['p50'])} / {_f(w['p95'])} "
                f"| {_f(i['p50'])} / {_f(i['p95'])} | {_f(size['peak_rss_mb'], 0)} |"
            )
    lines += [
        "",
        "`with encoding` is `Engine.search(top_k=10)` (query encoding, index search, fusion, backfill from the truth "
        "store); `index only` is `engine.index.search` per source on pre-encoded queries (plus RRF for hybrid). "
        "A shard is optimised (HNSW) once it holds 20,000 points, so the 10k sets use exact search and the 100k set "
        "HNSW. Synthetic sets put every chunk in one tenant's set (one shard) with random unit dense vectors; BM25 "
        "vectors come from words sampled from the SciFact corpus; queries are encoded with the real model.",
        "",
        "Commands:",
        "",
    ]
    for size in s["sizes"].values():
        lines.append(f"- `{size['command']}` ({size['queries']} SciFact test queries, top_k 10)")
        if size.get("build"):
            b = size["build"]
            lines.append(
                f"- built by `{b['command']}`: {b['chunks']['total']:,} chunks ingested in {_f(b['ingest_s'], 1)} s "
                f"(random dense vectors), peak RSS {_f(b['peak_rss_mb'], 0)} MiB"
            )
    return lines


def _light(s: dict[str, Any]) -> list[str]:
    one, change, enc, export = s["one_shot"], s["change"], s["encode"], s["export"]
    lines = [
        "The same model through ONNX Runtime (`RAGINDEX_LIGHT_ENCODER=auto`, the default) and through torch "
        "(`RAGINDEX_LIGHT_ENCODER=off`, as before), on the 1,000-record SciFact copy of section (a). Whole "
        "processes of the real CLI; medians of "
        f"{len(one['onnx']['runs'])} searches (different queries, the query LRU is per process).",
        "",
        "| what | ONNX Runtime | torch |",
        "| --- | ---: | ---: |",
        f"| one-shot `ragindex search`, whole process, s (median; min-max) | **{_f(one['onnx']['wall_s_median'])}** "
        f"({_f(one['onnx']['wall_s_min'])}-{_f(one['onnx']['wall_s_max'])}) | {_f(one['torch']['wall_s_median'])} "
        f"({_f(one['torch']['wall_s_min'])}-{_f(one['torch']['wall_s_max'])}) |",
        f"| of which `model_load` phase, ms | {_f(one['onnx']['model_load_ms_median'], 0)} | "
        f"{_f(one['torch']['model_load_ms_median'], 0)} |",
        f"| of which first query `encode`, ms | {_f(one['onnx']['encode_ms_median'], 1)} | "
        f"{_f(one['torch']['encode_ms_median'], 1)} |",
        f"| one-shot search peak RSS, MiB | {_f(one['onnx']['peak_rss_mb'], 0)} | "
        f"{_f(one['torch']['peak_rss_mb'], 0)} |",
        f"| 1% change (10 records) re-ingest, whole process, s | **{_f(change['onnx']['wall_s'])}** | "
        f"{_f(change['torch']['wall_s'])} |",
        f"| of which dense stage, ms ({change['onnx']['embedded']} / {change['torch']['embedded']} chunks) | "
        f"{_f(change['onnx']['stage_ms'].get('dense', 0.0), 0)} | "
        f"{_f(change['torch']['stage_ms'].get('dense', 0.0), 0)} |",
        f"| 1% change peak RSS, MiB | {_f(change['onnx']['peak_rss_mb'], 0)} | "
        f"{_f(change['torch']['peak_rss_mb'], 0)} |",
        "",
        f"In-process encode times ({enc['queries']} SciFact queries one at a time, median; then {enc['chunks']} "
        "chunks of the index in one call, batch 64, sorted by length):",
        "",
        "| encoder | one query, ms (median) | bulk, chunks/s |",
        "| --- | ---: | ---: |",
    ]
    lines += [
        f"| {name} | {_f(enc[name]['query_ms_median'])} | {_f(enc[name]['bulk_chunks_per_s'], 1)} |"
        for name in ("onnx", "torch-bfloat16", "torch-float32")
    ]
    bulk = {name: enc[name]["bulk_chunks_per_s"] for name in ("onnx", "torch-bfloat16", "torch-float32")}
    lines += [
        "",
        f"Bulk ingests stay on torch: bf16 autocast encoded {_f(bulk['torch-bfloat16'] / bulk['onnx'])}x as many "
        "chunks/s as ONNX Runtime (float32), which matched torch float32 "
        f"({_f(bulk['onnx'] / bulk['torch-float32'])}x); "
        "queries and small ingests go to ONNX Runtime, which needs no torch import.",
        "",
        f"Export (`ragindex models prepare`, empty cache: torch import, model load, `torch.onnx.export`): "
        f"{_f(export['export_wall_s'])} s whole process, {_f(export['onnx_mib'], 0)} MiB file; with the file "
        f"cached: {_f(export['cached_wall_s'])} s.",
        "",
        "Commands:",
        "",
        *[f"- `{c}`" for c in s["commands"].values()],
    ]
    return lines


def _pdf(s: dict[str, Any]) -> list[str]:
    text, ocr, ingest, targets = s["text"], s["ocr"], s["ingest"], s["targets"]

    def met(ok: bool) -> str:
        return "**met**" if ok else "**missed**"

    lines = [
        "| input | pages | chunks (tables) | parse s | chunk s | pages/s | peak RSS MiB | target |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    rows = [
        ("text pdf (reportlab)", text, targets["text_pages_per_s"]),
        ("scanned pdf, dense pages (~900 words of 9.5 pt; OCR at 200 dpi)", ocr, targets["ocr_pages_per_s"]),
    ]
    if "ocr_typical" in s:
        rows.append(
            ("scanned pdf, book-like pages (~510 words of 11 pt)", s["ocr_typical"], targets["ocr_pages_per_s"])
        )
    for name, run, target in rows:
        lines.append(
            f"| {name} | {run['pages']} | {run['chunks']:,} ({run['tables']}) | {_f(run['load_s'])} "
            f"| {_f(run['chunk_s'])} | {_f(run['pages_per_s'], 1)} | {_f(run['peak_rss_mb'], 0)} "
            f"| >= {target} pages/s: {met(run['pages_per_s'] >= target)} |"
        )
    rss_ok = text["peak_rss_mb"] <= targets["peak_rss_mb_300_pages"]
    lines += [
        "",
        f"Peak RSS of parsing and chunking the {text['pages']}-page pdf: {_f(text['peak_rss_mb'], 0)} MiB "
        f"(target <= {targets['peak_rss_mb_300_pages']} MiB: {met(rss_ok)}).",
        "",
        f"Whole `ragindex ingest` of the same pdf, cold: {_f(ingest['cold_wall_s'], 1)} s wall, chunking stage "
        f"(parse in the parser process + chunk) {_f(ingest['cold_chunking_ms'] / 1000, 2)} s "
        f"({_f(ingest['cold_pages_per_s_chunking_stage'], 1)} pages/s), {ingest['cold_chunks']:,} chunks, peak RSS "
        f"{_f(ingest['cold_peak_rss_mb'], 0)} MiB (the dense model included). Rewritten with the same text (new bytes, "
        f"a new creation date) and ingested again: {ingest['reparse_embedded']} chunks embedded, "
        f"{_f(ingest['reparse_wall_s'], 1)} s.",
        "",
        "Commands:",
        "",
        f"- `{text['command']}`, `{ocr['command']}` (inputs made by `bench/pdf.py`: reportlab pages with a heading, "
        "~900 words and a ruled table every tenth page; the scans are the first pages of it and of a book-like "
        "version (28 lines of 11 pt) rendered at 200 dpi)",
        f"- `{ingest['command']}`",
    ]
    return lines


def _watch(s: dict[str, Any]) -> list[str]:
    verdict = "met" if s["met"] else "missed"
    return [
        f"A note of {s['chunks_per_save']} chunks saved {s['saves']} times with new text (every chunk new, "
        f"{_f(s['embedded_per_save'], 0)} embedded per save) under a running `ragindex watch --serve`; after each "
        "save, the service's BM25 search is polled until it finds a word only the new version has.",
        "",
        "| what | seconds |",
        "| --- | ---: |",
        f"| save -> searchable, median of {s['saves']} (min / max {_f(s['min_s'])} / {_f(s['max_s'])}) "
        f"| {_f(s['median_save_to_searchable_s'])} |",
        f"| the watcher's own figure (first event -> synced), median | {_f(s['median_reported_ms'] / 1000)} |",
        f"| raw {s['encode_precision']} encode of one version's chunks (model loaded; median of 10) "
        f"| {_f(s['encode_s'], 3)} |",
        f"| target: 1 s + that encode | {_f(s['target_s'])}: {verdict} |",
        "",
        f"Debounce {s['debounce_s']} s (quiet time with a stable size and mtime before a sync). SIGTERM ended the "
        f"watcher with exit code {s['exit_code']}.",
        "",
        f"Command: `{s['command']}`",
    ]


def _records(s: dict[str, Any]) -> list[str]:
    f, u, e = s["filtered"], s["update"], s["encode"]
    lines = [
        "Filtered search: 1,000 records of 100 pre-cut chunks each (~109,000 points with their sections, random unit "
        "dense vectors, BM25 from SciFact words; the shard optimised after the bulk load, "
        f"{_f(f['build'].get('optimize_s', 0), 0)} s), `group` = record number mod 100; hybrid "
        "`Engine.search(top_k=10)` with the real query encoder, 200 SciFact queries.",
        "",
        "| filter | p50 ms | p95 ms | hits | hits not matching |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name in ("unfiltered", "1%", "50%"):
        row = f[name]
        cells = [name, _f(row["p50_ms"]), _f(row["p95_ms"]), str(row["hits"]), str(row["mismatched_hits"])]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Command: `{f['command']}`",
        "",
        f"Updates of {u['records']:,} one-chunk records (random dense vectors):",
        "",
        "| upsert | seconds | embedded | documents |",
        "| --- | ---: | ---: | --- |",
    ]
    for phase in ("first", "same", "metadata_only"):
        row = u[phase]
        docs = ", ".join(f"{k} {v:,}" for k, v in row["documents"].items())
        lines.append(f"| {phase.replace('_', '-')} | {_f(row['s'])} | {row['embedded']:,} | {docs} |")
    lines += [
        "",
        f"verify after the metadata-only update: {'clean' if u['verify_ok'] else 'NOT clean'}; hits under the old "
        f"tag: {u['old_tag_hits']}. Command: `{u['command']}`",
        "",
        f"Encoding bound: `Engine.upsert` of {e['records']:,} short records with the real model "
        f"{_f(e['upsert_s'])} s, one raw `SentenceTransformer.encode` of their texts {_f(e['raw_encode_s'])} s: "
        f"**{_f(e['ratio'])}x**. Command: `{e['command']}`",
    ]
    if (h := s.get("http")) is not None:
        lines += [
            "",
            f"HTTP batch upsert of {h['records']:,} short records ({h['text_chars']} characters, one chunk each) to "
            f"`ragindex serve`, one `POST /v1/sets/1/records` (a {h['first']['status']} job), from the request to the "
            f"job's end: {_f(h['first']['s'])} s against one raw float32 encode of the same texts "
            f"{_f(h['raw_encode_s'])} s: **{_f(h['ratio'])}x**; the same batch again: {_f(h['same']['s'])} s, "
            f"{h['same'].get('embedded')} embedded. Command: `{h['command']}`",
        ]
    return lines


def _export(s: dict[str, Any]) -> list[str]:
    b, e, i, c = s["build"], s["export"], s["import"], s["cold"]
    size = (
        ""
        if s["requested_chunks"] == 100_000
        else f" (a smaller size than the target's 100,000: {s['requested_chunks']:,} asked)"
    )
    return [
        f"SciFact's records upserted again under new keys until ~{s['requested_chunks']:,} chunks{size} "
        f"({b['records']:,} records, built in {_f(b['build_s'], 0)} s with random unit dense vectors cached under the "
        "real model's key), on SQLite + Edge; exported whole, then imported into a fresh PostgreSQL database + "
        f"qdrant-client local mode (`RAGINDEX_QDRANT_PATH={i.get('qdrant', '?')}`) by the real model's engine.",
        "",
        "| step | chunks | seconds | chunks/s | peak RSS MiB | embedded |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        f"| export (in process) | {e['chunks']:,} | {_f(e['export_s'])} | {_f(e['chunks_per_s'], 0)} | "
        f"{_f(e['peak_rss_mb'], 0)} | - |",
        f"| export (whole process) | {e['chunks']:,} | {_f(e['wall_s'])} | {_f(e['chunks'] / e['wall_s'], 0)} | "
        f"{_f(e['process_peak_rss_mb'], 0)} | - |",
        f"| import (whole process) | {e['chunks']:,} | {_f(i['wall_s'])} | {_f(e['chunks'] / i['wall_s'], 0)} | "
        f"{_f(i['process_peak_rss_mb'], 0)} | {i['embedded']} |",
        f"| cold ingest, real model ({c['records']:,} records) | {c['chunks']:,} | {_f(c['cold_s'])} | "
        f"{_f(c['chunks_per_s'], 1)} | {_f(c['peak_rss_mb'], 0)} | {c['chunks']:,} |",
        "",
        f"Archive: {e['bytes'] / 2**20:,.1f} MiB. Import stages (ms): "
        + ", ".join(f"{k} {_f(v, 0)}" for k, v in i["stage_ms"].items())
        + f"; verify {'clean' if i['verify_ok'] else 'NOT clean'}; the model "
        f"{'was' if i['model_loaded'] else 'was not'} loaded. A cold ingest of the exported corpus at the measured "
        f"rate: {_f(s['cold_estimate_s'], 0)} s; the import took **{_f(s['import_vs_cold'], 3)}x** of it.",
        "",
        f"Commands: `{e['command']}`; `{i['command']}`; `{c['command']}` (size knobs `BENCH_EXPORT_CHUNKS`, "
        "`BENCH_EXPORT_COLD_RECORDS`; `BENCH_POSTGRES` names the server).",
    ]


def _peers(s: dict[str, Any]) -> list[str]:
    ing, q, http = s["ingest"], s["query"], s["http"]
    tools = ("ragindex", "chroma", "langchain")
    steps = (
        ("cold", "cold ingest"),
        ("noop", "no-op (same file)"),
        ("modify", "1% modified"),
        ("delete", "1% deleted"),
    )

    def cell(tool: str, step: str) -> str:
        row = ing.get(tool, {}).get(step)
        if row is None:
            return "- (no change detection: nothing to run)"
        embedded = row.get("embedded")
        return f"{_f(row['wall_s'])} s, {_f(row['peak_rss_mb'], 0)} MiB" + (
            f", {embedded:,} embedded" if isinstance(embedded, int) else ""
        )

    lines = [
        f"The first {s['records']:,} SciFact records, the same model (the shipped all-MiniLM-L6-v2), chunks of 512 "
        "characters with 64 of overlap; every ingest a whole child process. Chroma is told which records changed "
        "(it has no change detection); LangChain's `index()` (SQLRecordManager over the same Chroma) gets the whole "
        "file each time. Load average (1 min) at the start of each part: "
        + ", ".join(_f(x, 1) for x in s["load_1min"])
        + f"; {_f(s['wall_s'], 0)} s in all.",
        "",
        "| step | ragindex | Chroma (PersistentClient) | LangChain index() + Chroma |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| {label} | " + " | ".join(cell(t, step) for t in tools) + " |" for step, label in steps]
    ours, chroma = q["ragindex"], q["chroma_dense"]
    lines += [
        "",
        "| query (in process, 100 queries, encode included) | p50 ms | mean ms |",
        "| --- | ---: | ---: |",
        f"| ragindex hybrid | {_f(ours['hybrid']['p50_ms'])} | {_f(ours['hybrid']['mean_ms'])} |",
        f"| ragindex dense | {_f(ours['dense']['p50_ms'])} | {_f(ours['dense']['mean_ms'])} |",
        f"| Chroma dense | {_f(chroma['p50_ms'])} | {_f(chroma['mean_ms'])} |",
        "",
        "| HTTP, loopback | clients | searches/s | p50 ms | p99 ms | errors |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    names = {  # like with like: query vectors sent, then query texts (whoever encodes them)
        "ragindex_dense_vector": "`ragindex serve`, dense, query vector sent",
        "chroma_dense": "`chroma run`, dense, query vector sent",
        "ragindex_hybrid": "`ragindex serve`, hybrid, query text (the service encodes it)",
        "chroma_dense_text": "`chroma run`, dense, query text (its client encodes it)",
    }
    for key in [*(k for k in names if k in http), *(k for k in http if k not in names)]:
        for run in http[key]:
            lines.append(
                f"| {names.get(key, key)} | {run['clients']} | {_f(run['searches_per_s'], 1)} | "
                f"{_f(run['p50_ms'] or 0, 1)} | {_f(run['p99_ms'] or 0, 1)} | {run['errors']} |"
            )
    lines += ["", f"Command: `{s['command']}` (knobs `BENCH_PEERS_DOCS`, `BENCH_PEERS_SECONDS`)."]
    return lines


def _read_path(s: dict[str, Any]) -> list[str]:
    cpu, wall = s["cpu_ms_per_search"], s["wall_ms_p50"]
    rows = [
        f"| {name} | **{_f(cpu[name])}** | {_f(s['cpu_ms_min'][name])} | {_f(wall[name])} | "
        + ", ".join(_f(r["cpu_ms_per_search"]) for r in s["per_run"][name])
        + " |"
        for name in cpu
    ]
    load = s["load_1min"]
    return [
        f"`Engine.search` (hybrid, top 10, default settings: dbsf, group by section, section context) over the SciFact "
        f"copy of (a), {s['queries']} queries x {s['rounds']} passes per child process, query vectors cached (the "
        f"engine's query cache, filled by a first pass): the index searches, fusion, backfill, hits and context, "
        f"not the ONNX encode. CPU time of the whole process (`time.process_time`, every thread) per search, the "
        f"median of {s['runs']} child processes; `baseline` is another checkout's `src` (`BENCH_BASELINE_SRC`) run "
        f"alternately in the same run. Load (1 min) {_f(load['min'], 1)}-{_f(load['max'], 1)}.",
        "",
        "| code | CPU ms a search (median) | best run | wall p50 ms | CPU ms of each run |",
        "| --- | ---: | ---: | ---: | --- |",
        *rows,
        "",
        f"Target (issue 27): at most {_f(s['target_ms'], 1)} ms of CPU a search in process. Command: "
        f"`{s['command']}` (knobs `BENCH_READ_PATH_QUERIES`, `BENCH_READ_PATH_ROUNDS`, `BENCH_READ_PATH_RUNS`).",
    ]


TARGETS = REPORT.parent / "targets.md"

SECTIONS = {
    "ingest": ("(a) Cold ingest vs raw encode", _ingest),
    "noop": ("(b) No-op re-ingest", _noop),
    "change": ("(c) Re-ingest after a 1% change", _change),
    "query": ("(d) Query latency", _query),
    "pdf": ("(e) PDF parsing and OCR", _pdf),
    "light": ("(f) Light query encoder: ONNX Runtime vs torch", _light),
    "watch": ("(g) Watch: file saved -> searchable", _watch),
    "records": ("(h) Records and metadata filters", _records),
    "parse-quality": ("Parse quality: tables against ground truth, OCR scans (issue 26)", parse_quality.render),
    "ocr-quality": ("OCR quality: reading order, low-resolution and Chinese scans (issue 26)", ocr_quality.render),
    "export": ("(i) Export and import (moving to servers)", _export),
    "peers": ("(j) Side by side: ragindex, Chroma, LangChain index()", _peers),
    "read-path": ("(k) Read path: CPU a search in process", _read_path),
}


def render() -> str:
    results = load_results().get("sections", {})
    lines = [
        "# Benchmarks",
        "",
        "Produced by `make bench` (`python -m bench.run [ingest] [noop] [change] [query] [pdf] [light] [watch] "
        "[records] [parse-quality] [ocr-quality] [export] [peers] [read-path] [oneshot]`); raw figures "
        "in `docs/benchmarks.json`. Every timing is wall-clock; CLI figures are child processes of the real "
        "`ragindex` (process start, imports and model load included) and peak RSS comes from `wait4`'s rusage "
        "(or `VmHWM` for in-process measurements).",
        "",
        f"Rendered {now()} on {_host(machine())}.",
        "",
        "The figures below were measured on a 2-core machine shared with other workloads (test suites of other "
        "engineers); each section gives the load average around its run. Treat absolute times as noisy upper "
        "bounds, and compare figures of the same section.",
        "",
        "Packages: " + ", ".join(f"{k} {v}" for k, v in versions().items()) + ".",
        "",
        "Settings: the defaults (all-MiniLM-L6-v2 shipped model, recursive chunker 512/64 chars, BM25 on, 4 buckets, "
        "HNSW built once a shard has >= 20,000 points). Size knobs: `BENCH_INGEST_DOCS`, `BENCH_NOOP_REPEAT`, "
        "`BENCH_CHANGE_PERCENT`, `BENCH_QUERIES`, `BENCH_QUERY_SIZES`, `BENCH_DIR`, `BENCH_SCIFACT`.",
        "",
    ]
    for key, (title, fn) in SECTIONS.items():
        lines += [f"## {title}", ""]
        section = results.get(key)
        if section is None:
            lines += ["Not run yet.", ""]
            continue
        lines += [f"Run {section['date']} on {_machine(section['machine'])}.", "", *fn(section), ""]
    if TARGETS.exists():  # the hand-kept summary of every target, including the eval and service ones
        lines += [TARGETS.read_text(encoding="utf-8").rstrip(), ""]
    return "\n".join(lines).rstrip() + "\n"


def write() -> None:
    REPORT.write_text(render(), encoding="utf-8")
