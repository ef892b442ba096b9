"""The per-chunk state machine of the SQL truth store: claims, their outcomes, stale claims, purges.

Every transition is a compare-and-set ``UPDATE ... WHERE <status> IN (...)`` whose row count tells
whether it took; only the holder of a kind's claim token can finish that kind's copy.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any, Unpack

from sqlalchemy import Connection, and_, case, func, or_, select, true, update

from ragindex.clock import utcnow
from ragindex.errors import ValidationError
from ragindex.store import schema
from ragindex.store.options import PendingFilter
from ragindex.store.records import ChunkRow, Claim
from ragindex.store.sql.core import (
    CH,
    KINDS,
    OWN,
    OWNER_ID_CHARS,
    SqlCore,
    batches,
    claim_col,
    clip_error,
    given,
    status_col,
)
from ragindex.store.sql.rows import chunk_row
from ragindex.store.states import CLAIMABLE, IndexStatus, Lifecycle
from ragindex.types import VectorKind


class SqlClaims(SqlCore):
    """The claims role (:class:`~ragindex.store.protocol.ClaimStore`)."""

    def pending_chunks(self, kind: str, **where: Unpack[PendingFilter]) -> list[ChunkRow]:
        """ACTIVE chunks whose ``kind`` copy is in ``statuses`` (PENDING/FAILED), in document order.

        bm25 and sparse copies live on the dense point, so they are only offered once dense is SUCCESS.
        """
        cond = _claimable(kind, where.get("statuses", CLAIMABLE), where.get("max_attempts"))
        if (doc_ids := where.get("doc_ids")) is not None:
            cond.append(CH.doc_id.in_(list(doc_ids)))
        if (chunk_ids := where.get("chunk_ids")) is not None:
            cond.append(CH.chunk_id.in_(list(chunk_ids)))
        cond += given((CH.user_id, where.get("user_id")), (CH.set_id, where.get("set_id")))
        query = select(schema.chunks).where(*cond).order_by(CH.doc_id, CH.chunk_index)
        if (limit := where.get("limit")) is not None:
            query = query.limit(limit)
        with self._tx() as conn:
            return [chunk_row(r._mapping) for r in conn.execute(query)]

    def claim(self, kind: str, chunk_ids: Sequence[str], *, allowed: Sequence[str] = CLAIMABLE) -> Claim:
        """Claim chunks for ``kind`` with one compare-and-set UPDATE; return what this caller now owns.

        Only rows in ``allowed`` (PENDING, FAILED) move to INDEXING, so a SUCCESS row is never pulled
        back. A dense claim also resets the other enabled kinds to PENDING, because the dense write
        replaces the whole point (and with it the bm25/sparse vectors).
        """
        token = self._new_token()
        status_col(kind)  # validate the kind even when chunk_ids is empty
        with self._tx() as conn:
            claimed = _claim_rows(conn, kind, token, chunk_ids, allowed)
        return Claim(kind=kind, token=token, chunk_ids=tuple(claimed), requested=len(chunk_ids))

    def claim_next(self, kind: str, limit: int, *, max_attempts: int | None = None) -> Claim:
        """Select up to ``limit`` claimable chunks and claim them in one transaction (a work queue's pop).

        Unlike :meth:`pending_chunks` followed by :meth:`claim`, concurrent workers do not race for
        the same rows: PostgreSQL and MySQL 8 / MariaDB 10.6+ select with ``FOR UPDATE SKIP LOCKED``
        (rows another claimer is taking are skipped), SQLite holds its write lock for the whole
        transaction. The claim is therefore complete (``requested`` is the number selected). Rows come
        in document order, except on MySQL/MariaDB, where sorting would lock every candidate row.

        An empty claim means that nothing is claimable except rows that concurrent claimers are taking
        right now (they move to INDEXING when those transactions commit). Claims of owners whose lease
        lapsed are released first (counting an attempt, see :meth:`release_owners`), so they are taken too.

        Args:
            kind: The vector kind (dense, bm25, sparse).
            limit: Most chunks to claim (>= 1).
            max_attempts: Skip FAILED chunks that failed this many times (PENDING ones are always taken).
        """
        if limit < 1:
            raise ValidationError("limit", f"must be >= 1, got {limit}")
        self._release_lapsed(max_attempts)
        token = self._new_token()
        query = select(CH.chunk_id).where(*_claimable(kind, CLAIMABLE, max_attempts)).limit(limit)
        if not self._is_mysql():
            query = query.order_by(CH.doc_id, CH.chunk_index)
        if self._supports_skip_locked():
            query = query.with_for_update(skip_locked=True)
        elif self._is_mysql():
            query = query.with_for_update()
        with self._claim_tx() as conn:
            ids = [r[0] for r in conn.execute(query)]
            claimed = _claim_rows(conn, kind, token, ids, CLAIMABLE) if ids else []
        return Claim(kind=kind, token=token, chunk_ids=tuple(claimed), requested=len(ids))

    def _new_token(self) -> str:
        """A claim token: this store's owner id, then random hex (only random hex without a registered owner)."""
        suffix = uuid.uuid4().hex
        return (self.owner_id + suffix)[:32] if self.owner_id else suffix

    def _release_lapsed(self, max_attempts: int | None) -> None:
        """Release the claims of owners whose lease lapsed (the owners role implements it; no owners: nothing)."""

    def mark_success(self, claim: Claim, chunk_ids: Sequence[str] | None = None) -> int:
        """INDEXING -> SUCCESS for chunks still held by ``claim``; return how many moved."""
        return self._finish(claim, chunk_ids, IndexStatus.SUCCESS, None)

    def mark_failed(self, claim: Claim, chunk_ids: Sequence[str], error: str) -> int:
        """INDEXING -> FAILED (attempts + 1, last_error) for chunks still held by ``claim``."""
        return self._finish(claim, chunk_ids, IndexStatus.FAILED, error)

    def _finish(self, claim: Claim, chunk_ids: Sequence[str] | None, target: IndexStatus, error: str | None) -> int:
        ids = list(claim.chunk_ids if chunk_ids is None else chunk_ids)
        status = status_col(claim.kind)
        values: dict[str, Any] = {status.key: target, f"{claim.kind}_claim": None, "updated_at": utcnow()}
        if target == IndexStatus.FAILED:
            values.update(attempts=CH.attempts + 1, last_error=clip_error(error) or "")
        else:
            values.update(attempts=0, last_error=None)
        moved = 0
        held = [status == IndexStatus.INDEXING, claim_col(claim.kind) == claim.token]
        with self._tx() as conn:
            for part in batches(ids):
                moved += conn.execute(
                    update(schema.chunks).where(CH.chunk_id.in_(part), *held).values(**values)
                ).rowcount
        return moved

    def stale_claims(self, kind: str, older_than_seconds: float, *, limit: int | None = None) -> list[str]:
        """Ids that :meth:`release_stale` would release now (read-only: repair's dry run)."""
        query = select(CH.chunk_id).where(*_stale(kind, older_than_seconds, self.owner_id))
        with self._tx() as conn:
            return [r[0] for r in conn.execute(query.limit(limit) if limit else query)]

    def release_stale(
        self, kind: str, older_than_seconds: float, *, limit: int | None = None, max_attempts: int | None = None
    ) -> list[str]:
        """INDEXING claims older than the stale timeout, of no other registered owner, go back to PENDING.

        The last resort, for claims no owner row answers for (made before owners existed, or whose row was
        deleted by hand) and for this store's own owner's claims that an interrupted operation left behind.
        Another registered owner's claims are released when it is gone (``release_owners``), never by age.
        Returns the released ids. A stale claim means its worker died holding it, so it counts as an attempt: a
        chunk that kills every worker that encodes it reaches ``max_attempts`` and goes to FAILED, where
        automatic repair stops retrying it (an explicit reindex still can).
        """
        stale = _stale(kind, older_than_seconds, self.owner_id)
        values = released_values(kind, max_attempts, f"{kind} claim went stale (its worker died or hung)")
        with self._tx() as conn:
            query = select(CH.chunk_id).where(*stale)
            ids = [r[0] for r in conn.execute(query.limit(limit) if limit else query)]
            for part in batches(ids):
                conn.execute(update(schema.chunks).where(CH.chunk_id.in_(part), *stale).values(values))
        return ids

    def reset_status(self, chunk_ids: Sequence[str], kinds: Iterable[str], *, from_statuses: Sequence[str]) -> int:
        """Move the given kinds of ACTIVE chunks from ``from_statuses`` back to PENDING (repair, explicit reindex)."""
        moved = 0
        with self._tx() as conn:
            for kind in kinds:
                status = status_col(kind)
                for part in batches(list(chunk_ids)):
                    moved += conn.execute(
                        update(schema.chunks)
                        .where(
                            CH.chunk_id.in_(part),
                            status.in_([str(s) for s in from_statuses]),
                            CH.lifecycle_status == Lifecycle.ACTIVE,
                        )
                        .values({status.key: IndexStatus.PENDING, f"{kind}_claim": None, "attempts": 0})
                    ).rowcount
        return moved

    def removed_unpurged(
        self, *, limit: int | None = None, user_id: int | None = None, set_id: int | None = None
    ) -> list[ChunkRow]:
        """REMOVED chunks (of ``user_id`` and ``set_id``, when given) whose index copies are not yet purged."""
        query = select(schema.chunks).where(
            CH.lifecycle_status == Lifecycle.REMOVED,
            CH.purged_at.is_(None),
            *given((CH.user_id, user_id), (CH.set_id, set_id)),
        )
        with self._tx() as conn:
            return [chunk_row(r._mapping) for r in conn.execute(query.limit(limit) if limit else query)]

    def mark_purged(self, chunk_ids: Sequence[str]) -> None:
        """Record that the index copies of REMOVED chunks are gone."""
        now = utcnow()
        with self._tx() as conn:
            for part in batches(list(chunk_ids)):
                conn.execute(
                    update(schema.chunks)
                    .where(CH.chunk_id.in_(part), CH.lifecycle_status == Lifecycle.REMOVED)
                    .values(purged_at=now)
                )


def _stale(kind: str, older_than_seconds: float, owner_id: str | None) -> list[Any]:
    """Conditions of a ``kind`` claim older than the stale timeout held by no other registered owner."""
    cutoff = utcnow() - timedelta(seconds=older_than_seconds)
    others = select(OWN.owner_id)
    if owner_id is not None:
        others = others.where(OWN.owner_id != owner_id)
    return [status_col(kind) == IndexStatus.INDEXING, CH.claimed_at < cutoff, claim_owner(kind).not_in(others)]


def claim_owner(kind: str) -> Any:
    """The owner id a ``kind`` claim token starts with (see :meth:`SqlClaims._new_token`)."""
    return func.substr(claim_col(kind), 1, OWNER_ID_CHARS)


def released_values(kind: str, max_attempts: int | None, error: str) -> dict[str, Any]:
    """The UPDATE values of a claim taken from a gone worker: PENDING (FAILED at ``max_attempts``), one attempt more.

    The worker died or lost its lease holding the claim, so it counts as an attempt: a chunk that kills every
    worker that encodes it reaches ``max_attempts`` and goes to FAILED (an explicit reindex still retries it).
    """
    target: Any = IndexStatus.PENDING
    if max_attempts is not None:
        target = case((CH.attempts + 1 >= max_attempts, IndexStatus.FAILED), else_=IndexStatus.PENDING)
    return {
        status_col(kind).key: target,
        f"{kind}_claim": None,
        "attempts": CH.attempts + 1,
        "last_error": error,
    }


def _claimable(kind: str, statuses: Sequence[str], max_attempts: int | None) -> list[Any]:
    """Conditions of an ACTIVE chunk whose ``kind`` copy may be claimed (its point must exist, see :func:`_ready`)."""
    status = status_col(kind)
    cond = [status.in_([str(s) for s in statuses]), CH.lifecycle_status == Lifecycle.ACTIVE, *_ready(kind)]
    if max_attempts is not None:
        cond.append(or_(status == IndexStatus.PENDING, CH.attempts < max_attempts))
    return cond


def _earlier(kind: str) -> tuple[str, ...]:
    return KINDS[: KINDS.index(VectorKind(kind))]


def _owns_point(kind: str) -> Any:
    """Whether ``kind`` writes the row's whole point: every earlier kind is disabled (NULL) on the row.

    Dense owns a chunk's point; a section has no dense copy, so its first lexical kind (bm25) owns its point.
    """
    return and_(true(), *(status_col(k).is_(None) for k in _earlier(kind)))


def _ready(kind: str) -> list[Any]:
    """A non-owning kind is written onto an existing point: the owner's copy must be SUCCESS."""
    earlier = _earlier(kind)
    if not earlier:
        return []
    owner_done = [and_(_owns_point(k), status_col(k) == IndexStatus.SUCCESS) for k in earlier]
    return [or_(_owns_point(kind), *owner_done)]


def _claim_rows(conn: Connection, kind: str, token: str, chunk_ids: Sequence[str], allowed: Sequence[str]) -> list[str]:
    """The compare-and-set UPDATE of a claim; return the ids that now carry ``token``."""
    status = status_col(kind)
    values: dict[str, Any] = {status.key: IndexStatus.INDEXING, f"{kind}_claim": token, "claimed_at": utcnow()}
    owner = _owns_point(kind)
    for later in KINDS[KINDS.index(VectorKind(kind)) + 1 :]:
        # the owner's write replaces the whole point, and with it the later kinds' vectors
        col, claim = status_col(later), claim_col(later)
        values[col.key] = case((and_(owner, col.is_not(None)), IndexStatus.PENDING), else_=col)
        values[claim.key] = case((owner, None), else_=claim)
    extra = _ready(kind)
    claimed: list[str] = []
    for part in batches(list(chunk_ids)):
        result = conn.execute(
            update(schema.chunks)
            .where(
                CH.chunk_id.in_(part),
                status.in_([str(s) for s in allowed]),
                CH.lifecycle_status == Lifecycle.ACTIVE,
                *extra,
            )
            .values(**values)
        )
        if result.rowcount == len(part):
            claimed += part
        elif result.rowcount:
            query = select(CH.chunk_id).where(CH.chunk_id.in_(part), claim_col(kind) == token)
            claimed += [r[0] for r in conn.execute(query)]
    return claimed
