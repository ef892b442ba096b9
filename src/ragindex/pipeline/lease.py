"""Claims with an owner and a lease: who may take whose claims, and when.

Every process that claims chunks registers one owner row (host, pid, process start time, command) and a
heartbeat thread renews its lease (``RAGINDEX_CLAIM_HEARTBEAT_SECONDS``, default 10 s, to now +
``RAGINDEX_CLAIM_LEASE_SECONDS``, default 30 s). The claims of an owner are released, counting an attempt,
as soon as the owner is known to be gone:

* **its lease lapsed** (any store): its heartbeat stopped, so it died, hung or lost the database;
* **it is proven dead**: it ran on this host (same host name, boot and pid namespace) and its pid is gone,
  or now belongs to a process that started at another time;
* **the embedded index lock proves it** (SQLite + Qdrant Edge): every claimer takes the data dir's index
  lock before it claims, so the holder of that lock knows every other owner is gone.

A live owner's claims are never taken. Before an index write, the writer renews its lease and checks that
it still holds its claims (:meth:`Lease.guard`), so a process paused past its lease (SIGSTOP, a frozen VM)
writes nothing once it resumes. The residual window: a writer paused *after* that check and *before* its
index write completes for longer than a whole lease can still write a copy that another owner has written
in the meantime; Qdrant has no conditional write to close it. That copy holds the content the writer
claimed, and the writer's ``mark_success`` then fails (its claim is gone), which re-queues a chunk whose
content changed meanwhile (see :meth:`~ragindex.pipeline.indexer.Indexer._undo_stale_writes`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Any

from ragindex.clock import utcnow
from ragindex.errors import RagindexError
from ragindex.index.ownership import IndexOwnership, command_line
from ragindex.pipeline import faults
from ragindex.store.protocol import OwnerStore, TruthStore
from ragindex.store.records import Claim, NewOwner, OwnerRow, RunRow
from ragindex.store.states import RunStatus

log = logging.getLogger(__name__)

_START_TOLERANCE_S = 2.0  # /proc start times are in clock ticks from a boot time known to the second


@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    """Where and what a process is; ``host_key`` tells where its pid can be checked."""

    host: str
    host_key: str
    pid: int
    started: float
    command: str

    @classmethod
    def current(cls) -> ProcessIdentity:
        """This process."""
        pid = os.getpid()
        return cls(socket.gethostname(), host_key(), pid, process_started(pid) or 0.0, command_line())

    def new_owner(self) -> NewOwner:
        """The owner row this process registers."""
        return NewOwner(self.host, self.host_key, self.pid, self.started, self.command)


@cache
def host_key() -> str:
    """This host's key: host name, boot id and pid namespace (two processes with one key share their pids)."""
    boot = _read("/proc/sys/kernel/random/boot_id").strip()
    try:
        namespace = str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        namespace = ""
    return hashlib.sha256(f"{socket.gethostname()}|{boot}|{namespace}".encode()).hexdigest()[:32]


def process_started(pid: int) -> float | None:
    """When process ``pid`` started (epoch seconds); None when no such process runs, 0.0 when unknowable.

    Linux: from ``/proc/<pid>/stat`` and the boot time. Elsewhere only liveness is known (0.0: alive).
    """
    if not Path("/proc/self/stat").exists():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return 0.0
    stat = _read(f"/proc/{pid}/stat")
    if not stat:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    try:
        ticks = int(fields[19])  # field 22, starttime, counted after "pid (comm)"
    except (IndexError, ValueError):
        return 0.0
    return _boot_time() + ticks / os.sysconf("SC_CLK_TCK")


@cache
def _boot_time() -> float:
    for line in _read("/proc/stat").splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    return 0.0


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def proven_dead(owner: OwnerRow, me: ProcessIdentity) -> bool:
    """Whether ``owner`` ran where this process can see its pid, and that pid is gone or is another process."""
    if owner.host_key != me.host_key or owner.pid == me.pid:
        return False
    started = process_started(owner.pid)
    if started is None:
        return True
    if not started or not owner.process_started:
        return False  # alive, and no start time to tell a reused pid apart
    return abs(started - owner.process_started) > _START_TOLERANCE_S


