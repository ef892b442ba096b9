"""CLI defaults come from the settings: ``ragindex search`` in a real process, configured by the environment only.

Also the one-shot case of the score-drift watch: the search's scores are saved when the process closes its engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ragindex
from ragindex.config.settings import Settings
from ragindex.engine import Engine

pytestmark = pytest.mark.integration

SRC = str(Path(ragindex.__file__).parents[1])


def search(data: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAGINDEX_")}
    clean.update(RAGINDEX_DATA_DIR=str(data), PYTHONPATH=SRC, OPENBLAS_NUM_THREADS="1", **env)
    command = [sys.executable, "-c", "from ragindex.cli import main; main()", "search", *args, "--json"]
    return subprocess.run(command, env=clean, capture_output=True, text=True, timeout=600, check=False)


def test_search_top_k_defaults_to_the_setting_and_the_flag_overrides_it(tmp_path: Path, corpus: Path) -> None:
    data = tmp_path / "data"
    with Engine(Settings(data_dir=data)) as engine:
        engine.ingest([corpus])
        assert len(engine.search("honeybee queen", user_id=1, set_id=1, mode="dense").hits) == 3  # all three chunks

    done = search(data, "honeybee queen", "--mode", "dense", RAGINDEX_DEFAULT_TOP_K="2")
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)["hits"]
    assert len(hits) == 2 and hits[0]["filename"] == "bees.txt"

    done = search(data, "honeybee queen", "--mode", "dense", "--top-k", "1", RAGINDEX_DEFAULT_TOP_K="2")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["hits"]) == 1

    done = search(data, "honeybee queen", RAGINDEX_DEFAULT_TOP_K="0")
    assert done.returncode == 3 and "default_top_k" in done.stderr  # a bad setting is a configuration error

    # each engine saved its dense scores when it closed: one window of three searches (this process's and two CLI
    # runs), each adding its best score and its whole candidate list (three chunks, whatever top_k)
    with Engine(Settings(data_dir=data)) as engine:
        (window,) = engine.store.score_windows(source="dense")
        assert (window.state, window.queries, window.top1.count, window.top10.count) == ("OPEN", 3, 3, 9)
