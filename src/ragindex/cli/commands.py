"""ingest, search, status, verify."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ragindex.cli.app import app, console, emit_json, engine_for, guarded
from ragindex.cli.render import ingest_table, scores_table, search_table, status_table, verify_table
from ragindex.cli.signals import stops
from ragindex.errors import EXIT_MISMATCH, EXIT_PARTIAL, ConfigurationError, InputError

if TYPE_CHECKING:
    from ragindex.pipeline.sync import IngestReport

UserId = Annotated[int, typer.Option("--user-id", help="Tenant (positive integer).")]
SetId = Annotated[int, typer.Option("--set-id", help="Document set (positive integer).")]
AllowMassDelete = Annotated[
    bool,
    typer.Option(
        "--allow-mass-delete",
        help="Remove the documents of gone files even when they are more than RAGINDEX_MAX_REMOVE_FRACTION "
        "of a folder's documents.",
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


@app.command()
def ingest(
    # str, not Path: typer would turn "" into "." (the current directory), which the engine must refuse
    paths: Annotated[list[str], typer.Argument(help="Files and folders to sync.")],
    user_id: UserId = 1,
    set_id: SetId = 1,
    chunker: Annotated[str | None, typer.Option("--chunker", help="fixed, recursive or structure.")] = None,
    full: Annotated[bool, typer.Option("--full", help="Re-parse and re-chunk every given file.")] = False,
    keep_missing: Annotated[
        bool, typer.Option("--keep-missing", help="Keep documents whose files are gone from a synced folder.")
    ] = False,
    allow_mass_delete: AllowMassDelete = False,
    _resume: Annotated[
        bool, typer.Option("--resume", hidden=True, help="Ignored: failed documents are always parsed again.")
    ] = False,
    metadata: Annotated[
        list[str] | None,
        typer.Option(
            "--metadata",
            help="KEY=VALUE given to every document (repeatable): a JSON number, boolean or string is that value "
            "(year=2024 is a number), anything else the text as given. Over the fields derived from the file.",
        ),
    ] = None,
    as_records: Annotated[
        bool,
        typer.Option(
            "--as-records",
            help="Upsert each record of the .jsonl/.ndjson/.json files under its own key (Engine.upsert) instead of "
            "syncing the files. Implied by --key-field, --text-field, --title-field and --metadata-fields.",
        ),
    ] = False,
    key_field: Annotated[
        str | None, typer.Option("--key-field", help="Records: the field holding each record's key. Default: _id.")
    ] = None,
    text_field: Annotated[
        list[str] | None,
        typer.Option(
            "--text-field",
            help="Records: the field(s) holding the text, joined by a blank line (repeatable or comma-separated). "
            "Default: title,text.",
        ),
    ] = None,
    title_field: Annotated[
        str | None,
        typer.Option("--title-field", help="Records: the field holding the title ('' for none). Default: title."),
    ] = None,
    metadata_fields: Annotated[
        str | None,
        typer.Option(
            "--metadata-fields",
            help="Records: the fields kept as metadata, comma-separated. Default: every other field holding a "
            "string, a number or a boolean.",
        ),
    ] = None,
    as_json: Json = False,
) -> None:
    """Sync files and folders into a set: unchanged files are skipped, only new chunks are embedded.

    Exit code 8 (partial) when a document or a chunk failed: the failures are listed (and under
    "failures" in --json), everything else is indexed. A file that fails (unreadable, unparsable, binary,
    over a limit) is a FAILED document, and the next ingest parses it again. Ctrl-C or SIGTERM stops after
    the current file or batch: exit code 130 or 143, and the same command finishes the work.

    Records (--as-records, or any of --key-field, --text-field, --title-field, --metadata-fields): each object of
    the given .jsonl/.ndjson/.json files is upserted as a record named by its key (not <path>#<id>), so the same
    key from another file or an API call updates the same document; records missing from the file are kept (delete
    them with `ragindex delete --key`). The defaults read BEIR's corpus.jsonl. A line that cannot be a record fails
    alone (exit code 8); a metadata value whose type disagrees with another record's or with the set's is exit
    code 2 before anything is written. Without these options a records file is synced as a file: its documents are
    <path>#<id> and records removed from it are removed.
    """
    records_mode = as_records or any(
        option is not None for option in (key_field, text_field, title_field, metadata_fields)
    )

    def body() -> IngestReport:
        from ragindex.cli.record_ingest import parse_metadata_options

        extra = parse_metadata_options(metadata)
        if records_mode:
            return _ingest_records(paths, extra, user_id=user_id, set_id=set_id)
        options: dict[str, Any] = {
            "user_id": user_id,
            "set_id": set_id,
            "full": full,
            "keep_missing": keep_missing,
            "allow_mass_delete": allow_mass_delete,
            "exclude": _blob_dir(),
            "metadata": extra or None,
        }
        with engine_for(chunker=chunker) as engine, stops.safe_points():
            if as_json:
                report = engine.ingest(paths, **options, progress=lambda _event, _data: stops.checkpoint())
                emit_json(report.to_dict())
                return report
            with _IngestProgress() as progress:
                report = engine.ingest(paths, **options, progress=progress.update)
            console.print(ingest_table(report), soft_wrap=True)  # one line per failure, whatever its length
        return report

    def _ingest_records(given: list[str], extra: dict[str, Any], *, user_id: int, set_id: int) -> IngestReport:
        from ragindex.cli.record_ingest import ingest_records, record_fields

        sync_only = {"--full": full, "--keep-missing": keep_missing, "--allow-mass-delete": allow_mass_delete}
        if given_sync := [name for name, on in sync_only.items() if on]:
            raise InputError(f"{', '.join(given_sync)} syncs files; it does not go with --as-records")
        fields = record_fields(key_field, text_field, title_field, metadata_fields)
        with engine_for(chunker=chunker) as engine, stops.safe_points():
            report = ingest_records(
                engine,
                given,
                fields,
                metadata=extra,
                user_id=user_id,
                set_id=set_id,
                progress=lambda _event, _data: stops.checkpoint(),
                checkpoint=stops.checkpoint,
            )
        if as_json:
            emit_json(report.to_dict())
        else:
            console.print(ingest_table(report), soft_wrap=True)
        return report

    report = guarded(body)
    if ingest_failed(report):
        raise typer.Exit(EXIT_PARTIAL)


def ingest_failed(report: IngestReport) -> bool:
    """Whether some document or chunk of the ingest failed (exit code 8)."""
    return bool(report.failures) or report.documents.get("failed", 0) > 0 or report.chunks.get("failed", 0) > 0


def _blob_dir() -> list[Path]:
    """The service's blob dir when RAGINDEX_BLOB_DIR puts it outside the data dir (discovery never enters it)."""
    from pydantic import ValidationError as PydanticValidationError

    from ragindex.service.settings import ServiceSettings

    try:
        blob_dir = ServiceSettings().blob_dir
    except PydanticValidationError as exc:
        raise ConfigurationError(f"invalid service settings: {exc}") from exc
    return [blob_dir] if blob_dir is not None else []


class _IngestProgress:
    """A rich progress display fed by the pipeline's progress events (files, chunks, embeddings/s)."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            console=console.get(),
            transient=True,
        )
        self.tasks: dict[str, Any] = {}
        self.started: dict[str, float] = {}

    def __enter__(self) -> _IngestProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    def update(self, event: str, data: dict[str, Any]) -> None:
        """Show a progress event; every event is a safe point to stop at (no claim is held)."""
        self._show(event, data)
        stops.checkpoint()

    def _show(self, event: str, data: dict[str, Any]) -> None:
        if event == "discovered":
            self.tasks["files"] = self.progress.add_task("files", total=data["files"], rate="")
        elif event == "file" and "files" in self.tasks:
            self.progress.advance(self.tasks["files"])
        elif event == "stage":
            kind = data["kind"]
            self.tasks[kind] = self.progress.add_task(f"{kind} chunks", total=data["chunks"], rate="")
            self.started[kind] = time.perf_counter()
        elif event == "indexed":
            kind = data["kind"]
            task = self.tasks[kind]
            self.progress.advance(task, data["n"])
            done = self.progress.tasks[task].completed
            rate = done / max(time.perf_counter() - self.started[kind], 1e-9)
            self.progress.update(task, rate=f"{rate:,.0f}/s")


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="The query text.")],
    user_id: UserId = 1,
    set_id: SetId = 1,
    doc_id: Annotated[list[int] | None, typer.Option("--doc-id", help="Restrict to documents (repeatable).")] = None,
    mode: Annotated[str, typer.Option("--mode", help="dense, bm25, sparse or hybrid.")] = "hybrid",
    top_k: Annotated[
        int | None, typer.Option("--top-k", help="Hits to return. Default: RAGINDEX_DEFAULT_TOP_K (10).")
    ] = None,
    score_threshold: Annotated[float | None, typer.Option("--score-threshold", help="Drop hits below.")] = None,
    fusion: Annotated[str | None, typer.Option("--fusion", help="rrf, dbsf, combine or boost.")] = None,
    rerank: Annotated[
        bool | None,
        typer.Option(
            "--rerank/--no-rerank",
            help="Rerank the fused candidates with the cross-encoder (RAGINDEX_RERANK_MODEL); scores become [0, 1]. "
            "Default: RAGINDEX_RERANK_ENABLED.",
        ),
    ] = None,
    expand: Annotated[
        str | None,
        typer.Option(
            "--expand",
            help="Give each hit a context: none, neighbours (adjacent chunks) or section (its section). "
            "Default: RAGINDEX_EXPAND.",
        ),
    ] = None,
    context_chars: Annotated[
        int | None,
        typer.Option(
            "--context-chars",
            help="Most characters of a context, 0-20000 (the hit's text is kept whole). "
            "Default: RAGINDEX_CONTEXT_CHARS.",
        ),
    ] = None,
    group_by: Annotated[
        str | None,
        typer.Option(
            "--group-by",
            help="Merge hits of one unit: none, section or document (best chunk kept, the others listed under it). "
            "Default: RAGINDEX_GROUP_BY.",
        ),
    ] = None,
    sources: Annotated[
        str | None,
        typer.Option(
            "--sources",
            help="Search only these sources, comma-separated: dense, bm25, sparse (within "
            "RAGINDEX_RECALL_ENABLED_SOURCES); hybrid fuses them. Default: every enabled source.",
        ),
    ] = None,
    on_source_error: Annotated[
        str | None,
        typer.Option(
            "--on-source-error",
            help="fail (a failing source, e.g. an unreachable encoder, fails the search) or degrade (answer from "
            "the other sources and name the failed one). Default: RAGINDEX_RECALL_ON_SOURCE_ERROR.",
        ),
    ] = None,
    filter: Annotated[
        str | None,
        typer.Option(
            "--filter",
            help='Only chunks whose metadata matches this JSON filter, e.g. \'{"year": {"$gte": 2020}, "lang": "en"}\' '
            "($eq $ne $gt $gte $lt $lte $in $nin $exists $contains $and $or $not). A bad filter is exit code 2.",
        ),
    ] = None,
    as_json: Json = False,
) -> None:
    """Search a set; hits carry per-source scores and ranks and the latency of each phase.

    With --on-source-error degrade, a source that fails is left out: the output names it (under "degraded" in
    --json) and the exit code stays 0; when every source fails, the error's exit code (5: encoder, 4: index).
    --filter narrows the search to chunks whose metadata matches (docs/records-and-filters.md); a filter that is
    not valid JSON, names an unknown field or compares a field with a value of another type is exit code 2.
    """
    # the query's vector is needed unless the search is BM25 or sparse alone: its model loads while the store opens
    dense = mode in ("dense", "hybrid") and (sources is None or "dense" in sources.lower())

    def body() -> None:
        with engine_for(read_only=True, warm_queries=dense) as engine:
            result = engine.search(
                query,
                user_id=user_id,
                set_id=set_id,
                doc_ids=doc_id or None,
                mode=mode,
                top_k=top_k,
                score_threshold=score_threshold,
                fusion=fusion,
                rerank=rerank,
                expand=expand,
                context_chars=context_chars,
                group_by=group_by,
                sources=sources,
                on_source_error=on_source_error,
                filter=filter,
            )
        if as_json:
            emit_json(result.to_dict())
        else:
            console.print(search_table(query, result))

    guarded(body)


@app.command()
def status(
    scores: Annotated[
        bool,
        typer.Option(
            "--scores",
            help="Also show the score-drift watch: top-1 / top-10 search scores per source and model, each "
            "window's shift against the reference window.",
        ),
    ] = False,
    reset: Annotated[
        bool,
        typer.Option("--reset", help="With --scores: forget the score windows; the next one becomes the reference."),
    ] = False,
    as_json: Json = False,
) -> None:
    """Documents and chunks per status, per set (and with --scores, the search scores per source and model)."""

    def body() -> None:
        if reset and not scores:
            raise InputError("--reset goes with --scores (it forgets the score windows)")
        with engine_for() as engine:
            report = engine.status().to_dict()
            if reset:
                report["scores_reset"] = engine.reset_scores()
            if scores:
                report["scores"] = engine.score_report()
        if as_json:
            emit_json(report)
            return
        console.print(status_table(report))
        if scores:
            console.print(scores_table(report["scores"]))

    guarded(body)


@app.command()
def verify(as_json: Json = False) -> None:
    """Compare the truth store with the index per bucket; exit code 1 on any mismatch."""

    def body() -> bool:
        with engine_for() as engine:
            report = engine.verify()
        if as_json:
            emit_json(report.to_dict())
        else:
            console.print(verify_table(report))
        return report.ok

    if not guarded(body):
        raise typer.Exit(EXIT_MISMATCH)
