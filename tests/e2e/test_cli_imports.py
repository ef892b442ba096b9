"""The one-shot CLI imports only what its command needs (issue 27): the import budget of ``ragindex search``.

The budget is held on modules, never on times: a real ``ragindex search`` process over a real index (SQLite,
Qdrant Edge, the shipped model through ONNX Runtime) runs under ``python -X importtime`` and the test reads the
modules it imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragindex.cli import app as cli_app

MAIN = "from ragindex.cli import main; main()"

NEVER_IN_A_SEARCH = (
    "torch",
    "sentence_transformers",
    "transformers",
    "fastapi",
    "starlette",
    "uvicorn",
    "rich",
    "click",
    "sqlalchemy.orm",
    "sqlalchemy.dialects.postgresql",
    "ragindex.service",
    "ragindex.mcp",
    "ragindex.loaders",
    "ragindex.pipeline.sync",
    "ragindex.watcher",
    "ragindex.cli.service",
    "ragindex.cli.watch",
    "ragindex.cli.worker",
    "ragindex.cli.mcp",
    "ragindex.cli.eval",
    "ragindex.cli.manage",
    "ragindex.chunking.factory",
    "ragindex.chunking.recursive",
    "ragindex.markup",
    "ragindex.filters",
)
"""A search needs none of these: the model runs in ONNX Runtime, JSON needs no rich, the store no ORM, finding the
model's folder no chunker, and a search without a filter no filter language."""


def _cli(*args: str, data_dir: Path, importtime: bool = False) -> subprocess.CompletedProcess[str]:
    flags = ["-X", "importtime"] if importtime else []
    return subprocess.run(
        [sys.executable, *flags, "-c", MAIN, "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=600,
    )


def _imported(stderr: str) -> set[str]:
    """Module names from ``-X importtime`` lines (``import time: self | cumulative | name``)."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line and "[us]" not in line
    }


def test_every_command_has_its_module() -> None:
    """COMMAND_MODULES names the module of every registered command and group, and nothing else."""
    cli_app.register_commands([])
    registered = {c.name or (c.callback.__name__ if c.callback else "") for c in cli_app.app.registered_commands}
    registered |= {g.name or "" for g in cli_app.app.registered_groups}
    assert registered == set(cli_app.COMMAND_MODULES)


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["search", "q"], "search"),
        (["--data-dir", "/d", "-v", "search", "--json", "q"], "search"),
        (["--data-dir", "search", "status"], "status"),  # the option's value is not the command
        (["--verbose", "keys", "list"], "keys"),
        (["--help"], None),
        ([], None),
    ],
)
def test_command_name(args: list[str], name: str | None) -> None:
    assert cli_app.command_name(args) == name


@pytest.mark.integration
def test_a_search_imports_only_what_it_needs(tmp_path: Path, corpus: Path) -> None:
    data_dir = tmp_path / "data"
    for args in (("ingest", str(corpus), "--json"), ("models", "prepare", "--json")):
        done = _cli(*args, data_dir=data_dir)
        assert done.returncode == 0, done.stderr

    search = _cli("search", "what causes tides", "--json", data_dir=data_dir, importtime=True)

    assert search.returncode == 0, search.stderr[-3000:]
    assert json.loads(search.stdout)["hits"], "the search found nothing"
    imported = _imported(search.stderr)
    assert "onnxruntime" in imported and "ragindex.index.qdrant_edge" in imported  # it did search
    assert sorted(m for m in NEVER_IN_A_SEARCH if m in imported) == []
    # the index was left open for the process's end: the next command finds it unlocked
    status = _cli("status", "--json", data_dir=data_dir)
    assert status.returncode == 0, status.stderr
    again = _cli("search", "espresso pressure", "--json", data_dir=data_dir)
    assert again.returncode == 0 and json.loads(again.stdout)["hits"], again.stderr


def test_human_output_still_imports_rich(tmp_path: Path) -> None:
    """rich is loaded on first print, not dropped: the table of an (empty) status still renders."""
    done = _cli("status", data_dir=tmp_path / "empty")
    assert done.returncode == 0, done.stderr
    assert "status" in done.stdout
