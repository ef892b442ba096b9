"""Only one reconciler acts at a time: two real processes on MariaDB, PostgreSQL and SQLite.

Each process opens its own store (its own connections) on the same database and contends for the lock through
``tests/contract/reconcile_probe.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

PROBE = Path(__file__).with_name("reconcile_probe.py")
DATABASES = [
    pytest.param("sqlite_url", id="sqlite"),
    pytest.param("empty_mysql_url", id="mariadb", marks=pytest.mark.mysql),
    pytest.param("empty_postgres_url", id="postgres", marks=pytest.mark.postgres),
]


@contextmanager
def probe(url: str, owner: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """The probe as a running process; killed (a no-op once it exited) and reaped afterwards."""
    proc = subprocess.Popen(
        [sys.executable, str(PROBE), url, owner, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        proc.kill()
        proc.communicate(timeout=60)  # reaps it and closes its pipes


def line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    out = proc.stdout.readline().strip()
    assert out, f"the probe said nothing; stderr:\n{proc.stderr.read() if proc.stderr else ''}"
    return out


def attempt(url: str, owner: str) -> str:
    done = subprocess.run(
        [sys.executable, str(PROBE), url, owner, "try"], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.splitlines()[0]


@pytest.fixture
def url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(request.param))


@pytest.mark.parametrize("url", DATABASES, indirect=True)
def test_a_second_process_is_refused_until_the_holder_releases(url: str) -> None:
    with probe(url, "first", "hold") as holder:
        assert line(holder) == "held"
        assert attempt(url, "second") == "refused"
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert line(holder) == "released"
        assert holder.wait(60) == 0
    assert attempt(url, "second") == "held"


@pytest.mark.parametrize("url", DATABASES, indirect=True)
def test_a_holder_killed_with_sigkill_frees_the_lock(url: str) -> None:
    """A server drops a dead holder's lock with its session; SQLite sees that the lease's pid is gone on this host."""
    with probe(url, "doomed", "hold") as holder:
        assert line(holder) == "held"
        holder.kill()  # SIGKILL while holding the lock: nothing is released by the holder
        holder.wait(60)
    deadline = time.monotonic() + 30
    while (outcome := attempt(url, "next")) != "held":  # a server notices the closed socket within moments
        assert time.monotonic() < deadline, outcome
        time.sleep(0.2)


@pytest.mark.parametrize("url", DATABASES, indirect=True)
def test_two_processes_running_passes_never_overlap(url: str) -> None:
    from ragindex.store.sql import SqlTruthStore

    want = 6
    with probe(url, "a", "passes", str(want)) as a, probe(url, "b", "passes", str(want)) as b:
        procs = [a, b]
        assert [line(p) for p in procs] == ["ready", "ready"]
        for p in procs:  # start both at once, so that they contend
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        results: list[dict[str, Any]] = [json.loads(line(p)) for p in procs]
        assert [p.wait(60) for p in procs] == [0, 0]
    spans = sorted((start, end, r["owner"]) for r in results for start, end in r["spans"])
    assert [len(r["spans"]) for r in results] == [want, want]
    for (_, end, first), (start, _, second) in zip(spans, spans[1:], strict=False):
        assert end <= start, f"passes of {first} and {second} overlapped"
    assert sum(r["skipped"] for r in results) > 0, "the processes never contended: the test proved nothing"
    store = SqlTruthStore(url)
    try:
        totals = store.reconcile_totals()
        assert totals is not None and totals.passes == 2 * want, "every held pass was recorded, no update lost"
    finally:
        store.close()
