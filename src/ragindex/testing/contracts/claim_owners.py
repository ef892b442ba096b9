"""The claim owner contract: owners, leases and the release of gone owners' claims, on every SQL backend.

A backend's test class inherits :class:`ClaimOwnerContract` next to
:class:`~ragindex.testing.contracts.truth_store.TruthStoreContract` and overrides the same ``store``
fixture. Each test plays two or more processes with one store each, opened on the same database
(``SqlTruthStore(store.url)``): what one owner may do to another's claims is the point of the suite.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from ragindex.store.records import NewOwner
from ragindex.store.sql import SqlTruthStore
from ragindex.testing.contracts.truth_store import FAILED, INDEXING, PENDING, SUCCESS, index_done, ingest, statuses


def owner(pid: int = 4242, command: str = "ragindex ingest docs") -> NewOwner:
    """An owner row of a process on host ``h1`` (the contract never checks pids: that is the caller's part)."""
    return NewOwner(host="h1", host_key="k1", pid=pid, process_started=1_700_000_000.5, command=command)


@contextmanager
def another(store: SqlTruthStore) -> Iterator[SqlTruthStore]:
    """A second process's store on the same database."""
    other = SqlTruthStore(store.url)
    try:
        yield other
    finally:
        other.close()


class ClaimOwnerContract:
    """Owners and leases every truth store backend must implement; subclasses override the ``store`` fixture."""

    @pytest.fixture
    def store(self) -> Iterator[SqlTruthStore]:
        """A fresh, empty, migrated store; close it after the test."""
        raise NotImplementedError("a backend's test class must override the `store` fixture")

    def test_a_registered_owner_is_listed_and_stamps_its_claims_and_runs(self, store: SqlTruthStore) -> None:
        """Claims and runs of a store with an owner carry the owner id; its row says who and until when."""
        doc_id, ids = ingest(store, ["a", "b"])
        owner_id = store.register_owner(owner(command="x" * 400), 30)
        assert store.owner_id == owner_id and len(owner_id) == 16
        claim = store.claim("dense", ids)
        assert claim.token.startswith(owner_id) and len(claim.token) == 32
        assert store.claims_by_owner() == {owner_id: {"dense": 2, "bm25": 0, "sparse": 0}}
        run_id = store.start_run(doc_id)
        assert [r.owner_id for r in store.runs(doc_id=doc_id) if r.run_id == run_id] == [owner_id]
        (row,) = store.list_owners()
        assert (row.owner_id, row.host, row.host_key, row.pid) == (owner_id, "h1", "k1", 4242)
        assert row.process_started == pytest.approx(1_700_000_000.5)
        assert row.command == "x" * 300
        assert 29 < (row.lease_until - row.heartbeat_at).total_seconds() <= 30

    def test_renewal_extends_the_lease_until_the_owner_is_taken_over(self, store: SqlTruthStore) -> None:
        """renew_lease moves lease_until on; once another process released the owner, it answers False."""
        assert store.renew_lease(30) is False, "no owner registered yet"
        store.register_owner(owner(), -1)
        before = store.list_owners()[0].lease_until
        assert store.renew_lease(60)
        assert (store.list_owners()[0].lease_until - before).total_seconds() > 60
        with another(store) as other:
            other.register_owner(owner(pid=7), 30)
            assert other.release_owners([str(store.owner_id)]) == {"dense": [], "bm25": [], "sparse": []}
        assert store.renew_lease(30) is False

    def test_only_lapsed_owners_lose_their_claims(self, store: SqlTruthStore) -> None:
        """release_owners() takes lapsed owners' claims, counting an attempt; live owners keep theirs."""
        _, ids = ingest(store, ["a", "b", "c", "d"])
        with another(store) as dead, another(store) as live:
            dead.register_owner(owner(pid=1), -5)  # its lease lapsed 5 s ago
            live.register_owner(owner(pid=2), 30)
            store.register_owner(owner(pid=3), -5)  # the caller: lapsed too, never released by itself
            lost = dead.claim("dense", ids[:2])
            kept = live.claim("dense", ids[2:3])
            mine = store.claim("dense", ids[3:])
            released = store.release_owners(max_attempts=5)
            assert sorted(released["dense"]) == sorted(ids[:2])
            assert statuses(store, ids) == [PENDING, PENDING, INDEXING, INDEXING]
            assert [r.attempts for r in store.get_chunks(ids)] == [1, 1, 0, 0]
            assert "owner is gone" in (store.get_chunks(ids[:1])[0].last_error or "")
            assert {o.owner_id for o in store.list_owners()} == {live.owner_id, store.owner_id}
            assert dead.mark_success(lost) == 0, "a released claim's token is worthless"
            assert dead.held(lost) == []
            assert live.held(kept) == list(ids[2:3]) and store.held(mine) == list(ids[3:])
            assert live.mark_success(kept) == 1 and store.mark_success(mine) == 1

    def test_a_renewed_lease_is_not_taken(self, store: SqlTruthStore) -> None:
        """An owner that renews before the release keeps its claims: the lapse is checked when releasing."""
        _, ids = ingest(store, ["a"])
        with another(store) as slow:
            slow.register_owner(owner(pid=1), -5)
            claim = slow.claim("dense", ids)
            assert slow.renew_lease(30)
            assert store.release_owners() == {"dense": [], "bm25": [], "sparse": []}
            assert slow.held(claim) == ids

    def test_released_claims_reach_failed_at_max_attempts(self, store: SqlTruthStore) -> None:
        """A chunk whose every owner dies holding it stops at max_attempts, like a stale claim."""
        _, ids = ingest(store, ["poison"])
        for attempt in (1, 2):
            with another(store) as dying:
                dying.register_owner(owner(pid=attempt), 30)
                assert dying.claim("dense", ids).complete
                assert store.release_owners([str(dying.owner_id)], max_attempts=2)["dense"] == ids
            (row,) = store.get_chunks(ids)
            assert (row.attempts, row.dense_status) == (attempt, PENDING if attempt == 1 else FAILED)
        assert store.pending_chunks("dense", max_attempts=2) == []

    def test_everyone_else_releases_every_claim_but_the_callers(self, store: SqlTruthStore) -> None:
        """Under the embedded lock: live or not, with an owner row or without, every other claim is released."""
        _, ids = ingest(store, ["a", "b", "c"])
        with another(store) as live, another(store) as legacy:
            live.register_owner(owner(pid=1), 30)
            live.claim("dense", ids[:1])
            legacy.claim("dense", ids[1:2])  # a process from before owners existed: no owner row
            store.register_owner(owner(pid=2), 30)
            mine = store.claim("dense", ids[2:])
            released = store.release_owners(everyone_else=True)
            assert sorted(released["dense"]) == sorted(ids[:2])
            assert statuses(store, ids) == [PENDING, PENDING, INDEXING]
            assert [o.owner_id for o in store.list_owners()] == [store.owner_id]
            assert store.held(mine) == ids[2:]

    def test_drop_owner_gives_back_its_claims_without_an_attempt(self, store: SqlTruthStore) -> None:
        """A process that stops on purpose returns its claims to PENDING, attempts unchanged, and leaves no row."""
        _, ids = ingest(store, ["a", "b"])
        index_done(store, ids[:1])
        assert store.drop_owner() == {"dense": [], "bm25": [], "sparse": []}, "no owner: nothing to drop"
        store.register_owner(owner(), 30)
        store.claim("dense", ids[1:])
        store.claim("bm25", ids[:1])
        assert store.drop_owner() == {"dense": ids[1:], "bm25": ids[:1], "sparse": []}
        assert store.owner_id is None and store.list_owners() == []
        assert statuses(store, ids) == [SUCCESS, PENDING]
        assert statuses(store, ids, "bm25") == [PENDING, PENDING]
        assert [r.attempts for r in store.get_chunks(ids)] == [0, 0]

    def test_claim_next_takes_the_claims_of_a_lapsed_owner(self, store: SqlTruthStore) -> None:
        """claim_next releases lapsed owners' claims first (one attempt each), then claims them."""
        _, ids = ingest(store, ["a", "b"])
        with another(store) as paused:
            paused.register_owner(owner(pid=1), 30)
            stolen = paused.claim("dense", ids)
            store.register_owner(owner(pid=2), 30)
            assert store.claim_next("dense", 10).chunk_ids == (), "a live lease is never taken"
            paused.renew_lease(-1)  # its heartbeat stops: the lease lapses
            taken = store.claim_next("dense", 10)
            assert sorted(taken.chunk_ids) == sorted(ids) and taken.token.startswith(str(store.owner_id))
            assert [r.attempts for r in store.get_chunks(ids)] == [1, 1]
            assert paused.held(stolen) == [] and paused.mark_success(stolen) == 0
            assert paused.renew_lease(30) is False, "its row went with its claims"

    def test_the_stale_timeout_spares_other_registered_owners(self, store: SqlTruthStore) -> None:
        """release_stale (the last resort) takes old claims of no owner and the caller's own, never a live other's."""
        _, ids = ingest(store, ["a", "b", "c"])
        with another(store) as live, another(store) as legacy:
            live.register_owner(owner(pid=1), 30)
            live.claim("dense", ids[:1])
            legacy.claim("dense", ids[1:2])
            store.register_owner(owner(pid=2), 30)
            store.claim("dense", ids[2:])
            assert store.stale_claims("dense", -60) == sorted(ids[1:]) or sorted(
                store.stale_claims("dense", -60)
            ) == sorted(ids[1:])
            assert sorted(store.release_stale("dense", -60)) == sorted(ids[1:])
            assert statuses(store, ids) == [INDEXING, PENDING, PENDING]
            assert store.claims_by_owner() == {live.owner_id: {"dense": 1, "bm25": 0, "sparse": 0}}
