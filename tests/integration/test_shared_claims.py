"""Issue 11, claims on a shared store: real processes on MariaDB and PostgreSQL.

Each process has its own data dir (its own Qdrant Edge index: no Qdrant server runs here, see
docs/architecture.md) over one shared truth store, the way workers share a database. What is under test
is who may take whose claims:

* a SIGKILLed process's claims are released by the next command at once, with the default 30 s lease,
  because its pid is gone on this host (the lease has not lapsed: the release does not wait for it);
* a process paused (SIGSTOP) past its lease loses its claims to the next command, and once resumed
  (SIGCONT) it writes nothing: its lease guard finds the claims gone. This mechanism test shortens the
  paused process's lease to 3 s (heartbeat 1 s) so that it lapses within the test;
* a live owner's claims are left alone by repair, which lists them with their owner, and reports not ok.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from claimkit import end, indexing, outcome, query, run, start, stopped, wait_for, write_corpus
from dbkit import throwaway_database
from ragindex.clock import utcnow
from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.store.records import NewOwner
from ragindex.store.sql import SqlTruthStore

pytestmark = pytest.mark.integration


@pytest.fixture(
    params=[pytest.param("mysql", marks=pytest.mark.mysql), pytest.param("postgres", marks=pytest.mark.postgres)]
)
def shared_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A throw-away database on the MariaDB or PostgreSQL test server."""
    with throwaway_database(request.param) as url:
        yield url


def owners(url: str) -> list[tuple[str, int, datetime]]:
    """(owner_id, pid, lease_until) of every registered owner."""
    return [
        (str(o), int(p), lease) for o, p, lease in query(url, "SELECT owner_id, pid, lease_until FROM claim_owners")
    ]


def test_a_killed_process_is_released_by_the_next_command_without_waiting(tmp_path: Path, shared_url: str) -> None:
    corpus = write_corpus(tmp_path / "corpus", 3)
    data = tmp_path / "data"
    killed = run(data, "ingest", str(corpus), "--json", database_url=shared_url, failpoints="dense.after_encode=kill")
    assert killed.returncode == -signal.SIGKILL, outcome(killed)
    assert indexing(shared_url) > 0
    ((_, dead_pid, lease_until),) = owners(shared_url)
    assert lease_until > utcnow() + timedelta(seconds=5), "the lease has not lapsed: only the dead pid can tell"

    repaired = run(data, "repair", "--json", database_url=shared_url)
    assert repaired.returncode == 0, outcome(repaired)
    report = json.loads(repaired.stdout)
    (released,) = report["released_owners"]
    assert released["pid"] == dead_pid and released["lease_left_s"] > 0 and released["claims"]["dense"] > 0
    assert report["ok"] and report["unfinished"] == 0 and report["live_claims"] == []
    assert indexing(shared_url) == 0 and owners(shared_url) == []
    verify = run(data, "verify", "--json", database_url=shared_url)
    assert verify.returncode == 0, outcome(verify)


def test_a_process_paused_past_its_lease_writes_nothing_when_it_resumes(tmp_path: Path, shared_url: str) -> None:
    corpus = write_corpus(tmp_path / "corpus", 3)  # one claim batch
    paused_data, next_data = tmp_path / "paused", tmp_path / "next"
    log = tmp_path / "paused.log"
    paused = start(
        paused_data,
        log,
        "ingest",
        str(corpus),
        "--json",
        database_url=shared_url,
        failpoints="dense.after_encode=stop",  # SIGSTOP itself with its batch encoded, before the index write
        claim_lease_seconds="3",
        claim_heartbeat_seconds="1",
    )
    try:
        wait_for("the process to stop after encoding", lambda: stopped(paused.pid), paused)
        claimed = sorted(r[0] for r in query(shared_url, "SELECT chunk_id FROM chunks WHERE dense_status = 'INDEXING'"))
        assert claimed
        wait_for("its lease to lapse", lambda: all(lease < utcnow() for _, _, lease in owners(shared_url)))

        repaired = run(next_data, "repair", "--json", database_url=shared_url)
        assert repaired.returncode == 0, outcome(repaired)
        report = json.loads(repaired.stdout)
        assert [o["pid"] for o in report["released_owners"]] == [paused.pid]
        assert report["stale_indexing"]["dense"] == len(claimed) and report["ok"]
        verify = run(next_data, "verify", "--json", database_url=shared_url)
        assert verify.returncode == 0, outcome(verify)

        paused.send_signal(signal.SIGCONT)
        assert paused.wait(300) == 0, outcome(paused, log)
    finally:
        end(paused)
    assert "taken over before their index write" in log.read_text(), outcome(paused, log)
    # the resumed process wrote no index copy: it never even created a shard of its own index
    assert not list((paused_data / "index").glob("*/edge_config.json"))
    rows = query(shared_url, "SELECT dense_status, attempts FROM chunks WHERE dense_status IS NOT NULL")
    assert set(rows) == {("SUCCESS", 0)}  # indexed once, by the next command (SUCCESS resets the attempts)
    verify = run(next_data, "verify", "--json", database_url=shared_url)
    assert verify.returncode == 0, outcome(verify)


def test_repair_leaves_a_live_owners_claims_and_lists_them(tmp_path: Path, shared_url: str) -> None:
    corpus = write_corpus(tmp_path / "corpus", 2)
    with Engine(Settings(data_dir=tmp_path / "data", database_url=shared_url)) as engine:
        engine.ingest([corpus])
        rows = engine.store.get_chunks(engine.store.all_active_chunk_ids())
        ids = [r.chunk_id for r in rows if r.dense_status == "SUCCESS"][:3]  # chunks (sections have no dense copy)
        engine.store.reset_status(ids, ["dense"], from_statuses=("SUCCESS",))
        worker = SqlTruthStore(shared_url)  # a live worker on another host
        try:
            worker.register_owner(NewOwner("worker-7", "elsewhere", 31337, 1.0, "ragindex worker"), 30)
            claim = worker.claim("dense", ids)
            assert claim.complete

            report = engine.repair()
            assert not report.ok and report.stale["dense"] == 0 and report.unfinished == len(ids)
            (live,) = report.live_claims
            assert (live["host"], live["pid"], live["command"]) == ("worker-7", 31337, "ragindex worker")
            assert live["claims"] == {"dense": len(ids)} and 20 < live["lease_left_s"] <= 30
            assert sorted(worker.held(claim)) == sorted(ids), "a live owner's claims were taken"

            worker.renew_lease(-1)  # its heartbeat stopped: the lease lapsed
            report = engine.repair()
            assert report.ok and report.stale["dense"] == len(ids) and report.live_claims == []
            assert worker.held(claim) == [] and worker.mark_success(claim) == 0
            assert engine.verify().ok
        finally:
            worker.close()
