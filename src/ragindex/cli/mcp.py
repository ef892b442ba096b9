"""mcp: serve the index to MCP clients (Claude Desktop, IDE agents, ...) over stdio or streamable HTTP."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated

import typer

from ragindex._optional import require
from ragindex.cli.app import app as cli_app
from ragindex.cli.app import guarded, load_settings, package_version, say
from ragindex.cli.signals import stops
from ragindex.errors import InputError


@cli_app.command("mcp")
def mcp_command(
    host: Annotated[
        str | None,
        typer.Option("--host", help="Serve streamable HTTP on this interface (default with --port: 127.0.0.1)."),
    ] = None,
    port: Annotated[
        int | None, typer.Option("--port", min=1, max=65535, help="Serve streamable HTTP on this port (default 8000).")
    ] = None,
    user_id: Annotated[
        int | None,
        typer.Option("--user-id", min=1, help="stdio only: the tenant (default 1). Over HTTP the API key decides."),
    ] = None,
    set_id: Annotated[
        int | None,
        typer.Option("--set-id", min=1, help="Serve only this set (default: every set of the tenant; searches use 1)."),
    ] = None,
    source_root: Annotated[
        list[Path] | None,
        typer.Option(
            "--source-root",
            help="HTTP only: show sources under this folder relative to it (repeatable); others by file name.",
        ),
    ] = None,
    log_level: Annotated[str, typer.Option("--log-level", help="HTTP only: uvicorn log level.")] = "warning",
) -> None:
    """Run an MCP server: tools search, list_documents, get_document, get_chunk, ingest; documents as resources.

    Without --host/--port it speaks MCP over stdin/stdout for one local client and one tenant (--user-id, default
    1), and may ingest. With --host or --port it serves streamable HTTP at /mcp: every request needs an API key of
    the HTTP service (`Authorization: Bearer <key>`, from `ragindex keys create`) and acts for the key's tenant;
    ingest is refused, and the server's paths are never shown. This process owns the embedded index while it runs.
    """

    def body() -> None:
        require("mcp", "`ragindex mcp`")
        from ragindex.mcp.runtime import McpOptions, run

        http = host is not None or port is not None
        if http and user_id is not None:
            raise InputError(
                "--user-id: over HTTP each request acts for the tenant of its API key "
                "(`ragindex keys create --user-id N`); drop --user-id"
            )
        if not http and source_root:
            raise InputError("--source-root: over stdio sources are shown as stored; it applies to --host/--port")
        options = McpOptions(
            user_id=user_id or 1,
            set_id=set_id,
            host=host,
            port=port,
            source_roots=tuple(source_root or ()),
            log_level=log_level,
        )
        received = run(load_settings(), options, version=package_version())
        if received:
            say(f"stopped ({signal.Signals(received[0]).name}): the MCP server ended cleanly", "yellow")

    stops.restore()  # the servers stop gracefully on SIGINT/SIGTERM (see ragindex.mcp.runtime), exit code 0
    guarded(body)
