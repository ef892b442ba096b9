"""Rich renderings of command results (tables for people; --json is for scripts).

Terminal safety: text that comes from documents, file names, errors or the user passes through
:func:`clean` before it reaches the terminal, and into rich as ``Text`` (never as markup), so a file
cannot clear the screen, retitle the window, hide a line or break the table. JSON output is not
escaped: it is the exact data (JSON escapes control characters itself).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from ragindex.types import VectorKind

if TYPE_CHECKING:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from ragindex.pipeline.sync import IngestReport
    from ragindex.pipeline.verify import VerifyReport
    from ragindex.types import Hit, SearchResult


# bidirectional embeddings, overrides and isolates: they reorder what is shown ("txt.exe" shown as "exe.txt")
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))


@cache
def _escapes(multiline: bool) -> dict[int, str]:
    table = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
    table.update({ord("\n"): "\\n", ord("\t"): "\\t", ord("\r"): "\\r"})
    table.update({c: f"\\u{c:04x}" for c in _BIDI})
    if multiline:
        for keep in "\n\t":
            del table[ord(keep)]
    return table


def clean(value: object, *, multiline: bool = False) -> str:
    r"""``value`` as text that is safe to print on a terminal: control characters become visible escapes.

    C0 and C1 control characters (ESC, NUL, BEL, CR, ...), DEL and the bidirectional formatting
    characters are written as ``\x1b`` / ``\u202e``; a line break and a tab too, unless ``multiline``.
    Every other character, including any non-Latin script and emoji, is kept.
    """
    return str(value).translate(_escapes(multiline))


def cell(value: object, style: str = "") -> Text:
    """A table cell or a line of human output: :func:`clean` text that rich never reads as markup."""
    from rich.text import Text

    return Text(clean(value), style=style)


def ingest_table(report: IngestReport) -> Group:
    """Documents and chunks of an ingest, then every failed document with its error, and notes."""
    from rich.console import Group
    from rich.table import Table

    table = Table(title=f"ingest ({report.duration_ms / 1000:.2f} s)", show_header=True)
    table.add_column("documents")
    table.add_column("n", justify="right")
    table.add_column("chunks")
    table.add_column("n", justify="right")
    docs = list(report.documents.items())
    chunks = list(report.chunks.items())
    for i in range(max(len(docs), len(chunks))):
        d = docs[i] if i < len(docs) else ("", "")
        c = chunks[i] if i < len(chunks) else ("", "")
        table.add_row(d[0], str(d[1]), c[0], str(c[1]))
    parts: list[Any] = [table]
    parts += [cell(f"failed: {f.get('source', '?')}: {f.get('error', '')}", "red") for f in report.failures]
    if report.chunks.get("failed"):
        failed = report.chunks["failed"]
        parts.append(cell(f"failed: {failed} chunks could not be indexed; `ragindex repair` retries them", "red"))
    parts += [cell(f"note: {note}", "yellow") for note in report.notes[:20]]
    return Group(*parts)


def _kind(hit: Hit) -> str:
    """``(table)``, ``(ocr 0.95)``, ...: what a hit is made of when it is not plain text."""
    if hit.chunk_type == "text":
        return ""
    confidence = hit.metadata.get("ocr_confidence")
    label = "ocr" if hit.chunk_type == "ocr_text" else hit.chunk_type
    return f"({label} {confidence:.2f})" if isinstance(confidence, float) else f"({label})"


def search_table(query: str, result: SearchResult) -> Group:
    """Ranked hits, one block each: rank, score, source and location, per-source ranks, then the text."""
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = [cell(f"{result.mode} search: {query}", "bold")]
    for hit in result.hits:
        where = " ".join(
            part
            for part in (
                f"p.{hit.page}" if hit.page else "",
                f"§ {clean(hit.section)}" if hit.section else "",
                f"l.{hit.start_line}-{hit.end_line}" if hit.start_line else "",
                _kind(hit),
            )
            if part
        )
        per_source = " · ".join(
            [f"{k} #{v.rank} {v.score:.3f}" for k, v in hit.scores.items()]
            + [f"{k} skipped: {reason}" for k, reason in hit.skipped.items()]
        )
        head = Text()
        head.append(f"{hit.rank:>2}. ", style="bold")
        head.append(f"{hit.score:.4f}  ", style="cyan")
        head.append(clean(hit.filename), style="bold green")
        head.append(clean(f"  {where}  [{per_source}]"), style="dim")
        parts += [head, *_hit_body(hit)]
    latency = "  ".join(f"{k} {v:.1f} ms" for k, v in result.latency_ms.items())
    parts.append(Text(f"{len(result.hits)} hits · {latency}", style="dim"))
    parts += [cell(f"warning: {warning}", "yellow") for warning in result.warnings]
    parts += [cell(f"degraded: {source} left out: {reason}", "yellow") for source, reason in result.degraded.items()]
    return Group(*parts)


def _hit_body(hit: Hit) -> list[Any]:
    """A hit's text (the first 300 characters on one line), or its whole context with the text in bold."""
    from rich.padding import Padding
    from rich.text import Text

    out: list[Any] = []
    if hit.context is None:
        snippet = " ".join(hit.text.split())
        out.append(cell("    " + snippet[:300] + ("…" if len(snippet) > 300 else "")))
    else:
        body = Text()
        at = hit.context.find(hit.text)
        if at < 0:
            body.append(clean(hit.context, multiline=True))
        else:
            body.append(clean(hit.context[:at], multiline=True))
            body.append(clean(hit.text, multiline=True), style="bold")
            body.append(clean(hit.context[at + len(hit.text) :], multiline=True))
        out.append(Padding(body, (0, 0, 0, 4)))
    if hit.merged:
        merged = ", ".join(f"#{m.rank} {m.score:.4f} {m.chunk_id[:12]}" for m in hit.merged)
        out.append(cell(f"    + {len(hit.merged)} merged: {merged}", "dim"))
    return out


