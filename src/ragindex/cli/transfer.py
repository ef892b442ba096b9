"""export, import, migrate: move a deployment's sets between backends without embedding anything again."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from ragindex.cli.app import app, emit_json, engine_for, guarded, load_settings, say
from ragindex.cli.manage import _checkpoint, _show
from ragindex.cli.signals import stops
from ragindex.errors import EXIT_PARTIAL, InputError

Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
ExportUser = Annotated[int | None, typer.Option("--user-id", help="Export this tenant only (all its sets).")]
ExportSet = Annotated[int | None, typer.Option("--set-id", help="Export this set only (needs --user-id).")]
Replace = Annotated[
    bool, typer.Option("--replace", help="Replace the content of a set that already holds other documents.")
]
Reembed = Annotated[
    bool,
    typer.Option("--reembed", help="Accept an archive of another dense model and embed every chunk again."),
]


def _scope(user_id: int | None, set_id: int | None) -> Any:
    from ragindex.store.records import TransferScope

    if set_id is not None and user_id is None:
        raise InputError("--set-id needs --user-id (a set belongs to a tenant)")
    for name, value in (("--user-id", user_id), ("--set-id", set_id)):
        if value is not None and value < 1:
            raise InputError(f"{name} must be a positive integer")
    return TransferScope(user_id=user_id, set_id=set_id)


@app.command("export")
def export_command(
    file: Annotated[Path, typer.Argument(help="The archive to write (replaced only once complete).")],
    user_id: ExportUser = None,
    set_id: ExportSet = None,
    compress: Annotated[
        bool, typer.Option("--gzip", help="gzip the parts of text (about a third of the size, slower).")
    ] = False,
    as_json: Json = False,
) -> None:
    """Write one set, one tenant or everything to a portable archive (rows and cached vectors, no index copies).

    Taken from one consistent snapshot, also while `serve` or `watch` run; memory stays bounded whatever the size.
    """
    from ragindex.transfer.export import export_archive

    def body() -> None:
        scope = _scope(user_id, set_id)
        with engine_for() as engine:
            report = export_archive(engine.store, file, scope, source=_source(engine.settings), compress=compress)
        payload = report.to_dict()
        if as_json:
            emit_json(payload)
        else:
            _show(f"export ({scope.describe()})", payload)

    guarded(body)


def _source(settings: Any) -> dict[str, Any]:
    return {"dialect": settings.resolved_database_url.split(":", 1)[0], "index_backend": settings.index_backend}


@app.command("import")
def import_command(
    file: Annotated[Path, typer.Argument(help="An archive written by `ragindex export`.")],
    replace: Replace = False,
    reembed: Reembed = False,
    as_json: Json = False,
) -> None:
    """Import an archive into the configured backends; the index is rebuilt from its vectors (nothing embedded).

    Refused, with nothing written: an unknown format version, a damaged part (checksum), another dense model
    (unless --reembed), a set that holds other content (unless --replace). Interrupted, the same command finishes
    it. Exit code 8 (partial) when verify is not clean at the end.
    """
    from ragindex.transfer.importer import Importer

    if not file.is_file():
        guarded(lambda: _missing(file))

    def body() -> bool:
        with engine_for() as engine, stops.safe_points():
            report = Importer(engine, file, replace=replace, reembed=reembed, progress=_checkpoint).run()
        payload = report.to_dict()
        if as_json:
            emit_json(payload)
        else:
            _show("import", payload)
        return report.verify_ok

    if not guarded(body):
        raise typer.Exit(EXIT_PARTIAL)


def _missing(file: Path) -> None:
    raise InputError(f"{file}: no such archive; write one with `ragindex export FILE`")


@app.command()
def migrate(
    to_database: Annotated[
        str, typer.Option("--to-database", help="SQLAlchemy URL of the target truth store (empty or this data).")
    ],
    to_index: Annotated[
        Literal["edge", "qdrant"] | None,
        typer.Option("--to-index", help="Target index backend (default: the current one)."),
    ] = None,
    to_qdrant_url: Annotated[str | None, typer.Option("--to-qdrant-url", help="Target Qdrant server URL.")] = None,
    to_qdrant_path: Annotated[
        Path | None, typer.Option("--to-qdrant-path", help="Target qdrant-client local directory.")
    ] = None,
    to_data_dir: Annotated[
        Path | None, typer.Option("--to-data-dir", help="Target data dir (Edge shards) for --to-index edge.")
    ] = None,
    work_dir: Annotated[
        Path | None, typer.Option("--work-dir", help="Where the intermediate archive goes (default: the data dir).")
    ] = None,
    replace: Replace = False,
    as_json: Json = False,
) -> None:
    """Move everything from the current deployment to other backends: export + import, with counts before and after.

    The configured settings name the source; --to-database (and --to-index ...) the target. Nothing is embedded
    again; the source is left as it is (switch your settings to the target once it reports ok).
    """
    from ragindex.transfer.migrate import migrate as run_migrate

    def body() -> bool:
        source = load_settings()
        overrides: dict[str, Any] = {"database_url": to_database}
        if to_index is not None:
            overrides["index_backend"] = to_index
        if to_qdrant_url is not None:
            overrides["qdrant_url"] = to_qdrant_url
        if to_qdrant_path is not None:
            overrides["qdrant_path"] = to_qdrant_path
        target = load_settings(**overrides)
        if to_data_dir is not None:
            target = target.model_copy(update={"data_dir": to_data_dir.expanduser()})
        with stops.safe_points():
            report = run_migrate(source, target, work_dir=work_dir, replace=replace, progress=_checkpoint)
        payload = report.to_dict()
        if as_json:
            emit_json(payload)
        else:
            _show("migrate", payload)
            if report.ok:
                say("switch every process's settings to the target now (RAGINDEX_DATABASE_URL, ...)")
        return report.ok

    if not guarded(body):
        raise typer.Exit(EXIT_PARTIAL)


@app.command("backup")
def backup_command(
    directory: Annotated[Path, typer.Argument(help="A new (or empty) directory for the backup.")],
    as_json: Json = False,
) -> None:
    """Back up the live deployment into DIRECTORY: SQLite's online backup (or an export on a database server).

    Runs beside `serve` and `watch` (no index lock); the index is not copied: `restore` rebuilds it from the
    cached vectors without embedding anything.
    """
    from ragindex.transfer.backup import backup

    def body() -> None:
        with engine_for() as engine:
            report = backup(engine, directory)
        if as_json:
            emit_json(report.to_dict())
        else:
            _show("backup", report.to_dict())

    guarded(body)


@app.command("restore")
def restore_command(
    directory: Annotated[Path, typer.Argument(help="A directory written by `ragindex backup`.")],
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace a truth store that already holds documents.")
    ] = False,
    as_json: Json = False,
) -> None:
    """Restore a backup into the configured data dir and rebuild the index from the cached vectors.

    Stop `serve`, `watch` and workers first (the data dir's index lock is taken). Exit code 8 (partial) when
    verify is not clean at the end.
    """
    from ragindex.transfer.backup import restore

    def body() -> bool:
        with stops.safe_points():
            report = restore(load_settings(), directory, replace=replace)
        if as_json:
            emit_json(report.to_dict())
        else:
            _show("restore", report.to_dict())
        return report.verify_ok

    if not guarded(body):
        raise typer.Exit(EXIT_PARTIAL)
