"""Issue 24: a metadata-only upsert killed at any point between its truth write and its payload writes converges.

Records are upserted in this process, then a real subprocess upserts them again with new metadata and SIGKILLs itself
at a failpoint (``RAGINDEX_FAILPOINTS="<point>=kill"``). While the new metadata is the truth and some copies still
carry the old one, a filtered search never answers under the old values (the truth store wins at backfill), and
``verify`` reports the unfinished copies. Then the next single command converges: a plain re-run of the same upsert,
or ``repair``, with the default settings.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from faultkit import cli_env, settings

from ragindex.engine import Engine

pytestmark = pytest.mark.integration

TEXTS = [
    "Honeybee colonies have one queen and thousands of workers.",
    "Sourdough starters ferment flour and water with wild yeast.",
    "Spring tides follow the full and the new moon.",
    "Magma rises through volcanic vents before an eruption.",
    "Glaciers carve U-shaped valleys and leave moraines behind.",
]
POINTS = ["relabel.after_truth_write", "dense.after_claim", "dense.after_index_write", "bm25.after_index_write"]
UPSERT = """
import json, sys
from ragindex.config.settings import Settings
from ragindex.engine import Engine
with Engine(Settings()) as engine:
    engine.upsert(json.loads(sys.argv[1]))
"""


def records(tag: str) -> list[dict[str, object]]:
    return [{"key": f"note-{i}", "text": t, "metadata": {"tag": tag, "n": i}} for i, t in enumerate(TEXTS)]


def tagged(engine: Engine, tag: str, mode: str) -> set[str]:
    hits = engine.search(
        "queen yeast tides magma glaciers", user_id=1, set_id=1, mode=mode, top_k=20, filter={"tag": tag}
    )
    return {h.source for h in hits.hits}


def upsert_in_child(data: Path, tag: str, failpoints: str | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", UPSERT, json.dumps(records(tag))],
        env=cli_env(data, failpoints),
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("next_command", ["upsert", "repair"])
def test_a_killed_metadata_update_converges_with_the_next_command(
    tmp_path: Path, point: str, next_command: str
) -> None:
    data = tmp_path / "data"
    with Engine(settings(data)) as engine:
        engine.upsert(records("old"))
        assert engine.verify().ok and tagged(engine, "old", "hybrid") == {f"note-{i}" for i in range(len(TEXTS))}

    killed = upsert_in_child(data, "new", f"{point}=kill")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]

    everything = {f"note-{i}" for i in range(len(TEXTS))}
    with Engine(settings(data)) as engine:
        assert {d.metadata["tag"] for d in engine.store.list_documents()} == {"new"}, "the truth write committed"
        assert not engine.verify().ok, "the copies still to rewrite are unfinished work"
        for mode in ("dense", "bm25", "hybrid"):
            assert tagged(engine, "old", mode) == set(), f"{mode}: answered under the old metadata"
        if next_command == "repair":
            assert engine.repair().ok
    if next_command == "upsert":
        again = upsert_in_child(data, "new", None)
        assert again.returncode == 0, again.stderr[-2000:]
    with Engine(settings(data)) as engine:
        assert engine.verify().ok
        assert {d.status for d in engine.store.list_documents()} == {"SUCCESS"}
        for mode in ("dense", "bm25", "hybrid"):
            assert tagged(engine, "new", mode) == everything, mode
            assert tagged(engine, "old", mode) == set(), mode
