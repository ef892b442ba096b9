"""docs list / docs show: which documents are there, which failed and why, where each one's chunks stand.

``docs show ID --parsed`` prints the markdown the document's current version was parsed into (its parsed artifact,
kept in the truth store).
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Group
from rich.table import Table
from rich.text import Text

from ragindex.cli.app import app, console, emit_json, engine_for, guarded
from ragindex.cli.render import clean
from ragindex.paging import DEFAULT_LIMIT, MAX_LIMIT

if TYPE_CHECKING:
    from ragindex.pipeline.inspection import DocumentDetail, DocumentPage

docs_app = typer.Typer(
    help="Inspect documents: list them by set and status, show one with its stages and chunks.", no_args_is_help=True
)
app.add_typer(docs_app, name="docs")

Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


class DocStatus(StrEnum):
    """The processing statuses ``docs list --status`` filters by."""

    PROCESSING = "PROCESSING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"


@docs_app.command("list")
def docs_list(
    user_id: Annotated[int | None, typer.Option("--user-id", help="Only this tenant (default: every tenant).")] = None,
    set_id: Annotated[int | None, typer.Option("--set-id", help="Only this set (default: every set).")] = None,
    status: Annotated[
        DocStatus | None, typer.Option("--status", case_sensitive=False, help="Only documents with this status.")
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=MAX_LIMIT, help="Most documents to show.")
    ] = DEFAULT_LIMIT,
    cursor: Annotated[
        str | None, typer.Option("--cursor", help="Continue after the page that printed this cursor.")
    ] = None,
    as_json: Json = False,
) -> None:
    """List documents by id with their status, chunk count and error (FAILED ones show why)."""

    def body() -> None:
        with engine_for() as engine:
            page = engine.documents(
                user_id=user_id, set_id=set_id, status=status.value if status else None, cursor=cursor, limit=limit
            )
        if as_json:
            emit_json(page.to_dict())
        else:
            console.print(documents_table(page))

    guarded(body)


@docs_app.command("show")
def docs_show(
    doc_id: Annotated[int, typer.Argument(help="The document id (`ragindex docs list` shows them).")],
    chunks: Annotated[
        bool, typer.Option("--chunks", help="Also list every chunk and section with its statuses.")
    ] = False,
    parsed: Annotated[
        bool,
        typer.Option(
            "--parsed",
            help="Print the markdown the document's current version was parsed into (with --json: add it, with its "
            "layout blocks, as `parsed`).",
        ),
    ] = False,
    as_json: Json = False,
) -> None:
    """Show a document: source, hashes, status and error, each stage of its last run, and its chunks' statuses.

    With --parsed, print the markdown its current version was parsed into instead (exit 7 when it has none).
    """

    def body() -> None:
        from ragindex.pipeline.inspection import parsed_dict

        with engine_for() as engine:
            artifact = engine.parsed_document(doc_id) if parsed else None
            detail = engine.document(doc_id, chunks=chunks) if as_json or not parsed else None
        if as_json and detail is not None:
            emit_json({**detail.to_dict(), **({"parsed": parsed_dict(artifact)} if artifact is not None else {})})
        elif artifact is not None:
            # unstyled, so that `> doc.md` writes the markdown; control characters escaped as in every human
            # output (a parsed file could carry terminal escapes), --json keeps them as they are
            text = clean(artifact.text, multiline=True)
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
        elif detail is not None:
            console.print(document_view(detail))

    guarded(body)


def documents_table(page: DocumentPage) -> Group:
    """One row per document (a FAILED one with its error under its file); the next page's cursor if any."""
    table = Table(title=f"documents ({len(page.documents)} shown)")
    for name in ("doc_id", "user/set", "status", "chunks"):
        table.add_column(name, no_wrap=True)
    table.add_column("file / error", ratio=1)
    style = {"FAILED": "red", "PROCESSING": "yellow", "SUCCESS": "green"}
    for d in page.documents:
        where = Text(clean(d.filename))
        if d.error:
            where.append("\n" + _clip(d.error, 200), style="red")
        table.add_row(
            str(d.doc_id),
            f"{d.user_id}/{d.set_id}",
            Text(d.status, style=style.get(d.status, "")),
            str(d.chunk_count),
            where,
        )
    parts: list[Table | Text] = [table]
    if page.next_cursor:
        parts.append(Text(f"more documents: add --cursor {page.next_cursor}", style="dim"))
    return Group(*parts)


def document_view(detail: DocumentDetail) -> Group:
    """The document's fields and last run, its stages, its chunk counts per unit and kind, and its rows when asked."""
    data = detail.to_dict()
    doc, run = data["document"], data["run"]
    fields = Table.grid(padding=(0, 2))
    fields.add_column(style="bold", no_wrap=True)
    fields.add_column()
    rows: list[tuple[str, object]] = [
        ("doc_id", doc["doc_id"]),
        ("user / set", f"{doc['user_id']} / {doc['set_id']}"),
        *((key, doc[key]) for key in ("filename", "source", "status", "error", "parser")),
        ("size", f"{doc['size']} bytes"),
        *((key.replace("_", " "), doc[key]) for key in ("file_hash", "content_hash")),
        ("chunks", doc["chunk_count"]),
        ("updated", doc["updated_at"]),
    ]
    if run is not None:
        job = f", job {run['job_id']}" if run["job_id"] else ""
        total = f", {run['total_ms']:.1f} ms" if run["total_ms"] is not None else ""
        rows.append(("last run", f"#{run['run_id']}{job}: {run['status']}, started {run['started_at']}{total}"))
    else:
        rows.append(("last run", "none recorded"))
    for label, value in rows:
        fields.add_row(label, _cell(value))
    parts: list[Table | Text] = [fields, _stages_table(detail), _counts(detail)]
    if detail.chunks is not None:
        parts.append(_chunks_table(data["chunks"]))
    return Group(*parts)


def _clip(value: object, width: int) -> str:
    text = clean(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _cell(value: object) -> Text:
    return Text("-" if value is None or value == "" else clean(value))


def _stages_table(detail: DocumentDetail) -> Table:
    table = Table("stage", "status", "ms", "error", title="stages of the last run")
    for s in detail.stages:
        duration = f"{s.duration_ms:.1f}" if s.duration_ms is not None else "-"
        table.add_row(s.stage, _cell(s.status), duration, _cell(s.error))
    return table


def _counts(detail: DocumentDetail) -> Table | Text:
    if not detail.counts:
        return Text("no chunks", style="dim")
    table = Table("unit", "kind", "rows per status", title="chunks now")
    for unit, kinds in sorted(detail.counts.items()):
        for kind, counts in kinds.items():
            table.add_row(unit, kind, ", ".join(f"{status} {n}" for status, n in sorted(counts.items())))
    return table


def _chunks_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="rows (c: chunk, s: section)")
    table.add_column("#", no_wrap=True)
    table.add_column("chunk_id / last error or text", ratio=1)
    table.add_column("status", no_wrap=True)
    table.add_column("tries", no_wrap=True)
    for row in rows:
        statuses = "\n".join(f"{kind} {status}" for kind, status in row["status"].items() if status)
        cell = Text(str(row["chunk_id"]) + "\n")
        error = row["last_error"]
        cell.append(_clip(error, 200), style="red") if error else cell.append(_clip(row["preview"], 80), style="dim")
        table.add_row(f"{str(row['unit'])[0]}{row['index']}", cell, statuses, str(row["attempts"]))
    return table
