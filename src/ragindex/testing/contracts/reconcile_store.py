"""The contract of the reconciler's role of the truth store (:class:`~ragindex.store.protocol.ReconcileStore`).

A backend's test class lists :class:`ReconcileStoreContract` next to
:class:`~ragindex.testing.contracts.truth_store.TruthStoreContract` (same ``store`` fixture), so SQLite,
MySQL/MariaDB and PostgreSQL all show the same due retries, open work, unit tallies, single-actor lock and totals.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from datetime import timedelta

import pytest
from sqlalchemy import Index, delete, inspect

from ragindex.clock import utcnow
from ragindex.errors import ValidationError
from ragindex.store import schema
from ragindex.store.migrations import apply_migrations
from ragindex.store.records import UnitTally
from ragindex.store.sql import SqlTruthStore
from ragindex.testing.contracts.truth_store import SecondStore, index_done, ingest, statuses

DELAYS = (600.0, 30.0, 60.0)  # never-claimed PENDING rows wait 600 s; after 1 failure 30 s, after 2: 60 s


def fail(store: SqlTruthStore, chunk_id: str, kind: str = "dense", times: int = 1) -> None:
    """Claim and fail ``chunk_id`` ``times`` times (attempts go up by one each)."""
    for _ in range(times):
        claim = store.claim(kind, [chunk_id])
        assert claim.complete and store.mark_failed(claim, [chunk_id], f"{kind} encoder down") == 1


class ReconcileStoreContract(SecondStore):
    """Behaviour of the reconciler's role; the subclass provides the ``store`` fixture."""

    # ------------------------------------------------------------------ the migration
    def test_m009_upgrades_a_store_made_before_it(self, store: SqlTruthStore) -> None:
        """A database migrated up to m005 gets the ``reconciler`` table and the purge scan's index, once."""
        index = next(i for i in schema.chunks.indexes if i.name == "ix_chunks_purge_scan")
        with store.engine.begin() as conn:
            index.drop(conn)
            schema.reconciler.drop(conn)
            conn.execute(
                delete(schema.schema_migrations).where(schema.schema_migrations.c.name == "m009_reconciler_lock")
            )
        assert apply_migrations(store.engine) == ["m009_reconciler_lock"]
        with store.engine.connect() as conn:
            assert "ix_chunks_purge_scan" in {i["name"] for i in inspect(conn).get_indexes("chunks")}
        assert store.reconcile_totals() is None
        assert apply_migrations(store.engine) == []

    def test_m011_replaces_the_index_that_led_with_lifecycle_status(self, store: SqlTruthStore) -> None:
        """A database at m010 with m009's old index gets the purge scan's index the other way round, once."""
        with store.engine.begin() as conn:
            next(i for i in schema.chunks.indexes if i.name == "ix_chunks_purge_scan").drop(conn)
            old = Index("ix_chunks_unpurged", schema.chunks.c.lifecycle_status, schema.chunks.c.purged_at)
            old.create(conn)
            schema.chunks.indexes.discard(old)  # a database's old index, not part of the schema head
            conn.execute(
                delete(schema.schema_migrations).where(schema.schema_migrations.c.name == "m011_purge_scan_index")
            )
        assert apply_migrations(store.engine) == ["m011_purge_scan_index"]
        with store.engine.connect() as conn:
            names = {i["name"] for i in inspect(conn).get_indexes("chunks")}
        assert "ix_chunks_purge_scan" in names and "ix_chunks_unpurged" not in names
        assert apply_migrations(store.engine) == []

    # ------------------------------------------------------------------ due retries
    def test_due_retries_wait_for_the_backoff_of_each_attempt(self, store: SqlTruthStore) -> None:
        """A chunk that failed ``a`` times is due ``delays[a]`` s after its last change; never-claimed PENDING too."""
        _, (idle, once, twice) = ingest(store, ["idle", "once", "twice"])
        fail(store, once)
        fail(store, twice, times=2)
        now = utcnow()
        assert store.due_retries(["dense"], DELAYS, now=now) == []
        assert store.due_retries(["dense"], DELAYS, now=now + timedelta(seconds=31)) == [once]
        assert store.due_retries(["dense"], DELAYS, now=now + timedelta(seconds=61)) == [once, twice]
        later = now + timedelta(seconds=601)
        assert store.due_retries(["dense"], DELAYS, now=later) == [idle, once, twice], "oldest change first"
        assert store.due_retries(["dense"], DELAYS, now=later, limit=2) == [idle, once]
        assert store.due_retries(["dense"], DELAYS) == [], "the default clock is now"

    def test_due_retries_never_offer_exhausted_finished_claimed_or_removed_rows(self, store: SqlTruthStore) -> None:
        """FAILED at len(delays) attempts, SUCCESS, INDEXING and REMOVED rows are never due."""
        _, (exhausted, done, claimed, removed) = ingest(store, ["exhausted", "done", "claimed", "removed"])
        fail(store, exhausted, times=len(DELAYS))
        index_done(store, [done])
        store.claim("dense", [claimed])
        store.remove_chunks([removed])
        far = utcnow() + timedelta(days=365)
        assert store.due_retries(["dense"], DELAYS, now=far) == []
        with pytest.raises(ValidationError):
            store.due_retries(["dense"], [], now=far)

    def test_due_retries_look_at_every_kind_given(self, store: SqlTruthStore) -> None:
        """A chunk whose dense copy is written but whose bm25 copy failed is due through the bm25 kind."""
        _, (a, b) = ingest(store, ["a", "b"])
        index_done(store, [a, b])
        fail(store, a, "bm25")
        later = utcnow() + timedelta(seconds=31)
        assert store.due_retries(["dense"], DELAYS, now=later) == []
        assert store.due_retries(["dense", "bm25"], DELAYS, now=later) == [a]
        assert statuses(store, [a, b], "bm25") == ["FAILED", "PENDING"]

    # ------------------------------------------------------------------ open work and tallies
    def test_documents_with_work(self, store: SqlTruthStore) -> None:
        """PENDING, INDEXING and FAILED-below-max copies are work; SUCCESS and exhausted FAILED copies are not."""
        done_doc, (d,) = ingest(store, ["d"], source_uri="done.txt")
        pending_doc, _ = ingest(store, ["p"], source_uri="pending.txt")
        retry_doc, (r,) = ingest(store, ["r"], source_uri="retry.txt")
        dead_doc, (x,) = ingest(store, ["x"], source_uri="dead.txt")
        for cid in (d, r, x):
            index_done(store, [cid])
        fail(store, r, "bm25")
        fail(store, x, "bm25", times=3)
        index_done(store, [d], "bm25")
        docs = [done_doc, pending_doc, retry_doc, dead_doc, 999_999]
        assert store.documents_with_work(docs, ["dense", "bm25"], max_attempts=3) == {pending_doc, retry_doc}
        assert store.documents_with_work(docs, ["dense"], max_attempts=3) == {pending_doc}
        assert store.documents_with_work([], ["dense"], max_attempts=3) == set()

    def test_unit_tallies_count_rows_by_how_they_stand(self, store: SqlTruthStore) -> None:
        """indexed: every enabled copy SUCCESS; failed: a copy FAILED; pending: the rest. REMOVED rows do not count."""
        doc, (a, b, c, _d, e) = ingest(store, ["a", "b", "c", "d", "e"])
        index_done(store, [a, b, c])
        index_done(store, [a], "bm25")
        fail(store, b, "bm25")
        store.claim("bm25", [c])
        store.remove_chunks([e])
        other, (z,) = ingest(store, ["z"], source_uri="other.txt", kinds=("dense",))
        tallies = store.unit_tallies([doc, other, 999_999])
        assert tallies[doc] == {"chunk": UnitTally(total=4, indexed=1, failed=1, pending=2)}
        assert tallies[other] == {"chunk": UnitTally(total=1, indexed=0, failed=0, pending=1)}
        assert 999_999 not in tallies
        index_done(store, [z])
        assert store.unit_tallies([other])[other]["chunk"].indexed == 1, "a dense-only row needs only its dense copy"

    # ------------------------------------------------------------------ the lock
    def test_reconcile_lock_admits_one_holder_at_a_time(
        self, store: SqlTruthStore, second_store: SqlTruthStore
    ) -> None:
        """While one session holds the lock another is refused at once; after release the other gets it."""
        with store.reconcile_lock("one", lease_seconds=60) as first:
            assert first
            with second_store.reconcile_lock("two", lease_seconds=60) as second:
                assert not second
        with second_store.reconcile_lock("two", lease_seconds=60) as second:
            assert second
            with store.reconcile_lock("one", lease_seconds=60) as first:
                assert not first
        with pytest.raises(RuntimeError), store.reconcile_lock("one", lease_seconds=60) as held:
            assert held
            raise RuntimeError("a pass that fails")
        with second_store.reconcile_lock("two", lease_seconds=60) as second:
            assert second, "a pass that raised released the lock"

    def test_an_abandoned_lock(self, store: SqlTruthStore, second_store: SqlTruthStore) -> None:
        """A holder that never releases: a server keeps the lock while its session lives, SQLite until the lease lapses.

        A lease of -1 s has lapsed already (a mechanism test, not a default).
        """
        abandoned = store.reconcile_lock("gone", lease_seconds=-1)
        assert abandoned.__enter__()
        try:
            with second_store.reconcile_lock("next", lease_seconds=60) as taken:
                assert taken == (store.dialect == "sqlite")
        finally:
            abandoned.__exit__(None, None, None)
        with second_store.reconcile_lock("next", lease_seconds=60) as taken:
            assert taken

    def test_a_lock_whose_holder_process_is_gone(self, store: SqlTruthStore, second_store: SqlTruthStore) -> None:
        """A holder named ``host:pid:...`` whose process has exited on this host: SQLite's lease is free at once."""
        exited = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
        dead = f"{socket.gethostname()}:{int(exited.stdout)}:x"
        alive = f"{socket.gethostname()}:{os.getppid()}:x"  # the test runner's parent: running
        for owner, free in ((dead, True), (alive, False)):
            holder = store.reconcile_lock(owner, lease_seconds=600)
            assert holder.__enter__()
            try:
                with second_store.reconcile_lock("next", lease_seconds=60) as taken:
                    assert taken == (free and store.dialect == "sqlite"), owner
            finally:
                holder.__exit__(None, None, None)

    # ------------------------------------------------------------------ totals
    def test_reconcile_totals_add_up_every_pass(self, store: SqlTruthStore, second_store: SqlTruthStore) -> None:
        """Totals start empty; each recorded pass adds its counts, whichever process recorded it."""
        assert store.reconcile_totals() is None
        store.record_reconcile({"retry": 3, "release": 1}, retry_failed=1, duration_ms=12.5, owner="host:1:a")
        second_store.record_reconcile({"purge": 2, "finish": 4, "retry": 1}, retry_failed=0, duration_ms=3.0, owner="b")
        totals = store.reconcile_totals()
        assert totals is not None
        assert totals.passes == 2 and totals.retry_failed == 1
        assert totals.actions == {"retry": 4, "release": 1, "purge": 2, "finish": 4}
        assert totals.last_owner == "b" and totals.last_pass_ms == pytest.approx(3.0)
        assert totals.last_pass_at is not None and abs(totals.last_pass_at - utcnow()) < timedelta(minutes=5)
        with pytest.raises(ValidationError):
            store.record_reconcile({"reboot": 1}, retry_failed=0, duration_ms=1.0, owner="b")
        with store.reconcile_lock("one", lease_seconds=60) as held:
            assert held and store.reconcile_totals() == totals, "the lock does not touch the totals"
