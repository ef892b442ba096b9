"""repair, reindex, delete, update-chunk: keep the index copies equal to the truth store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from ragindex.cli.app import app, console, emit_json, engine_for, guarded, say
from ragindex.cli.render import cell
from ragindex.cli.signals import stops
from ragindex.errors import EXIT_PARTIAL, InputError, NotFoundError

Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
ChunkIds = Annotated[list[str] | None, typer.Option("--chunk-id", help="Chunk id (repeatable, or comma separated).")]


def _ids(values: Sequence[str] | None) -> list[str]:
    return [part.strip() for value in values or () for part in value.split(",") if part.strip()]


def _exactly_one(options: Mapping[str, bool]) -> str:
    given = [name for name, present in options.items() if present]
    if len(given) != 1:
        names = ", ".join(options)
        what = "none" if not given else " and ".join(given)
        raise InputError(f"give exactly one of {names} (got {what})")
    return given[0]


def _show(title: str, payload: Mapping[str, Any]) -> None:
    table = Table(title=title, show_header=False)
    table.add_column("", style="bold")
    table.add_column("")
    for key, value in payload.items():
        if value in (None, [], {}, ""):
            continue
        if isinstance(value, Mapping):
            table.add_row(cell(key), cell(", ".join(f"{k}={v}" for k, v in value.items()) or "-"))
        elif isinstance(value, list):
            table.add_row(cell(key), Text("\n").join(cell(v) for v in value[:10]))
        else:
            table.add_row(cell(key), cell(value))
    console.print(table)


def _checkpoint(_kind: str, _copies: int) -> None:
    """After each batch of a long command: a safe point to stop at on Ctrl-C or SIGTERM."""
    stops.checkpoint()


@app.command()
def repair(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only report what repair would do.")] = False,
    as_json: Json = False,
) -> None:
    """Converge the index to the truth store: stale claims, failed copies, unpurged deletes, missing copies, orphans.

    FAILED chunks that reached RAGINDEX_MAX_ATTEMPTS are left alone (retry them with `reindex --failed`).
    Exit code 8 (partial) when something could not be repaired.
    """

    def body() -> bool:
        with engine_for() as engine:
            report = engine.repair(dry_run=dry_run)
        payload = report.to_dict()
        if as_json:
            emit_json(payload)
        else:
            _show("repair (dry run)" if dry_run else "repair", payload)
        return report.ok

    if not guarded(body):
        raise typer.Exit(EXIT_PARTIAL)


@app.command()
def reindex(
    failed: Annotated[bool, typer.Option("--failed", help="Retry every FAILED chunk, whatever its attempts.")] = False,
    chunk_id: ChunkIds = None,
    into: Annotated[
        str | None,
        typer.Option("--into", help="Build a new collection NAME from the truth store, then switch reads to it."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="With --into: dense model of the new collection. Afterwards run every process with "
            "RAGINDEX_DENSE_MODEL set to it.",
        ),
    ] = None,
    drop_old: Annotated[
        bool, typer.Option("--drop-old", help="With --into: drop the old collection after the switch.")
    ] = False,
    as_json: Json = False,
) -> None:
    """Explicit reindex: --failed, --chunk-id ID..., or --into NAME [--model M] [--drop-old].

    --into builds NAME while searches keep using the current collection, then switches atomically;
    an interrupted build stays BUILDING and the same command resumes it (Ctrl-C stops after the current
    batch). With the same model the embedding cache is reused (nothing is re-embedded). With --model M
    the new collection holds M's vectors: set RAGINDEX_DENSE_MODEL=M for every process (CLI, service,
    workers) after the switch. --failed and --chunk-id exit with code 8 (partial) when a chunk could
    not be indexed.
    """
    ids = _ids(chunk_id)

    def body() -> bool:
        mode = _exactly_one({"--failed": failed, "--chunk-id": bool(ids), "--into": into is not None})
        if mode != "--into" and (model is not None or drop_old):
            raise InputError("--model and --drop-old only go with --into")
        with engine_for() as engine:
            if mode == "--into":
                assert into is not None
                with stops.safe_points():
                    payload = engine.reindex_into(into, model=model, drop_old=drop_old, progress=_checkpoint).to_dict()
                ok = True
            else:
                result = engine.reindex_failed() if mode == "--failed" else engine.reindex_chunks(ids)
                payload, ok = result.to_dict(), result.ok
        if as_json:
            emit_json(payload)
        else:
            _show(f"reindex {mode}", payload)
        return ok

    if not guarded(body):
        raise typer.Exit(EXIT_PARTIAL)


@app.command()
def delete(
    doc_id: Annotated[int | None, typer.Option("--doc-id", help="Delete one document and its chunks.")] = None,
    chunk_id: ChunkIds = None,
    source: Annotated[
        Path | None, typer.Option("--source", help="Delete the documents of this file, or of every file under it.")
    ] = None,
    key: Annotated[
        list[str] | None,
        typer.Option("--key", help="Delete the document with this key: a record's key or a file's path (repeatable)."),
    ] = None,
    user_id: Annotated[int, typer.Option("--user-id", help="Tenant of --source and --key (scope of --doc-id).")] = 1,
    set_id: Annotated[int, typer.Option("--set-id", help="Document set of --source and --key.")] = 1,
    as_json: Json = False,
) -> None:
    """Delete by --doc-id N, --chunk-id ID..., --source PATH or --key K...: gone from search at once, then purged.

    A purge that fails is retried by `ragindex repair` (the chunks are already out of search): exit code 8.
    --key deletes the documents its keys name, and when a key names nothing (never upserted, or deleted already)
    says so and exits with code 7 (not found, like --source and --doc-id); --json lists such keys under "missing".
    """
    ids = _ids(chunk_id)
    keys = list(key or [])

    def body() -> int:
        mode = _exactly_one(
            {
                "--doc-id": doc_id is not None,
                "--chunk-id": bool(ids),
                "--source": source is not None,
                "--key": bool(keys),
            }
        )
        with engine_for() as engine:
            if mode == "--doc-id":
                assert doc_id is not None
                result = engine.delete_document(doc_id, user_id=user_id)
            elif mode == "--chunk-id":
                result = engine.delete_chunks(ids)
            elif mode == "--key":
                result = engine.delete(keys=keys, user_id=user_id, set_id=set_id)
            else:
                assert source is not None
                result = engine.delete_source(source, user_id=user_id, set_id=set_id)
        if as_json:
            emit_json(result.to_dict())
        else:
            _show(f"delete {mode}", result.to_dict())
        if not result.ok:
            return EXIT_PARTIAL
        if result.missing:
            listed = ", ".join(repr(k) for k in result.missing[:10])
            more = f" and {len(result.missing) - 10} more" if len(result.missing) > 10 else ""
            say(f"not found: no document of user {user_id}, set {set_id} has the key {listed}{more}", "yellow")
            return NotFoundError.exit_code
        return 0

    code = guarded(body)
    if code:
        raise typer.Exit(code)


@app.command("update-chunk")
def update_chunk(
    chunk_id: Annotated[str, typer.Argument(help="The chunk to edit.")],
    text: Annotated[str | None, typer.Option("--text", help="New content.")] = None,
    file: Annotated[Path | None, typer.Option("--file", help="Read the new content from a UTF-8 file.")] = None,
    as_json: Json = False,
) -> None:
    """Replace a chunk's content (--text T or --file F); only a real change is re-embedded, under the same id.

    Exit code 8 (partial) when the new copies could not be written (the chunk stays FAILED for repair).
    """

    def body() -> bool:
        _exactly_one({"--text": text is not None, "--file": file is not None})
        content = text
        if file is not None:
            try:
                content = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"cannot read {file}: {exc}", path=str(file)) from exc
        with engine_for() as engine:
            result = engine.update_chunk(chunk_id, content)
        if as_json:
            emit_json(result.to_dict())
        else:
            _show("update-chunk", result.to_dict())
        return result.ok

    if not guarded(body):
        raise typer.Exit(EXIT_PARTIAL)