class Lease:
    """This process's claim owner: registered on first use, renewed by a heartbeat thread, dropped by :meth:`close`.

    Args:
        store: The truth store (its claim tokens and runs carry the owner id once registered).
        lease_seconds: How long a renewal holds the claims.
        heartbeat_seconds: How often the heartbeat renews.
        identity: This process (default: :meth:`ProcessIdentity.current`).
    """

    def __init__(
        self,
        store: OwnerStore,
        *,
        lease_seconds: float,
        heartbeat_seconds: float,
        identity: ProcessIdentity | None = None,
    ) -> None:
        self.store = store
        self.lease_seconds = lease_seconds
        self.heartbeat_seconds = heartbeat_seconds
        self.identity = identity or ProcessIdentity.current()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._mutex = threading.Lock()

    @property
    def owner_id(self) -> str | None:
        """The registered owner id (None before the first claim)."""
        return self.store.owner_id

    def ensure(self) -> str:
        """Register the owner and start the heartbeat, once; return the owner id."""
        with self._mutex:
            if self.store.owner_id is None:
                self.store.register_owner(self.identity.new_owner(), self.lease_seconds)
            if self._thread is None:
                self._stop.clear()
                self._thread = threading.Thread(target=self._beat, name="ragindex-lease", daemon=True)
                self._thread.start()
            owner_id = self.store.owner_id
        assert owner_id is not None  # registered above
        return owner_id

    def renew(self) -> bool:
        """Renew the lease now; False when the owner had been taken over (a new owner is registered then)."""
        with self._mutex:
            if self.store.owner_id is None:
                return False
            with faults.STOP_GUARD:  # a failpoint's SIGSTOP never lands inside the renewal's transaction
                renewed = self.store.renew_lease(self.lease_seconds)
            if renewed:
                return True
            log.warning(
                "claim owner %s was taken over (its lease lapsed): its claims went to other workers; "
                "registering a new owner",
                self.store.owner_id,
            )
            self.store.register_owner(self.identity.new_owner(), self.lease_seconds)
            return False

    def guard(self, claim: Claim, chunk_ids: Sequence[str]) -> list[str]:
        """Just before an index write: renew the lease, then return the chunks the claim still holds.

        After the renewal nobody can take them for a whole lease; chunks not returned were taken (the lease
        had lapsed), and writing them would put a stale copy over the new owner's.
        """
        self.renew()
        return self.store.held(claim, chunk_ids)

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_seconds):
            try:
                self.renew()
            except RagindexError as exc:  # the database is down: try again next beat, the lease tells the rest
                log.warning("could not renew the claim lease: %s", exc)

    def close(self) -> dict[str, list[str]]:
        """Stop the heartbeat and give back every claim still held (PENDING, no attempt counted)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=10)
        with self._mutex:
            released = self.store.drop_owner()
        count = sum(len(ids) for ids in released.values())
        if count:
            log.warning("gave back %d claims this process still held", count)
        return released


@dataclass
class Release:
    """Claims released from gone owners: ids per kind, and who the owners were."""

    ids: dict[str, list[str]]
    owners: list[dict[str, Any]]


class ProcessOwner:
    """What a process holds before it writes: the embedded index lock (if any), then a claim lease.

    Args:
        store: The truth store.
        ownership: The embedded index's lock (None: a Qdrant server, shared by many processes).
        lease_seconds: Lease of this process's claims.
        heartbeat_seconds: Heartbeat of the lease.
        private_store: Whether nobody can reach the store without this index lock (SQLite with an embedded
            index): then holding the lock proves every other owner gone.
        max_attempts: Released claims count an attempt; at this count the chunk goes to FAILED.
    """

    def __init__(
        self,
        store: TruthStore,
        ownership: IndexOwnership | None,
        *,
        lease_seconds: float,
        heartbeat_seconds: float,
        private_store: bool,
        max_attempts: int | None,
    ) -> None:
        self.store = store
        self.ownership = ownership
        self.lease = Lease(store, lease_seconds=lease_seconds, heartbeat_seconds=heartbeat_seconds)
        self.private_store = private_store
        self.max_attempts = max_attempts

    def lock(self) -> None:
        """Take the embedded index lock (IndexLockedError naming its holder); a no-op for a Qdrant server."""
        if self.ownership is not None:
            self.ownership.acquire()

    def begin(self, *, release: bool = True) -> None:
        """Before anything is written: the index lock, the owner row and heartbeat, gone owners' claims released.

        The lock comes first, so a locked index fails here with nothing written; ``release`` False leaves the
        gone owners' claims to the caller (repair releases and reports them).
        """
        self.lock()
        self.lease.ensure()
        if release:
            self.release_gone()

    @property
    def lock_proves_others_gone(self) -> bool:
        """Whether this process holds the embedded index lock over a private store (no other claimer can exist)."""
        return self.private_store and self.ownership is not None and self.ownership.held

    def gone_owners(self) -> list[OwnerRow]:
        """Other owners known to be gone: all of them under the embedded lock, else dead pids and lapsed leases."""
        now = utcnow()
        me = self.lease.identity
        return [
            o
            for o in self.store.list_owners()
            if o.owner_id != self.store.owner_id
            and (self.lock_proves_others_gone or o.lease_until < now or proven_dead(o, me))
        ]

    def release_gone(self, *, dry_run: bool = False) -> Release:
        """Release the claims of every gone owner (lapsed ones re-checked under a row lock); ``dry_run`` only lists."""
        gone = self.gone_owners()
        claims = self.store.claims_by_owner() if gone or self.lock_proves_others_gone else {}
        owners = [_describe(o, claims.get(o.owner_id, {})) for o in gone]
        if self.lock_proves_others_gone and None in claims:
            owners.append({"owner": None, "claims": _nonzero(claims[None]), "note": "no registered owner"})
        if dry_run:
            ids: dict[str, list[str]] = {}
            return Release(ids=ids, owners=owners)
        if self.lock_proves_others_gone:
            released = self.store.release_owners(everyone_else=True, max_attempts=self.max_attempts)
        else:
            now = utcnow()
            proven = [o.owner_id for o in gone if o.lease_until >= now]
            released = self.store.release_owners(proven, max_attempts=self.max_attempts)
            for kind, more in self.store.release_owners(max_attempts=self.max_attempts).items():
                released[kind] = released.get(kind, []) + more
        if owners:
            log.info("released %d claims of %d gone owners", sum(map(len, released.values())), len(owners))
        return Release(ids=released, owners=owners)

    def settle_runs(
        self, kinds: Sequence[str], stale_seconds: float, *, gone: Set[str] = frozenset(), dry_run: bool = False
    ) -> int:
        """Close the runs that gone processes left PROCESSING, with their documents; return how many were stuck.

        A run is stuck when its owner is gone (its row released, or in ``gone``); this process's runs, and runs
        without an owner (made before owners existed), once older than ``stale_seconds`` (at once under the
        embedded lock). Only a run whose document has every copy written is closed (SUCCESS); the others stay
        open until the work left is done.
        """
        cutoff = utcnow() - timedelta(seconds=stale_seconds)
        lock, me = self.lock_proves_others_gone, self.store.owner_id
        live = {o.owner_id for o in self.store.list_owners()} - set(gone)

        def is_stuck(run: RunRow) -> bool:
            if run.owner_id and run.owner_id != me and run.owner_id not in live:
                return True
            return (lock and not run.owner_id) or run.started_at < cutoff

        stuck = [r for r in self.store.runs(status=RunStatus.PROCESSING) if is_stuck(r)]
        if not stuck or dry_run:
            return len(stuck)
        outcomes = self.store.index_outcomes(sorted({r.doc_id for r in stuck}), kinds)
        stages = dict.fromkeys(kinds, (RunStatus.SUCCESS, None))
        done = [r for r in stuck if not any(outcomes[r.doc_id].values())]
        settled = {"status": RunStatus.SUCCESS, "failed_stage": None, "error": None, "total_ms": None}
        if done:
            self.store.settle_runs(
                [{"run_id": r.run_id, "doc_id": r.doc_id, **settled, "stages": stages} for r in done]
            )
        return len(stuck)

    def live_claims(self) -> list[dict[str, Any]]:
        """Claims held by other live owners (and by no known owner), with who holds them and for how long."""
        claims = self.store.claims_by_owner()
        out = [
            _describe(o, claims[o.owner_id])
            for o in self.store.list_owners()
            if o.owner_id != self.store.owner_id and o.owner_id in claims
        ]
        if None in claims:
            out.append({"owner": None, "claims": _nonzero(claims[None]), "note": "no registered owner"})
        return out

    def unlock(self) -> None:
        """Release the embedded index lock (after the index is closed and the claims are given back)."""
        if self.ownership is not None:
            self.ownership.release()


def _nonzero(counts: Mapping[str, int]) -> dict[str, int]:
    return {str(k): n for k, n in counts.items() if n}


def _describe(owner: OwnerRow, claims: Mapping[str, int]) -> dict[str, Any]:
    """An owner as repair reports it: host, pid, command, since, lease left and its claims per kind."""
    return {
        "owner": owner.owner_id,
        "host": owner.host,
        "pid": owner.pid,
        "command": owner.command,
        "since": owner.registered_at.isoformat(timespec="seconds"),
        "lease_left_s": round((owner.lease_until - utcnow()).total_seconds(), 1),
        "claims": _nonzero(claims),
    }
