"""The claim owner of one process: dead-pid proof, a stop at a batch boundary, claims given back on close.

Real SQLite, Qdrant Edge and model; real subprocesses for the pids.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from claimkit import wait_for, write_corpus
from ragindex.clock import utcnow
from ragindex.engine import Engine
from ragindex.errors import IndexLockedError, Interrupted
from ragindex.pipeline.lease import Lease, ProcessIdentity, process_started, proven_dead
from ragindex.store.records import OwnerRow

pytestmark = pytest.mark.integration


def row(identity: ProcessIdentity, **changes: Any) -> OwnerRow:
    now = utcnow()
    owner = OwnerRow(
        owner_id="0" * 16,
        host=identity.host,
        host_key=identity.host_key,
        pid=identity.pid,
        process_started=identity.started,
        command=identity.command,
        registered_at=now,
        heartbeat_at=now,
        lease_until=now,
    )
    return replace(owner, **changes)


def test_a_dead_or_reused_pid_proves_its_owner_gone_only_on_its_own_host() -> None:
    me = ProcessIdentity.current()
    assert me.started and abs(me.started - (process_started(me.pid) or 0)) < 1
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = process_started(child.pid)
        assert started is not None and started >= me.started - 1
        alive = row(me, pid=child.pid, process_started=started)
        assert not proven_dead(alive, me), "a live process is not dead"
        assert proven_dead(replace(alive, process_started=started - 3600), me), "a reused pid: another process"
        assert not proven_dead(replace(alive, host_key="another-host"), me), "another host's pids prove nothing"
    finally:
        child.kill()
        child.wait()
    assert process_started(child.pid) is None
    assert proven_dead(row(me, pid=child.pid), me)
    assert not proven_dead(row(me), me), "this process is never dead to itself"


def test_a_stop_request_ends_the_ingest_at_a_batch_boundary_and_close_gives_everything_back(
    make_engine: Callable[..., Engine], tmp_path: Path
) -> None:
    corpus = write_corpus(tmp_path / "corpus", 12)
    with make_engine(embed_batch_size=16) as engine:
        batches = 0

        def progress(event: str, data: dict[str, Any]) -> None:
            nonlocal batches
            if event == "indexed":
                batches += 1
                engine.request_stop()  # what the CLI's SIGINT/SIGTERM handler calls

        with pytest.raises(Interrupted):
            engine.ingest([corpus], progress=progress)
        assert batches == 1, "the run went on past the batch boundary"
        counts = engine.store.chunk_count_by_status("dense")
        assert counts["SUCCESS"] == 16 and "INDEXING" not in counts
        store = engine.store
        assert store.owner_id is not None and [o.owner_id for o in store.list_owners()] == [store.owner_id]
    with make_engine() as engine:  # closed: owner row gone, lock released; the next ingest finishes the rest
        assert engine.store.list_owners() == []
        engine.ingest([corpus])
        assert engine.verify().ok


def test_close_gives_back_claims_an_operation_left_behind(make_engine: Callable[..., Engine], corpus: Path) -> None:
    """A KeyboardInterrupt between claim and finish leaves claims held: close returns them, without an attempt."""
    with make_engine() as engine:
        engine.ingest([corpus])
        rows = engine.store.get_chunks(engine.store.all_active_chunk_ids())
        ids = [r.chunk_id for r in rows if r.dense_status == "SUCCESS"][:2]  # chunks (sections have no dense copy)
        engine.store.reset_status(ids, ["dense"], from_statuses=("SUCCESS",))
        assert engine.store.claim("dense", ids).complete
    with make_engine() as engine:
        rows = engine.store.get_chunks(ids)
        assert [(r.dense_status, r.attempts) for r in rows] == [("PENDING", 0), ("PENDING", 0)]
        assert engine.repair().ok and engine.verify().ok


def test_the_heartbeat_renews_the_lease(make_engine: Callable[..., Engine]) -> None:
    with make_engine() as engine:
        lease = Lease(engine.store, lease_seconds=30, heartbeat_seconds=0.05)
        lease.ensure()
        first = engine.store.list_owners()[0].heartbeat_at
        wait_for("the next beat", lambda: engine.store.list_owners()[0].heartbeat_at > first)
        lease.close()
        assert engine.store.list_owners() == []


def test_a_second_engine_on_the_data_dir_is_refused_before_it_writes(
    make_engine: Callable[..., Engine], corpus: Path
) -> None:
    with make_engine() as first:
        first.ingest([corpus])
        with make_engine() as second:
            before = second.store.status_counts()
            with pytest.raises(IndexLockedError, match="nothing was written"):
                second.ingest([corpus], full=True)
            assert second.store.status_counts() == before and second.store.list_owners() != []
        assert first.verify().ok
