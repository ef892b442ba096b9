"""The Typer application: thin commands that parse input, call one Engine method and render the result.

Exit codes map from the error hierarchy (``ragindex.errors.exit_codes()``; a test holds this list and
the table of docs/reference/exit-codes.md to it):

    0    ok: everything asked for was done
    1    `verify`: index and truth store differ (run `ragindex repair`); `eval --reference`: drift
    2    bad usage or input (the message names the field or the file)
    3    configuration: an invalid setting, a missing extra or model
    4    a store or index backend failed, or another process owns the embedded index
    5    an encoder (dense, sparse, reranker) failed
    6    integrity: e.g. the index was built with another model
    7    not found: the document, chunk or collection does not exist
    8    partial: some documents or chunks failed; they are listed, the rest is done
         (`ingest`, `repair`, `reindex`, `update-chunk`, `delete`)
    70   unexpected error (a bug): one line on stderr names the log file with the traceback
    130  stopped by SIGINT (Ctrl-C); run the same command again to finish
    143  stopped by SIGTERM; run the same command again to finish

Human output goes through ``render.clean`` (no terminal control characters from documents or
file names); ``--json`` output is the exact data.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from typer.exceptions import TyperException

from ragindex.cli.render import clean
from ragindex.cli.signals import Interrupted
from ragindex.errors import EXIT_CRASH, ConfigurationError, RagindexError

if TYPE_CHECKING:
    from rich.console import Console

    from ragindex.config.settings import Settings
    from ragindex.engine import Engine

app = typer.Typer(
    name="ragindex",
    help="Documents to a hybrid search index that stays correct as the documents change.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
T = TypeVar("T")


class _LazyConsole:
    """A rich ``Console`` made on first use: a command that prints JSON (a one-shot search) never imports rich."""

    def __init__(self, *, stderr: bool = False) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def get(self) -> Console:
        """The rich console itself (made now if needed): what to hand to rich (a ``Progress``, a ``Live``)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self._stderr)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)


console: Any = _LazyConsole()
err: Any = _LazyConsole(stderr=True)

COMMAND_MODULES: dict[str, str] = {
    "ingest": "commands",
    "search": "commands",
    "status": "commands",
    "verify": "commands",
    "docs": "docs",
    "encoder-server": "encoder_server",
    "eval": "eval",
    "calibrate": "eval",
    "repair": "manage",
    "reindex": "manage",
    "delete": "manage",
    "update-chunk": "manage",
    "mcp": "mcp",
    "models": "models",
    "serve": "service",
    "keys": "service",
    "export": "transfer",
    "import": "transfer",
    "migrate": "transfer",
    "backup": "transfer",
    "restore": "transfer",
    "watch": "watch",
    "worker": "worker",
}
"""Each command (or command group) of ``ragindex`` and the module of ``ragindex.cli`` that registers it.

:func:`run` imports only the module of the command asked for (a search never imports the service, the MCP
server or the watcher); help and an unknown command import them all. A test holds this map to the commands."""


class _State:
    data_dir: Path | None = None
    verbose: bool = False
    exits_after: bool = False  # run() ends the process after the command (not a test's CliRunner)


state = _State()


def package_version() -> str:
    """The installed ragindex version (from the package metadata)."""
    from ragindex.about import package_version as installed

    return installed()


def _print_version(value: bool) -> None:
    """``--version``: the package version, the schema version the code needs, the configured dense model."""
    if value:
        from ragindex.about import version_lines

        try:
            settings: Settings | None = load_settings()
        except RagindexError:  # broken settings must not hide the version
            settings = None
        for line in version_lines(settings):
            typer.echo(line)
        raise typer.Exit()


@app.callback()
def _global(
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Data directory (overrides RAGINDEX_DATA_DIR).")
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log progress details; print the traceback of a crash.")
    ] = False,
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the version, the schema version and the dense model, and exit.",
        ),
    ] = False,
) -> None:
    state.data_dir = data_dir
    state.verbose = verbose
    handler = logging.StreamHandler()
    handler.setFormatter(_CleanFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, handlers=[handler])


