"""SIGINT and SIGTERM beside SIGKILL at the failpoints of an ingest, on the embedded default and on MariaDB and
PostgreSQL (issue 11, item 10).

Each cell runs the real ``ragindex ingest`` with ``RAGINDEX_FAILPOINTS="<point>=<signal>"``: the process signals
itself at that instruction (``sigint``/``sigterm``: its handler stops it at the next safe point, exit 130/143;
``kill``: SIGKILL, exit -9). Then ONE command with the default settings (nothing shortens a stale timeout or a
lease) must leave ``ragindex verify`` at exit 0, with 0 lost chunks and 0 ghost hits
(:func:`faultkit.assert_converged`). ``ingest`` as the next command must also finish the whole corpus.
The SIGKILL cells of the embedded default are in ``test_failpoints_sigkill.py`` (every operation and failpoint).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from faultkit import (
    CHANGED,
    CORPUS,
    INDEX_POINTS,
    PURGE_POINTS,
    REPLACED,
    assert_converged,
    run_cli,
    settings,
    warm_cache,
)
from faultkit import write_corpus as write_files

from dbkit import Server, throwaway_database
from ragindex.engine import Engine

pytestmark = pytest.mark.integration

EXIT = {"kill": -signal.SIGKILL, "sigint": 130, "sigterm": 143}
INGEST_POINTS = ["chunking.after_truth_write", *INDEX_POINTS]


def _cell(tmp_path: Path, operation: str, point: str, action: str, next_command: str, url: str | None) -> None:
    corpus, data = tmp_path / "corpus", tmp_path / "data"
    versions = write_files(corpus)
    extra = {"database_url": url} if url else {}
    env = {"RAGINDEX_DATABASE_URL": url} if url else {}
    with Engine(settings(data, **extra)) as engine:
        warm_cache(engine, sorted(corpus.iterdir()), documents=CHANGED.values())  # no model load in the CLI
        if operation == "reingest":
            engine.ingest([corpus])
    if operation == "reingest":
        versions |= write_files(corpus, CHANGED)

    stopped = run_cli(data, ["ingest", str(corpus), "--json"], f"{point}={action}", extra_env=env)
    assert stopped.returncode == EXIT[action], stopped.stderr[-2000:]
    assert "Traceback" not in stopped.stderr, stopped.stderr[-2000:]
    if action != "kill":
        assert "interrupted" in stopped.stderr, stopped.stderr[-2000:]

    args = ["ingest", str(corpus), "--json"] if next_command == "ingest" else ["repair", "--json"]
    done = run_cli(data, args, extra_env=env)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    verify = run_cli(data, ["verify", "--json"], extra_env=env)
    assert verify.returncode == 0, verify.stdout[-2000:]
    with Engine(settings(data, **extra)) as engine:
        assert_converged(engine, versions, files=list(CORPUS) if next_command == "ingest" else None)


EMBEDDED = [("ingest", p, a) for p in INGEST_POINTS for a in ("sigint", "sigterm")] + [
    ("reingest", p, a) for p in PURGE_POINTS for a in ("sigint", "sigterm")
]


@pytest.mark.parametrize(("operation", "point", "action"), EMBEDDED, ids=[f"{o}-{p}-{a}" for o, p, a in EMBEDDED])
def test_a_signal_at_a_failpoint_then_one_command_converges(
    tmp_path: Path, operation: str, point: str, action: str
) -> None:
    # alternate the next command so both are proven over the matrix
    next_command = "ingest" if (INGEST_POINTS + PURGE_POINTS).index(point) % 2 == 0 else "repair"
    _cell(tmp_path, operation, point, action, next_command, None)


REINGEST_KILLS = ["chunking.after_truth_write", *PURGE_POINTS]


@pytest.mark.parametrize("point", REINGEST_KILLS)
def test_a_killed_reingest_of_edited_files_then_one_ingest_converges(tmp_path: Path, point: str) -> None:
    """SIGKILL between a re-ingest's truth write of an edited file and the purge of its old version (issue 23).

    The edited files are recorded with their new hash already, so the next ``ingest`` skips them as unchanged: it
    must still purge the old version's rows the killed run left REMOVED but in the index. ONE ``ingest``, then
    ``verify`` exits 0, and a search finds the new text and nothing of the old.
    """
    _cell(tmp_path, "reingest", point, "kill", "ingest", None)
    with Engine(settings(tmp_path / "data")) as engine:
        for old, new in REPLACED.values():
            found = engine.search(new, user_id=1, set_id=1, mode="bm25").hits
            assert found and new in (found[0].context or found[0].text)
            stale = engine.search(old, user_id=1, set_id=1, mode="bm25", top_k=20).hits
            assert not [h.chunk_id for h in stale if old in (h.context or h.text)]


SHARED_POINTS = ("dense.after_index_write", "bm25.before_mark_success")
SHARED = [(p, a) for p in SHARED_POINTS for a in ("kill", "sigint", "sigterm")]


@pytest.fixture(params=["mysql", "postgres"])
def mysql_or_postgres_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A throw-away database on MariaDB, then on PostgreSQL (its name gives the cells both tier markers)."""
    server: Server = request.param
    with throwaway_database(server) as url:
        yield url


@pytest.mark.parametrize(("point", "action"), SHARED, ids=[f"{p}-{a}" for p, a in SHARED])
def test_a_signal_on_a_shared_store_then_one_command_converges(
    tmp_path: Path, mysql_or_postgres_url: str, point: str, action: str
) -> None:
    """MariaDB/PostgreSQL truth store: a dead owner is proven gone by its pid (same host), not by a timeout."""
    _cell(tmp_path, "ingest", point, action, "ingest" if action != "sigterm" else "repair", mysql_or_postgres_url)
