"""Claim owners and their leases: who holds each INDEXING claim, and until when.

Each process that claims registers one owner row (host, pid, process start time, command) and renews its
lease with a heartbeat. A claim token starts with its owner's id, so the claims of an owner are one
``substr(<kind>_claim, 1, 16) IN (...)`` away. An owner that is gone (its lease lapsed, or proven dead by the
caller) loses its claims and its row in one transaction; an owner renewing at that moment either renews
first (and keeps everything) or finds its row gone (and knows its claims are void), never half of each.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, Unpack

from sqlalchemy import Connection, delete, func, insert, select, true, update

from ragindex.clock import utcnow
from ragindex.store import schema
from ragindex.store.options import OwnerRelease
from ragindex.store.records import Claim, NewOwner, OwnerRow
from ragindex.store.sql.claims import SqlClaims, claim_owner, released_values
from ragindex.store.sql.core import CH, KINDS, OWN, OWNER_ID_CHARS, batches, claim_col, status_col
from ragindex.store.sql.rows import owner_row
from ragindex.store.states import IndexStatus

_COMMAND_CHARS = 300


class SqlOwners(SqlClaims):
    """The claim owners role (:class:`~ragindex.store.protocol.OwnerStore`) over the claims role."""

    def register_owner(self, owner: NewOwner, lease_seconds: float) -> str:
        """Record the process this store claims for, leased for ``lease_seconds``; return its owner id.

        From then on this store's claim tokens and pipeline runs carry the id. Registering again (after the
        row was taken over) gives a new id: claims made under the old one stay void.
        """
        owner_id = uuid.uuid4().hex[:OWNER_ID_CHARS]
        now = utcnow()
        values = {
            "owner_id": owner_id,
            "host": owner.host[:255],
            "host_key": owner.host_key[:64],
            "pid": owner.pid,
            "process_started": owner.process_started,
            "command": owner.command[:_COMMAND_CHARS],
            "registered_at": now,
            "heartbeat_at": now,
            "lease_until": now + timedelta(seconds=lease_seconds),
        }
        with self._tx() as conn:
            conn.execute(insert(schema.claim_owners).values(**values))
        self.owner_id = owner_id
        return owner_id

    def renew_lease(self, lease_seconds: float) -> bool:
        """Extend this store's owner's lease to now + ``lease_seconds``; False when its row is gone (taken over).

        Also False when no owner is registered.
        """
        if self.owner_id is None:
            return False
        now = utcnow()
        values = {"heartbeat_at": now, "lease_until": now + timedelta(seconds=lease_seconds)}
        with self._tx() as conn:
            moved = conn.execute(update(schema.claim_owners).where(OWN.owner_id == self.owner_id).values(**values))
            return bool(moved.rowcount)

    def drop_owner(self) -> dict[str, list[str]]:
        """Give back this store's owner's claims (PENDING, no attempt counted) and delete its row.

        A process that stops on purpose (close, SIGINT, SIGTERM) calls this, so nothing it claimed waits for
        anybody. Returns the released chunk ids per kind; a store without an owner releases nothing.
        """
        owner_id, self.owner_id = self.owner_id, None
        if owner_id is None:
            return {str(kind): [] for kind in KINDS}
        with self._claim_tx() as conn:
            released = {
                str(kind): _release(
                    conn,
                    kind,
                    claim_owner(kind) == owner_id,
                    {status_col(kind).key: IndexStatus.PENDING, claim_col(kind).key: None},
                )
                for kind in KINDS
            }
            conn.execute(delete(schema.claim_owners).where(OWN.owner_id == owner_id))
        return released

    def list_owners(self) -> list[OwnerRow]:
        """Every registered owner, oldest first."""
        with self._tx() as conn:
            query = select(schema.claim_owners).order_by(OWN.registered_at)
            return [owner_row(r._mapping) for r in conn.execute(query)]

    def claims_by_owner(self) -> dict[str | None, dict[str, int]]:
        """INDEXING claims per owner id and kind; claims no registered owner holds are under None."""
        out: dict[str | None, dict[str, int]] = {}
        with self._tx() as conn:
            known = {r[0] for r in conn.execute(select(OWN.owner_id))}
            for kind in KINDS:
                owner = claim_owner(kind)
                query = select(owner, func.count()).where(status_col(kind) == IndexStatus.INDEXING).group_by(owner)
                for owner_id, count in conn.execute(query):
                    key = owner_id if owner_id in known else None
                    out.setdefault(key, dict.fromkeys(KINDS, 0))[kind] += int(count)
        return out

    def release_owners(
        self, owner_ids: Sequence[str] | None = None, **how: Unpack[OwnerRelease]
    ) -> dict[str, list[str]]:
        """Release the claims of gone owners and delete their rows, in one transaction; return the ids per kind.

        Args:
            owner_ids: Owners the caller proved gone (a dead pid on its host). None: every owner whose lease
                lapsed, re-checked under a row lock, so an owner that renews at the same moment keeps its
                claims. This store's own owner is never released.
            max_attempts: A released claim counts an attempt; at this count the chunk goes to FAILED.
            everyone_else: Every claim but this store's owner's, with or without an owner row (the caller
                holds the embedded index lock, which every claimer takes first).
        """
        everyone_else = how.get("everyone_else", False)
        if owner_ids is not None and not owner_ids and not everyone_else:
            return {str(kind): [] for kind in KINDS}
        with self._claim_tx() as conn:
            query = select(OWN.owner_id)
            if self.owner_id is not None:
                query = query.where(OWN.owner_id != self.owner_id)
            if everyone_else:
                pass
            elif owner_ids is None:
                query = query.where(OWN.lease_until < utcnow())
            else:
                query = query.where(OWN.owner_id.in_(list(owner_ids)))
            gone = [r[0] for r in conn.execute(query.with_for_update())]
            if not gone and not everyone_else:
                return {str(kind): [] for kind in KINDS}
            released = {
                str(kind): _release(
                    conn,
                    kind,
                    _not_mine(kind, self.owner_id) if everyone_else else claim_owner(kind).in_(gone),
                    released_values(kind, how.get("max_attempts"), f"{kind} claim released: its owner is gone"),
                )
                for kind in KINDS
            }
            if gone:
                conn.execute(delete(schema.claim_owners).where(OWN.owner_id.in_(gone)))
        return released

    def _release_lapsed(self, max_attempts: int | None) -> None:
        """Before claim_next: release lapsed owners' claims, taking the row locks only when there are any."""
        with self._tx() as conn:
            lapsed = conn.execute(select(OWN.owner_id).where(OWN.lease_until < utcnow()).limit(1)).first()
        if lapsed is not None:
            self.release_owners(max_attempts=max_attempts)

    def held(self, claim: Claim, chunk_ids: Sequence[str] | None = None) -> list[str]:
        """The chunks of ``claim`` (or of ``chunk_ids``) it still holds: INDEXING under its token."""
        ids = list(claim.chunk_ids if chunk_ids is None else chunk_ids)
        status = status_col(claim.kind)
        out: list[str] = []
        with self._tx() as conn:
            for part in batches(ids):
                query = select(CH.chunk_id).where(
                    CH.chunk_id.in_(part), status == IndexStatus.INDEXING, claim_col(claim.kind) == claim.token
                )
                out += [r[0] for r in conn.execute(query)]
        return out


def _release(conn: Connection, kind: str, whose: Any, values: dict[str, Any]) -> list[str]:
    """Set ``values`` on the INDEXING ``kind`` claims that match ``whose``; return their chunk ids."""
    held = [status_col(kind) == IndexStatus.INDEXING, whose]
    ids = [r[0] for r in conn.execute(select(CH.chunk_id).where(*held))]
    for part in batches(ids):
        conn.execute(update(schema.chunks).where(CH.chunk_id.in_(part), *held).values(values))
    return ids


def _not_mine(kind: str, owner_id: str | None) -> Any:
    """Claims of ``kind`` that ``owner_id`` does not hold (every claim without an owner)."""
    return true() if owner_id is None else claim_owner(kind) != owner_id