class _CleanFormatter(logging.Formatter):
    """Log lines on the terminal through ``render.clean``: a logged file name cannot carry escape sequences."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return clean(super().formatMessage(record))

    def formatException(self, ei: Any) -> str:
        return clean(super().formatException(ei), multiline=True)


def load_settings(**overrides: Any) -> Settings:
    """Settings from env/.env with the global options and per-command overrides applied."""
    from pydantic import ValidationError as PydanticValidationError

    from ragindex.config.settings import Settings

    if state.data_dir is not None:
        overrides["data_dir"] = state.data_dir
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except PydanticValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in exc.errors())
        raise ConfigurationError(f"invalid settings: {problems}") from exc


@contextmanager
def engine_for(*, read_only: bool = False, warm_queries: bool = False, **overrides: Any) -> Iterator[Engine]:
    """An Engine for one command, always closed.

    ``read_only`` (a command that only searches): the truth store opens for searching (``Engine(search_only=True)``),
    and when the process ends right after the command, the embedded index is left open for the process's end (see
    ``Engine.close(process_exit=True)``).
    ``warm_queries``: the command will encode a query: the encoder and its runtime are built on a thread started
    before the engine's modules are imported (see :mod:`ragindex.encoders.query_warmup`).
    """
    settings = load_settings(**overrides)
    warm_up = None
    if warm_queries:
        from ragindex.encoders.query_warmup import start_query_warm_up

        warm_up = start_query_warm_up(settings)
    from ragindex.engine import Engine

    engine = Engine(settings, search_only=read_only, query_warm_up=warm_up)
    try:
        yield engine
    finally:
        engine.close(process_exit=read_only and state.exits_after)


def emit_json(payload: Any) -> None:
    """Print JSON to stdout (machine output: nothing else goes to stdout)."""
    sys.stdout.write(json.dumps(payload, ensure_ascii=False, default=str) + "\n")


def guarded(fn: Callable[[], T]) -> T:
    """Run a command body; a failure becomes one line on stderr and its exit code (see the module docstring)."""
    try:
        return fn()
    except (typer.Exit, typer.Abort, TyperException):  # Typer's own ends (a usage error, an exit code)
        raise
    except BaseException as exc:
        code = handle_failure(exc)
        if code is None:
            raise
        raise typer.Exit(code) from exc


def say(line: str, style: str = "") -> None:
    """Print one line on stderr, cleaned (see ``render.clean``) and never wrapped."""
    err.print(clean(line), style=style, markup=False, highlight=False, soft_wrap=True)


def handle_failure(exc: BaseException) -> int | None:
    """Report ``exc`` on stderr and return the exit code (None: not ours to handle, e.g. SystemExit).

    A domain error prints its message; a stop by signal prints how to finish; anything else is a
    crash: its traceback goes to a log file (and to stderr with ``--verbose``), the terminal gets one line.
    """
    if isinstance(exc, KeyboardInterrupt):  # no handler installed (a library caller or a test runner)
        exc = Interrupted(signal.SIGINT)
    if isinstance(exc, Interrupted):
        say(exc.message, "yellow")
        return exc.exit_code
    if isinstance(exc, RagindexError) and exc.exit_code != EXIT_CRASH:
        say(f"error: {exc.message}", "red")
        return exc.exit_code
    if not isinstance(exc, Exception):
        return None
    from ragindex.cli.crash import crash_line, write_crash_log

    log = write_crash_log(exc, _data_dir())
    if state.verbose or log is None:
        traceback.print_exception(exc, file=sys.stderr)
    say(crash_line(exc, log), "red")
    return EXIT_CRASH


def _data_dir() -> Path | None:
    try:
        return load_settings().data_dir
    except Exception:  # the settings may be what is broken
        return state.data_dir


def run() -> None:
    """Run the CLI: SIGINT/SIGTERM become a clean stop, then the command modules are registered and run."""
    from ragindex.cli.signals import stops

    stops.install()
    state.exits_after = True
    if command_name(sys.argv[1:]) == "search":
        # pydantic's plugin lookup reads every installed package's entry points (~25 ms of a one-shot search);
        # a search uses no plugin (PYDANTIC_DISABLE_PLUGINS= set empty keeps them)
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")
    try:
        register_commands(sys.argv[1:])
        app()
    except SystemExit as exc:  # click ends every command with one
        if exc.code is not None and not isinstance(exc.code, int):
            raise
        leave(exc.code or 0)
    except BaseException as exc:  # outside a command body: option callbacks, imports, click itself
        code = handle_failure(exc)
        if code is None:
            raise
        leave(code)


def _index_left_open() -> bool:
    """Whether a read-only command left the embedded index open for the process's end (``engine_for``)."""
    edge = sys.modules.get("ragindex.index.qdrant_edge")
    return edge is not None and bool(edge.shards_left_open())


def register_commands(args: list[str] | None = None) -> None:
    """Import the module that registers the command named in ``args`` (every module when none is named)."""
    import importlib

    name = command_name(args or [])
    modules = [COMMAND_MODULES[name]] if name in COMMAND_MODULES else sorted(set(COMMAND_MODULES.values()))
    for module in modules:
        importlib.import_module(f"ragindex.cli.{module}")


def command_name(args: list[str]) -> str | None:
    """The command in a ``ragindex`` command line: the first word after the global options (None: none, or help)."""
    words = iter(args)
    for word in words:
        if word == "--data-dir":
            next(words, None)
        elif word in ("--help", "-h"):
            return None
        elif not word.startswith("-"):
            return word
    return None


def leave(code: int) -> NoReturn:
    """End the process with ``code``; without the interpreter's finalization while a daemon thread still runs.

    CPython before 3.14 ends a daemon thread that wakes up during finalization with ``pthread_exit``, and in a C++
    extension (ONNX Runtime building a session, a torch forward pass: pybind11's destructors are ``noexcept``) that
    unwinding calls ``std::terminate``: the command had printed its last line, and then the process died of SIGABRT,
    exit code 134 ("terminate called without an active exception") instead of its own. It happened to
    ``ragindex ingest`` stopped by Ctrl-C or SIGTERM, or failing, while the dense model still loaded on its warm-up
    thread, and can happen to any daemon thread left running (a job past its shutdown wait, a model load of the
    service). With such a thread alive the command flushes its output and its log handlers and leaves with
    ``os._exit``; otherwise it exits as usual.
    """
    if any(t.daemon and t.is_alive() for t in threading.enumerate()) or _index_left_open():
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    sys.exit(code)
