"""watch: keep a set in sync with files and folders as they change (optionally serving HTTP alongside)."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ragindex.cli.app import app, emit_json, engine_for, guarded, load_settings, say
from ragindex.cli.commands import AllowMassDelete, SetId, UserId, _blob_dir
from ragindex.cli.signals import Interrupted, stops

if TYPE_CHECKING:
    from ragindex.engine import Engine
    from ragindex.pipeline.report import IngestReport
    from ragindex.watcher import Change, Watcher

log = logging.getLogger(__name__)


@app.command()
def watch(
    # str, not Path: typer would turn "" into "." (the current directory), which must be refused
    paths: Annotated[list[str], typer.Argument(help="Files and folders to keep in sync.")],
    user_id: UserId = 1,
    set_id: SetId = 1,
    debounce: Annotated[
        float, typer.Option("--debounce", min=0.05, help="Quiet seconds before a changed file is synced.")
    ] = 0.3,
    keep_missing: Annotated[
        bool, typer.Option("--keep-missing", help="Keep the documents of deleted or moved-away files.")
    ] = False,
    allow_mass_delete: AllowMassDelete = False,
    serve: Annotated[
        bool, typer.Option("--serve", help="Run the HTTP service in this process too (it shares the index).")
    ] = False,
    host: Annotated[str, typer.Option("--host", help="With --serve: interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="With --serve: TCP port.")] = 8000,
    log_level: Annotated[str, typer.Option("--log-level", help="With --serve: uvicorn log level.")] = "info",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per change.")] = False,
) -> None:
    """Sync files and folders, then keep syncing each change until stopped (Ctrl-C or SIGTERM: exit 0).

    A saved file is synced once it has been quiet for --debounce seconds with a stable size and mtime, by
    the same rules as `ingest`; deleted and moved-away files are removed under the mass-deletion guard. One
    line per change, with the seconds from its first event until it is searchable. This process owns the
    embedded index while it runs: search through it with --serve (the HTTP service on the same engine).
    """
    printer = _Printer(as_json)

    def make(engine: Engine, stop: threading.Event | None, checkpoint: Callable[[], None]) -> Watcher:
        from ragindex.watcher import Watcher

        return Watcher(
            engine,
            paths,
            user_id=user_id,
            set_id=set_id,
            debounce=debounce,
            keep_missing=keep_missing,
            allow_mass_delete=allow_mass_delete,
            on_change=printer.change,
            stop=stop,
            checkpoint=checkpoint,
            exclude=_blob_dir(),
        )

    if serve:
        roots = [Path(p) for p in paths if p]
        guarded(lambda: _watch_and_serve(make, printer, host=host, port=port, log_level=log_level, roots=roots))
    else:
        guarded(lambda: _watch(make, printer))


MakeWatcher = Callable[["Engine", threading.Event | None, Callable[[], None]], "Watcher"]


def _watch(make: MakeWatcher, printer: _Printer) -> None:
    with engine_for() as engine:
        _ = engine.index  # own the embedded index now: a second owner fails here, naming the holder
        watcher = make(engine, None, stops.checkpoint)
        with stops.safe_points():
            try:
                watcher.run(ready=lambda report: printer.ready(watcher, report))
            except Interrupted as exc:
                say(
                    f"stopped ({exc.name}): the index is consistent; the next `ragindex watch` of these paths "
                    "catches up with what changes meanwhile",
                    "yellow",
                )


def _watch_and_serve(
    make: MakeWatcher, printer: _Printer, *, host: str, port: int, log_level: str, roots: list[Path]
) -> None:
    """The watcher on a thread, uvicorn in the main thread, one :class:`ServiceEngine` for both.

    The engine is built here and handed to ``create_app``, which then neither builds nor closes one: the
    service's index thread, batched query encoding and ingest lock serve the watcher too, and the index has
    one owner. uvicorn takes SIGINT/SIGTERM and shuts down; then the watcher stops and the engine is closed.
    """
    from ragindex._optional import require

    require("service", "watch --serve", "fastapi", "uvicorn", "multipart", "prometheus_client")
    from ragindex import serving
    from ragindex.service.app import create_app
    from ragindex.service.executor import ServiceEngine, set_torch_threads
    from ragindex.service.settings import ServiceSettings

    service = ServiceSettings()
    # the API shows the watched documents' sources relative to the watched paths
    service = service.model_copy(update={"source_roots": [*service.source_roots, *roots]})
    engine = ServiceEngine(
        load_settings(), query_batch_max=service.query_batch_max, query_torch_threads=service.query_torch_threads
    )
    stop = threading.Event()
    failure: list[BaseException] = []
    try:
        _ = engine.index
        watcher = make(engine, stop, lambda: None)

        def run() -> None:
            set_torch_threads(service.job_torch_threads)  # searches keep a core while a change is embedded
            try:
                watcher.run(ready=lambda report: printer.ready(watcher, report))
            except BaseException as exc:  # the service must not outlive its watcher: stop it, report in main
                if not stop.is_set():
                    failure.append(exc)
                    os.kill(os.getpid(), signal.SIGTERM)

        thread = threading.Thread(target=run, name="ragindex-watch", daemon=True)
        thread.start()
        received = _note_signals()
        service_app = create_app(service=service, engine=engine)
        serving.serve(service_app, host=host, port=port, http=engine.settings.http, log_level=log_level)
        stop.set()
        engine.request_stop()
        thread.join(service.job_shutdown_seconds)
    finally:
        stop.set()
        engine.close()
    if failure:
        raise failure[0]
    if received:
        say(f"stopped ({signal.Signals(received[0]).name}): the service and the watcher ended cleanly", "yellow")


def _note_signals() -> list[int]:
    """SIGINT/SIGTERM only noted: uvicorn handles them while it runs, then hands the signal back to this handler.

    So the service shuts down gracefully, the watcher and the engine are closed after it, and the exit code is 0
    (with the default handler, the signal uvicorn hands back would kill the process before the engine is closed).
    """
    received: list[int] = []
    stops.restore()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda sig, _frame: received.append(sig))
    return received


class _Printer:
    """One line per change on stdout (``--json``: one JSON object per line), flushed at once."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self._lock = threading.Lock()

    def ready(self, watcher: Watcher, report: IngestReport) -> None:
        """The line that says the first sync is done and changes are being watched."""
        docs = report.documents
        summary = {k: docs.get(k, 0) for k in ("added", "changed", "unchanged", "removed", "failed")}
        if self.as_json:
            self._emit_json(
                {
                    "event": "ready",
                    "paths": [str(p) for p in watcher.roots],
                    "documents": summary,
                    "embedded": report.chunks.get("embedded", 0),
                    "duration_ms": round(report.duration_ms, 1),
                }
            )
            return
        counts = ", ".join(f"{n} {k}" for k, n in summary.items() if n) or "nothing to do"
        self._echo(
            f"{_clock(time.time())} synced {len(watcher.roots)} path(s) in {report.duration_ms / 1000:.2f} s "
            f"({counts}); watching for changes, Ctrl-C to stop"
        )

    def change(self, change: Change) -> None:
        """Print one change."""
        if self.as_json:
            self._emit_json(change.to_dict())
            return
        self._echo(describe(change))

    def _emit_json(self, payload: dict[str, object]) -> None:
        with self._lock:
            emit_json(payload)
            _flush()

    def _echo(self, line: str) -> None:
        from ragindex.cli.render import clean

        with self._lock:
            typer.echo(clean(line))
            _flush()


def describe(change: Change) -> str:
    """``05:41:02 changed notes.md: 3 chunks (2 embedded) searchable in 0.41 s``."""
    name = Path(change.path).name or change.path
    head = f"{_clock(change.at)} {change.action} {name}"
    if change.action == "refused":
        return f"{head}: {change.error}"
    if change.action == "failed":
        return f"{head}: {change.error} ({change.latency_s:.2f} s)"
    if change.action == "removed":
        return f"{head}: gone from search in {change.latency_s:.2f} s"
    if change.action == "moved":
        head = f"{_clock(change.at)} moved {Path(change.source or '').name} -> {name}"
    embedded = f" ({change.embedded} embedded)" if change.embedded is not None else ""
    return f"{head}: {change.chunks} chunks{embedded} searchable in {change.latency_s:.2f} s"


def _clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))


def _flush() -> None:
    sys.stdout.flush()
