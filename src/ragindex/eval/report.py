"""Render eval results: a rich table for people, a JSON list for scripts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from ragindex.eval.reference import RecheckReport
from ragindex.eval.runner import REPORTED, ModeResult

__all__ = ["delta_table", "eval_json", "eval_table", "markdown_table", "recheck_table"]

BASELINE_PREFIX = "baseline:"

_HEADERS = {"ndcg@10": "nDCG@10", "recall@10": "recall@10", "recall@100": "recall@100", "mrr@10": "MRR@10"}


def eval_json(results: Sequence[ModeResult]) -> list[dict[str, Any]]:
    """``[{"mode", "ndcg@10", "recall@10", "recall@100", "mrr@10", "latency_ms": {"p50", "p95"}, "units", ...}]``."""
    return [result.to_dict() for result in results]


def eval_table(results: Sequence[ModeResult], title: str = "eval") -> Table:
    """One row per mode: the metrics and the query latency percentiles."""
    queries = results[0].queries if results else 0
    table = Table(title=f"{title} ({queries} queries)")
    table.add_column("mode")
    for name in REPORTED:
        table.add_column(_HEADERS[name], justify="right")
    table.add_column("p50 ms", justify="right")
    table.add_column("p95 ms", justify="right")
    table.add_column("units", overflow="fold")
    previous = ""
    for result in results:
        if result.mode.startswith(BASELINE_PREFIX) and not previous.startswith(BASELINE_PREFIX):
            table.add_section()
        previous = result.mode
        table.add_row(
            result.mode,
            *(f"{result.metrics[name]:.4f}" for name in REPORTED),
            *(f"{result.latency_ms[p]:.1f}" if p in result.latency_ms else "-" for p in ("p50", "p95")),
            " ".join(f"{source}:{unit}" for source, unit in result.units.items()),
        )
    return table


def delta_table(results: Sequence[ModeResult]) -> Table | None:
    """With ``--baseline``: per mode, its difference from its baseline counterpart (+ is the engine ahead)."""
    compared = [r for r in results if r.baseline is not None]
    if not compared:
        return None
    table = Table(title="against the whole-document baseline (engine - baseline)")
    table.add_column("mode")
    table.add_column("baseline")
    for name in REPORTED:
        table.add_column(f"Δ {_HEADERS[name]}", justify="right")
    for result in compared:
        table.add_row(result.mode, result.baseline, *(f"{result.delta[name]:+.4f}" for name in REPORTED))
    return table


def markdown_table(results: Sequence[ModeResult] | Sequence[dict[str, Any]]) -> str:
    """The results as a Markdown table (docs); accepts results or their JSON entries."""
    rows = [r.to_dict() if isinstance(r, ModeResult) else r for r in results]
    head = "| mode | " + " | ".join(_HEADERS[n] for n in REPORTED) + " | p50 ms | p95 ms |"
    rule = "| --- |" + " ---: |" * (len(REPORTED) + 2)
    body = [
        f"| {r['mode']} | "
        + " | ".join(f"{r[n]:.4f}" for n in REPORTED)
        + "".join(f" | {r['latency_ms'][p]:.1f}" if p in r["latency_ms"] else " | -" for p in ("p50", "p95"))
        + " |"
        for r in rows
    ]
    return "\n".join([head, rule, *body])


def recheck_table(report: RecheckReport, title: str = "reference") -> Table:
    """One row per pinned query (overlap@k, score shift), then the means against their limits."""
    verdict = "ok" if report.ok else "DRIFTED"
    table = Table(title=f"{title}: {verdict} ({len(report.queries)} queries)")
    table.add_column("query")
    for name in ("overlap@k", "found", "score shift"):
        table.add_column(name, justify="right")
    for check in report.queries:
        shift = "-" if check.score_shift is None else f"{check.score_shift:.2%}"
        table.add_row(check.query, f"{check.overlap:.2f}", f"{check.found}/{check.pinned}", shift)
    table.add_section()
    table.add_row(
        f"mean (limits: overlap >= {report.min_overlap}, shift <= {report.allowed_shift:.0%})",
        f"{report.overlap:.2f}",
        "",
        f"{report.score_shift:.2%} (max {report.max_score_shift:.2%})",
    )
    if report.fingerprint_pinned != report.fingerprint_now:
        table.caption = f"dense model: pinned with {report.fingerprint_pinned}, now {report.fingerprint_now}"
    return table
