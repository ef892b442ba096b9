"""Through the real CLI: an unreadable file fails alone, ``ingest ""`` is exit 2, the mass-deletion guard is exit 2.

The unreadable file is a real ``chmod 000`` file. Tests run as root, whose DAC override reads any file, so the
ingest runs in a subprocess started through ``setpriv`` with ``CAP_DAC_OVERRIDE`` and ``CAP_DAC_READ_SEARCH``
dropped: root without its override, as the issue's reproduction ran it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import ragindex
from ragindex.cli import commands  # noqa: F401 - registers the commands
from ragindex.cli.app import app

pytestmark = pytest.mark.integration

FILES = {
    "bees.txt": "Honeybee colonies have one queen, thousands of female workers and a few male drones.",
    "tcp.txt": "TCP congestion control grows the window by slow start, then by additive increase.",
}


def cli(*args: str, data_dir: Path) -> tuple[int, Any, str]:
    result = CliRunner().invoke(app, ["--data-dir", str(data_dir), *args])
    try:
        payload = json.loads(result.stdout) if "--json" in args and result.stdout.strip() else result.stdout
    except json.JSONDecodeError:
        payload = result.stdout
    return result.exit_code, payload, result.stderr


def without_dac_override() -> list[str]:
    """The command prefix that makes file permissions apply to this process's children."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without util-linux setpriv: cannot make chmod 000 unreadable")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


def test_an_unreadable_file_fails_alone_and_is_retried(tmp_path: Path) -> None:
    folder = tmp_path / "src"
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    locked = folder / "locked.txt"
    locked.write_text("Spring tides happen at new and full moon.", encoding="utf-8")
    locked.chmod(0)
    data = tmp_path / "data"
    env = {**os.environ, "PYTHONPATH": str(Path(ragindex.__file__).resolve().parents[1])}
    command = [sys.executable, "-c", "from ragindex.cli import main; main()", "--data-dir", str(data)]
    result = subprocess.run(
        [*without_dac_override(), *command, "ingest", str(folder), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 8, result.stderr  # partial: one file failed, the others are indexed
    report = json.loads(result.stdout)
    assert report["documents"]["added"] == 2 and report["documents"]["failed"] == 1
    [failure] = report["failures"]
    assert failure["path"] == str(locked) and failure["stage"] == "LOADING"
    assert "PermissionError" in failure["error"] and "Permission denied" in failure["error"]

    locked.chmod(0o644)
    code, again, _ = cli("ingest", str(folder), "--json", data_dir=data)
    assert code == 0, again
    assert (again["documents"]["retried"], again["documents"]["unchanged"], again["failures"]) == (1, 2, [])


def test_an_empty_path_is_exit_2_not_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here.txt").write_text("a file in the current directory")
    code, _, err = cli("ingest", "", data_dir=tmp_path / "data")
    assert code == 2
    assert "an empty path was given" in err
    code, status, _ = cli("status", "--json", data_dir=tmp_path / "data")
    assert code == 0 and status["sets"] == [], "nothing of the current directory was recorded"


def test_the_mass_deletion_guard_is_exit_2_until_allowed(tmp_path: Path) -> None:
    folder = tmp_path / "src"
    folder.mkdir()
    for i in range(10):
        (folder / f"note{i}.txt").write_text(f"Note number {i} about the committee's item {i * 7}.", encoding="utf-8")
    data = tmp_path / "data"
    code, first, _ = cli("ingest", str(folder), "--json", data_dir=data)
    assert code == 0 and first["documents"]["added"] == 10
    for path in sorted(folder.iterdir())[:6]:
        path.unlink()
    code, _, err = cli("ingest", str(folder), "--json", data_dir=data)
    assert code == 2
    assert "refusing to remove 6 of the 10 documents" in " ".join(err.split())
    assert "--allow-mass-delete" in err
    code, allowed, _ = cli("ingest", str(folder), "--allow-mass-delete", "--json", data_dir=data)
    assert code == 0 and allowed["documents"]["removed"] == 6
