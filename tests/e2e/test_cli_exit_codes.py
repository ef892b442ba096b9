"""Exit codes, crash reports, signals and terminal safety of the real ``ragindex`` console script.

Every test runs the installed ``ragindex`` command in a subprocess (importing this checkout's
``ragindex``) on the embedded default: SQLite, Qdrant Edge and the shipped all-MiniLM-L6-v2 model,
with default settings.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path

import pytest

import ragindex
from corpora import MANY_DOCS, write_files
from ragindex.config.settings import DEFAULT_DENSE_MODEL
from ragindex.errors import EXIT_CRASH, EXIT_PARTIAL
from ragindex.store.migrations import MIGRATIONS

pytestmark = pytest.mark.integration

CLI = str(Path(sys.executable).with_name("ragindex"))
SRC = str(Path(ragindex.__file__).parents[1])
# what rich writes on a terminal: colour and style (SGR), and the progress display's cursor hide/show, line erase and
# cursor up; any other control character in the output came from the data
SGR = re.compile(r"\x1b\[[0-9;]*m")
RICH = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\?25[lh]|\x1b\[2K|\x1b\[1A")


def _env(data: Path, extra: Mapping[str, str]) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RAGINDEX_", "TTY_")) and k not in ("FORCE_COLOR", "NO_COLOR", "COLUMNS")
    }
    env.update(RAGINDEX_DATA_DIR=str(data), PYTHONPATH=SRC, OPENBLAS_NUM_THREADS="1", **extra)
    return env


def ragindex_cli(data: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``ragindex ARGS`` to its end with ``data`` as the data dir and ``env`` added to a clean environment."""
    return subprocess.run([CLI, *args], env=_env(data, env), capture_output=True, text=True, timeout=600, check=False)


def test_version_is_the_installed_package_version(tmp_path: Path) -> None:
    result = ragindex_cli(tmp_path / "data", "--version")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"ragindex {version('ragindex')}"
    assert lines[1] == f"schema {MIGRATIONS[-1][0]}"
    assert lines[2] == f"dense model {DEFAULT_DENSE_MODEL}"
    assert "torch" not in result.stderr


def test_version_names_another_dense_model_and_survives_broken_settings(tmp_path: Path) -> None:
    other = ragindex_cli(tmp_path / "data", "--version", RAGINDEX_DENSE_MODEL="/models/e5-small")
    assert other.returncode == 0 and other.stdout.splitlines()[2] == "dense model /models/e5-small", other.stderr
    broken = ragindex_cli(tmp_path / "data", "--version", RAGINDEX_DEFAULT_TOP_K="-1")
    assert broken.returncode == 0, broken.stderr
    assert (
        broken.stdout.splitlines()[:1] == [f"ragindex {version('ragindex')}"] and len(broken.stdout.splitlines()) == 2
    )


def test_ingest_with_a_bad_file_exits_8_and_lists_it(tmp_path: Path, corpus: Path) -> None:
    (corpus / "broken.json").write_text('{"title": "an object that never ends"', encoding="utf-8")

    human = ragindex_cli(tmp_path / "human", "ingest", str(corpus))
    assert human.returncode == EXIT_PARTIAL, human.stderr
    listed = [line for line in human.stdout.splitlines() if line.startswith("failed: ")]
    assert len(listed) == 1 and "broken.json" in listed[0] and "invalid JSON" in listed[0], human.stdout

    machine = ragindex_cli(tmp_path / "json", "ingest", str(corpus), "--json")
    assert machine.returncode == EXIT_PARTIAL, machine.stderr
    report = json.loads(machine.stdout)
    assert report["documents"]["added"] == 3 and report["documents"]["failed"] == 1
    [failure] = report["failures"]
    assert failure["source"] == str(corpus / "broken.json") and "invalid JSON" in failure["error"]

    # the good files are indexed: a search finds them
    found = ragindex_cli(tmp_path / "json", "search", "honeybee queen", "--mode", "bm25", "--json")
    assert found.returncode == 0 and json.loads(found.stdout)["hits"][0]["filename"] == "bees.txt"


