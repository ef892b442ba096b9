"""``ragindex mcp``: one engine per process, kept loaded, owning the embedded index while the server runs.

The engine is built and takes the index before the server answers anything, so a second owner (a running
``ragindex serve``, ``watch`` or another ``mcp``) fails at start, naming the holder. The dense model loads on a
background thread (``RAGINDEX_WARM_UP``), so a stdio client's handshake is answered at once and only a search
that comes before the model is ready waits for it. The engine is closed when the server ends: the client closed
stdin, or SIGINT/SIGTERM (both end the server gracefully, exit code 0).
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ragindex.errors import RagindexError
from ragindex.mcp.paths import SourceView
from ragindex.mcp.tools import Tenant, Toolbox

if TYPE_CHECKING:
    from ragindex.config.settings import Settings
    from ragindex.engine import Engine
    from ragindex.mcp.server import RagindexMcp
    from ragindex.service.settings import ServiceSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class McpOptions:
    """How ``ragindex mcp`` runs.

    Args:
        user_id: The tenant of a stdio server.
        set_id: The one set the server serves; None: every set of the tenant (searches default to set 1).
        host: Serve streamable HTTP on this interface (with ``port``); None and no port: stdio.
        port: TCP port of the HTTP server.
        source_roots: Over HTTP, sources under these folders are shown relative to them.
        path: The HTTP endpoint's path.
        log_level: uvicorn's log level.
    """

    user_id: int = 1
    set_id: int | None = None
    host: str | None = None
    port: int | None = None
    source_roots: tuple[Path, ...] = ()
    path: str = "/mcp"
    log_level: str = "warning"

    @property
    def http(self) -> bool:
        """Whether the server speaks streamable HTTP (else stdio)."""
        return self.host is not None or self.port is not None


def run(settings: Settings, options: McpOptions, *, version: str = "") -> list[int]:
    """Run the MCP server until it ends; return the stop signals it received (empty: the client went away)."""
    from ragindex.service.executor import ServiceEngine
    from ragindex.service.settings import ServiceSettings

    service = ServiceSettings()
    engine = ServiceEngine(
        settings, query_batch_max=service.query_batch_max, query_torch_threads=service.query_torch_threads
    )
    warm: threading.Thread | None = None
    try:
        _ = engine.index  # own the embedded index now: a second owner fails here, naming the holder
        if service.warm_up:
            warm = threading.Thread(target=_warm_up, args=(engine,), name="ragindex-warm-up", daemon=True)
            warm.start()
        view = SourceView(local=not options.http, roots=options.source_roots, blob_root=_blob_root(settings, service))
        toolbox = Toolbox(engine, view)
        if options.http:
            return _run_http(toolbox, settings, options, version)
        return _run_stdio(toolbox, options, version)
    finally:
        if warm is not None:
            warm.join()  # the model is being loaded: closing the encoder under it would fail the load
        engine.close()


def _blob_root(settings: Settings, service: ServiceSettings) -> Path:
    return (service.blob_dir or settings.data_dir / "blobs").expanduser().resolve()


def _warm_up(engine: Engine) -> None:
    """Load the dense model (or reach the remote encoder) before the first search needs it."""
    try:
        engine.dense.encode_queries(["warm up"])
    except RagindexError as exc:
        log.warning("dense encoder warm-up failed (searches will retry): %s", exc.message)


def _run_stdio(toolbox: Toolbox, options: McpOptions, version: str) -> list[int]:
    import anyio

    from ragindex.mcp.server import RagindexMcp

    tenant = Tenant(user_id=options.user_id, set_id=options.set_id, local=True)
    server = RagindexMcp(toolbox, lambda: tenant, version=version)
    received: list[int] = []
    anyio.run(_serve_stdio_until_signal, server, received, toolbox.engine.request_stop)
    return received


async def _serve_stdio_until_signal(server: RagindexMcp, received: list[int], stop: Callable[[], None]) -> None:
    """Serve until the client closes stdin, or a signal: then a running ingest stops at its next batch boundary."""
    import anyio

    from ragindex.mcp.server import serve_stdio

    async with anyio.create_task_group() as group:

        async def on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for signum in signals:
                    received.append(signum)
                    stop()  # the cancellation waits for a tool call's thread: make a long ingest end soon
                    group.cancel_scope.cancel()
                    return

        group.start_soon(on_signal)
        await serve_stdio(server)
        group.cancel_scope.cancel()  # the client closed stdin


def _run_http(toolbox: Toolbox, settings: Settings, options: McpOptions, version: str) -> list[int]:
    from ragindex.mcp.server import RagindexMcp, http_app, key_tenant
    from ragindex.service.store import SqlServiceStore
    from ragindex.serving import serve

    host = options.host or "127.0.0.1"
    port = options.port if options.port is not None else 8000
    store = SqlServiceStore(settings.resolved_database_url)
    try:
        server = RagindexMcp(toolbox, key_tenant(options.set_id), version=version)
        app = http_app(server, store, host=host, path=options.path)
        received = _note_signals()
        serve(app, host=host, port=port, http=settings.http, log_level=options.log_level)
        return received
    finally:
        store.close()


def _note_signals() -> list[int]:
    """SIGINT/SIGTERM only noted: uvicorn handles them while it runs, then hands the signal back to this handler.

    So the server shuts down gracefully and the engine is closed after it (with the default handler, the signal
    uvicorn hands back would kill the process before the engine is closed).
    """
    received: list[int] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda sig, _frame: received.append(sig))
    return received
