"""The Typer application: thin commands that parse input, call one Engine method and render the result.

Exit codes map from the error hierarchy: 0 ok, 1 verify mismatch or unexpected error,
2 bad usage or input, 3 configuration, 4 backend (or index locked), 5 encoding,
6 integrity, 7 not found.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

from ragindex.errors import ConfigurationError, RagindexError

if TYPE_CHECKING:
    from ragindex.config.settings import Settings
    from ragindex.engine import Engine

app = typer.Typer(
    name="ragindex",
    help="Documents to a hybrid search index that stays correct as the documents change.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
console = Console()
err = Console(stderr=True)
T = TypeVar("T")


class _State:
    data_dir: Path | None = None
    verbose: bool = False


state = _State()


@app.callback()
def _global(
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Data directory (overrides RAGINDEX_DATA_DIR).")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log progress details.")] = False,
) -> None:
    state.data_dir = data_dir
    state.verbose = verbose
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )


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
def engine_for(**overrides: Any) -> Iterator[Engine]:
    """An Engine for one command, always closed."""
    from ragindex.engine import Engine

    engine = Engine(load_settings(**overrides))
    try:
        yield engine
    finally:
        engine.close()


def emit_json(payload: Any) -> None:
    """Print JSON to stdout (machine output: nothing else goes to stdout)."""
    sys.stdout.write(json.dumps(payload, ensure_ascii=False, default=str) + "\n")


def guarded(fn: Callable[[], T]) -> T:
    """Run a command body, mapping RagindexError to its message and exit code."""
    try:
        return fn()
    except RagindexError as exc:
        err.print(f"error: {exc.message}", style="red", markup=False, highlight=False)
        raise typer.Exit(exc.exit_code) from exc


def run() -> None:
    """Run the CLI (registers the command modules first)."""
    from ragindex.cli import commands  # noqa: F401 - registers the commands
    from ragindex.cli import docs as _docs  # noqa: F401 - docs list, docs show
    from ragindex.cli import encoder_server as _encoder_server  # noqa: F401 - encoder-server
    from ragindex.cli import eval as _eval  # noqa: F401
    from ragindex.cli import manage as _manage  # noqa: F401 - repair, reindex, delete, update-chunk
    from ragindex.cli import service as _service  # noqa: F401 - serve, keys
    from ragindex.cli import worker as _worker  # noqa: F401 - worker

    app()
