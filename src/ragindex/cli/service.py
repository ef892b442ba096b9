"""serve (the HTTP service) and keys (create / list / revoke per-tenant API keys)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from ragindex.cli.app import app, console, emit_json, guarded, load_settings
from ragindex.cli.render import cell, clean
from ragindex.cli.signals import stops

if TYPE_CHECKING:
    from ragindex.service.store import SqlServiceStore

keys_app = typer.Typer(help="Per-tenant API keys of the HTTP service (stored as sha256 only).", no_args_is_help=True)
app.add_typer(keys_app, name="keys")

Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


@app.command()
def serve(
    host: Annotated[str, typer.Option("--host", help="Interface to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8000,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level.")] = "info",
) -> None:
    """Run the HTTP API (OpenAPI at /docs). This process owns the embedded index while it runs."""

    def body() -> None:
        from ragindex._optional import require

        require("service", "the HTTP service (ragindex serve)", "fastapi", "uvicorn", "multipart", "prometheus_client")
        from ragindex.gc_freeze import own_process
        from ragindex.service.app import create_app
        from ragindex.serving import serve as run_server

        own_process()  # a long-running server: its start-up objects are frozen out of the GC's walks once built
        settings = load_settings()
        stops.restore()  # uvicorn stops gracefully on SIGINT/SIGTERM
        # a start-up failure (another process owns the index) is raised here: one line and its exit code
        run_server(create_app(settings), host=host, port=port, http=settings.http, log_level=log_level)

    guarded(body)


@contextmanager
def _store() -> Iterator[SqlServiceStore]:
    from ragindex.service.store import SqlServiceStore

    store = SqlServiceStore(load_settings().resolved_database_url)
    try:
        yield store
    finally:
        store.close()


@keys_app.command("create")
def keys_create(
    user_id: Annotated[int, typer.Option("--user-id", help="The tenant the key acts for (positive integer).")],
    admin: Annotated[bool, typer.Option("--admin", help="May also call status, verify, repair, optimize.")] = False,
    name: Annotated[str | None, typer.Option("--name", help="A label shown by `keys list`.")] = None,
    as_json: Json = False,
) -> None:
    """Create a key and print it once (only its sha256 is stored: it cannot be shown again)."""
    from ragindex.service.keys import create_key

    def body() -> None:
        with _store() as store:
            created = create_key(store, user_id=user_id, admin=admin, name=name)
        if as_json:
            emit_json(created)
            return
        console.print(created["key"], markup=False, highlight=False, soft_wrap=True)
        role = "admin" if admin else "tenant"
        typer.echo(f"key_id {created['key_id']} ({role} key of user {user_id}); store the key now", err=True)

    guarded(body)


@keys_app.command("list")
def keys_list(as_json: Json = False) -> None:
    """List keys (id, prefix, tenant, role, created, revoked); never the secrets."""
    from ragindex.service.keys import describe

    def body() -> None:
        with _store() as store:
            rows = [describe(r) for r in store.list_api_keys()]
        if as_json:
            emit_json({"keys": rows})
            return
        table = Table(title="API keys")
        # the key id is what `keys revoke` takes: never shortened, whatever the terminal's width
        table.add_column("key_id", no_wrap=True, min_width=max((len(r["key_id"]) for r in rows), default=6))
        table.add_column("prefix", no_wrap=True)
        for name in ("user_id", "admin", "name", "created_at", "revoked_at"):
            table.add_column(name)
        for r in rows:
            table.add_row(
                cell(r["key_id"]),
                cell(r["prefix"] + "..."),
                str(r["user_id"]),
                "yes" if r["admin"] else "",
                cell(r["name"] or ""),
                cell(r["created_at"]),
                cell(r["revoked_at"] or ""),
            )
        console.print(table)

    guarded(body)


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key_id shown by `keys create` / `keys list`.")],
) -> None:
    """Revoke a key: requests with it answer 401 from now on."""
    from ragindex.service.keys import revoke_key

    def body() -> None:
        with _store() as store:
            revoke_key(store, key_id)
        typer.echo(clean(f"revoked {key_id}"))

    guarded(body)