def _crash_log(stderr: str) -> Path:
    [line] = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert "unexpected InjectedCrash: injected crash at dense.before_mark_success" in line, line
    match = re.search(r"report it with (\S+\.log)", line)
    assert match, line
    return Path(match[1])


def test_an_unexpected_error_exits_70_with_one_line_naming_the_log(tmp_path: Path, corpus: Path) -> None:
    data = tmp_path / "data"
    result = ragindex_cli(data, "ingest", str(corpus), RAGINDEX_FAILPOINTS="dense.before_mark_success=crash")
    assert result.returncode == EXIT_CRASH, result.stderr
    assert "Traceback (most recent call last)" not in result.stderr and result.stdout.strip() == ""
    log = _crash_log(result.stderr)
    assert log.parent == (data / "logs").resolve()
    text = log.read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in text and "faults.py" in text
    assert f"ingest {corpus}" in text

    verbose = ragindex_cli(
        tmp_path / "verbose", "-v", "ingest", str(corpus), RAGINDEX_FAILPOINTS="dense.before_mark_success=crash"
    )
    assert verbose.returncode == EXIT_CRASH
    assert "Traceback (most recent call last)" in verbose.stderr
    assert _crash_log(verbose.stderr).is_file()


def _chunk_counts(db: Path) -> dict[str, int]:
    """Chunks (and sections) per status over every vector kind, read from the SQLite truth store."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        rows = conn.execute(
            "SELECT s, count(*) FROM (SELECT dense_status AS s FROM chunks UNION ALL SELECT bm25_status FROM chunks)"
            " WHERE s IS NOT NULL GROUP BY s"
        ).fetchall()
    return dict(rows)


def _wait_until_a_batch_is_indexed(db: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 300  # a safety net for a hung process, not a measurement
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if _chunk_counts(db).get("SUCCESS"):
                return
        except sqlite3.OperationalError:  # the database or its tables do not exist yet
            pass
        time.sleep(0.2)
    raise AssertionError(f"no chunk was indexed (exit code {proc.poll()})")


@pytest.mark.parametrize(
    ("signum", "output"), [(signal.SIGINT, "--table"), (signal.SIGTERM, "--json")], ids=["SIGINT", "SIGTERM-json"]
)
def test_a_signal_stops_ingest_cleanly(tmp_path: Path, signum: signal.Signals, output: str) -> None:
    folder = write_files(tmp_path / "notes", MANY_DOCS)
    data = tmp_path / "data"
    args = [CLI, "ingest", str(folder), *(["--json"] if output == "--json" else [])]
    proc = subprocess.Popen(args, env=_env(data, {}), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_until_a_batch_is_indexed(data / "ragindex.db", proc)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signum, err
    assert "Traceback (most recent call last)" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("interrupted (") and last.endswith("run the same command again to finish"), err
    if output == "--json":
        assert out == ""  # no half report for a script to parse
    counts = _chunk_counts(data / "ragindex.db")
    assert counts.get("INDEXING", 0) == 0, counts  # it stopped between batches: no claim left behind
    assert counts.get("PENDING", 0) > 0, counts  # ... before the end of the ingest

    if signum == signal.SIGINT:
        again = ragindex_cli(data, "ingest", str(folder), "--json")
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["chunks"]["embedded"] > 0
        verify = ragindex_cli(data, "verify", "--json")
        assert verify.returncode == 0 and json.loads(verify.stdout)["ok"], verify.stdout
        assert set(_chunk_counts(data / "ragindex.db")) == {"SUCCESS"}


def test_commands_that_leave_items_failed_exit_8(tmp_path: Path, corpus: Path) -> None:
    """update-chunk, reindex --chunk-id and delete exit 8 when a copy could not be written or purged; repair then 0."""
    data = tmp_path / "data"
    assert ragindex_cli(data, "ingest", str(corpus)).returncode == 0
    hit = json.loads(ragindex_cli(data, "search", "honeybee queen", "--mode", "bm25", "--json").stdout)["hits"][0]
    chunk = hit["chunk_id"]
    fail_dense = {"RAGINDEX_FAILPOINTS": "dense.after_encode=raise"}

    update = ragindex_cli(
        data, "update-chunk", chunk, "--text", "Bumblebees nest in the ground.", "--json", **fail_dense
    )
    assert update.returncode == EXIT_PARTIAL and json.loads(update.stdout)["ok"] is False, update.stderr
    reindex = ragindex_cli(data, "reindex", "--chunk-id", chunk, "--json", **fail_dense)
    assert reindex.returncode == EXIT_PARTIAL and json.loads(reindex.stdout)["failed"]["dense"] == 1
    assert ragindex_cli(data, "verify").returncode == 1

    repair = ragindex_cli(data, "repair", "--json")
    assert repair.returncode == 0 and json.loads(repair.stdout)["ok"], repair.stdout
    assert ragindex_cli(data, "verify").returncode == 0

    delete = ragindex_cli(
        data, "delete", "--chunk-id", chunk, "--json", RAGINDEX_FAILPOINTS="purge.before_index_delete=raise"
    )
    # two copies: the chunk's point and its section's (its only chunk is gone, so the section is removed with it)
    assert delete.returncode == EXIT_PARTIAL and json.loads(delete.stdout)["purge_failed"] == 2
    assert ragindex_cli(data, "repair").returncode == 0


def _assert_no_foreign_escapes(output: str) -> None:
    leftover = RICH.sub("", output)
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", leftover), repr(leftover[:2000])
    assert "lava\x1b[31m" not in output  # the one sequence of the data that RICH would let through


def test_control_characters_are_escaped_for_people_and_exact_in_json(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    name = "lava\x1b[31m\x1b]0;owned\x07.txt"
    text = "Basalt lava \x1b[2J flows from fissure eruptions \x1b]0;pwned\x07 on volcanic islands."
    (folder / name).write_text(text, encoding="utf-8")
    (folder / "tea.txt").write_text("Green tea is steamed soon after picking, which stops oxidation.", encoding="utf-8")
    (folder / "bad\x1b[2J.json").write_text("{", encoding="utf-8")
    data = tmp_path / "data"
    terminal = {"FORCE_COLOR": "1"}  # rich writes as on a terminal, with its own colour sequences

    ingest = ragindex_cli(data, "ingest", str(folder), **terminal)
    assert ingest.returncode == EXIT_PARTIAL, ingest.stderr
    _assert_no_foreign_escapes(ingest.stdout + ingest.stderr)
    assert r"bad\x1b[2J.json" in SGR.sub("", ingest.stdout)

    search = ragindex_cli(data, "search", "basalt lava fissure eruptions", "--top-k", "1", **terminal)
    assert search.returncode == 0, search.stderr
    _assert_no_foreign_escapes(search.stdout + search.stderr)
    shown = SGR.sub("", search.stdout)
    assert r"lava\x1b[31m\x1b]0;owned\x07.txt" in shown and r"Basalt lava \x1b[2J flows" in shown

    exact = ragindex_cli(data, "search", "basalt lava fissure eruptions", "--top-k", "1", "--json", **terminal)
    assert exact.returncode == 0 and "\x1b" not in exact.stdout  # JSON writes it as \u001b
    [hit] = json.loads(exact.stdout)["hits"]
    assert hit["filename"] == name and hit["text"] == text

    missing = ragindex_cli(data, "ingest", str(folder / "gone\x1b[2J"), **terminal)
    assert missing.returncode == 2
    _assert_no_foreign_escapes(missing.stderr)
    assert r"gone\x1b[2J" in SGR.sub("", missing.stderr)