def status_table(report: dict[str, Any]) -> Table:
    """Per set: documents per status and chunks per status of each vector kind."""
    from rich.table import Table

    table = Table(title="status")
    for name in ("user", "set", "documents", *VectorKind):
        table.add_column(name)

    def fmt(counts: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "-"

    for entry in report["sets"]:
        chunks = entry["chunks"]
        table.add_row(
            str(entry["user_id"]),
            str(entry["set_id"]),
            fmt(entry["documents"]),
            *(fmt(chunks[kind]) for kind in VectorKind),
        )
    return table


def scores_table(report: list[dict[str, Any]]) -> Table:
    """The score-drift watch: per source and fingerprint, the current window, the reference and the shift."""
    from rich.table import Table

    table = Table(title="search scores (top-1 p10 / p50 / p90; top-10 p50)")
    for name in ("source", "fingerprint", "window", "searches", "top-1", "top-10 p50", "reference p50", "shift"):
        table.add_column(name)

    def num(value: float | None) -> str:
        return "-" if value is None else f"{value:.4g}"

    for entry in report:
        current, reference = entry["current"], entry["reference"]
        top1 = current["top1"]
        shift = entry["shift"]
        table.add_row(
            cell(entry["source"]),
            cell(entry["fingerprint"]),
            f"{current['window']} {current['state'].lower()}",
            str(current["queries"]),
            f"{num(top1['p10'])} / {num(top1['p50'])} / {num(top1['p90'])}",
            num(current["top10"]["p50"]),
            num(reference["top1"]["p50"]) if reference else "-",
            cell("-" if shift is None else f"{shift:+.1%}", "bold red" if entry["drift"] else ""),
        )
    return table


def verify_table(report: VerifyReport) -> Table:
    """One row per bucket: expected vs present, missing, orphans, unfinished, sections drifted from their chunks."""
    from rich.table import Table

    table = Table(title=f"verify {report.collection or '(empty)'}: {'OK' if report.ok else 'MISMATCH'}")
    for name in ("bucket", "expected", "in index", "missing", "orphans", "unfinished", "drifted", "ok"):
        table.add_column(name)
    for b in report.buckets:
        missing = ", ".join(f"{k} {len(v)}" for k, v in b.missing.items() if v) or "0"
        unfinished = ", ".join(f"{k} {v}" for k, v in b.unfinished.items() if v) or "0"
        table.add_row(
            str(b.bucket),
            str(b.expected),
            str(b.present),
            missing,
            str(len(b.orphans)),
            unfinished,
            str(len(b.drifted)),
            "yes" if b.ok else "NO",
        )
    return table
