"""worker: consume ingest jobs from the broker (``RAGINDEX_QUEUE_URL``) until SIGTERM or Ctrl-C."""

from __future__ import annotations

import logging
import multiprocessing
import signal
import threading
from typing import Annotated, Any

import typer

from ragindex.cli.app import app, err, guarded, load_settings, state
from ragindex.errors import ConfigurationError

log = logging.getLogger("ragindex.worker")


@app.command()
def worker(
    queue: Annotated[
        str | None, typer.Option("--queue", help="Queue to consume (default RAGINDEX_QUEUE_NAME, ragindex-ingest).")
    ] = None,
    processes: Annotated[
        int, typer.Option("--processes", min=1, help="Worker processes, each with its own engine.")
    ] = 1,
    threads: Annotated[int, typer.Option("--threads", min=1, help="Concurrent jobs per process.")] = 1,
) -> None:
    """Run ingest jobs from the broker against the shared truth store and Qdrant; publish parse_result events.

    Every process opens its own engine: with a Qdrant server (RAGINDEX_QDRANT_URL) any number of
    workers on any hosts share one queue; a qdrant-client local path or the embedded index can be
    opened by one process only. SIGTERM finishes the running job, then exits.
    """

    def body() -> None:
        _load_service_settings()  # fail fast on a bad setting, before forking
        if processes == 1:
            _serve(queue, threads, state.data_dir, state.verbose)
            return
        ctx = multiprocessing.get_context("spawn")
        children = [
            ctx.Process(
                target=_child, args=(queue, threads, state.data_dir, state.verbose), name=f"ragindex-worker-{i}"
            )
            for i in range(processes)
        ]
        for child in children:
            child.start()

        def forward(signum: int, _frame: Any) -> None:
            for child in children:
                if child.pid is not None and child.is_alive():
                    child.terminate()  # SIGTERM: each finishes its running job

        signal.signal(signal.SIGTERM, forward)
        signal.signal(signal.SIGINT, forward)
        for child in children:
            child.join()
        codes = [child.exitcode or 0 for child in children]
        if any(codes):
            err.print(f"worker processes exited with {codes}", style="red", markup=False, highlight=False)
            raise typer.Exit(max(abs(c) for c in codes))

    guarded(body)


def _load_service_settings() -> Any:
    from pydantic import ValidationError as PydanticValidationError

    from ragindex._optional import require

    require("workers", "ragindex worker", "dramatiq", "fastapi")
    from ragindex.service.settings import ServiceSettings

    try:
        return ServiceSettings()
    except PydanticValidationError as exc:
        raise ConfigurationError(f"invalid service settings: {exc}") from exc


def _child(queue: str | None, threads: int, data_dir: Any, verbose: bool) -> None:
    """A spawned worker process: its exit status is the error's exit code."""
    try:
        _serve(queue, threads, data_dir, verbose)
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None


def _serve(queue: str | None, threads: int, data_dir: Any, verbose: bool) -> None:
    """One worker process: its engine, its broker connection, until SIGTERM/SIGINT."""
    from ragindex.gc_freeze import own_process
    from ragindex.service.queue import run_worker

    own_process()  # long-running: what a thread's torch import builds is frozen out of the GC's walks
    state.data_dir, state.verbose = data_dir, verbose  # a spawned child starts with fresh module state
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("ragindex").setLevel(logging.INFO)
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    guarded(lambda: run_worker(load_settings(), _load_service_settings(), queue_name=queue, threads=threads, stop=stop))
