"""The reconciler's role of the SQL truth store: due retries, open work, the single-actor lock and the pass totals.

The lock is what makes "one reconciler acts at a time" hold across processes and hosts. On PostgreSQL it is
``pg_try_advisory_lock`` and on MySQL/MariaDB ``GET_LOCK(name, 0)``: both belong to a database session, so a
holder that dies (SIGKILL, lost host) loses the lock with its connection and the next process takes it at once.
SQLite has no sessions to speak of: its lock is a lease row in ``reconciler``. A SQLite file lives on one host, so
a lease whose owner (``host:pid:...``) names a process of this host that no longer runs is taken at once; any
other lease is kept until ``lease_until`` passes.
"""

from __future__ import annotations

import hashlib
import os
import socket
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, Unpack

from sqlalchemy import Connection, and_, func, or_, select, text, update
from sqlalchemy.exc import SQLAlchemyError

from ragindex.clock import utcnow
from ragindex.errors import StoreError, ValidationError
from ragindex.store import schema
from ragindex.store.options import RetryWindow
from ragindex.store.records import ReconcileTotals, UnitTally
from ragindex.store.sql.core import CH, KINDS, SqlCore, batches, insert_ignoring_duplicates, status_col
from ragindex.store.states import IndexStatus, Lifecycle

R = schema.reconciler.c
_ROW = "reconciler"
_PG_KEY = 0x72676E78_72636C31  # "rgnx" "rcl1": distinct from the migration lock's key
# action -> its column in ``reconciler``
ACTION_COLUMNS = {"retry": "retried", "release": "released", "purge": "purged", "finish": "finished"}
_OPEN = (IndexStatus.PENDING, IndexStatus.INDEXING)


class SqlReconcile(SqlCore):
    """The reconciler's role (:class:`~ragindex.store.protocol.ReconcileStore`)."""

    def due_retries(self, kinds: Sequence[str], delays: Sequence[float], **window: Unpack[RetryWindow]) -> list[str]:
        """Ids of ACTIVE chunks with a ``kinds`` copy PENDING or FAILED whose wait is over, oldest change first.

        One query per kind (each uses that kind's status index); the wait is one ``attempts = a AND updated_at <=
        cutoff_a`` term per attempt count, so no dialect's date arithmetic is needed.
        """
        if not delays:
            raise ValidationError("delays", "give at least the wait of a row that never failed")
        clock = window.get("now") or utcnow()
        limit = window.get("limit")
        waited = or_(
            *(
                and_(CH.attempts == attempts, CH.updated_at <= clock - timedelta(seconds=delay))
                for attempts, delay in enumerate(delays)
            )
        )
        found: dict[str, datetime] = {}
        with self._tx() as conn:
            for kind in kinds:
                query = (
                    select(CH.chunk_id, CH.updated_at)
                    .where(
                        status_col(kind).in_([IndexStatus.PENDING, IndexStatus.FAILED]),
                        CH.lifecycle_status == Lifecycle.ACTIVE,
                        waited,
                    )
                    .order_by(CH.updated_at)
                )
                for chunk_id, updated_at in conn.execute(query.limit(limit) if limit else query):
                    found.setdefault(chunk_id, updated_at)
        ordered = sorted(found, key=lambda cid: found[cid])
        return ordered[:limit] if limit else ordered

    def documents_with_work(self, doc_ids: Sequence[int], kinds: Sequence[str], *, max_attempts: int) -> set[int]:
        """The documents among ``doc_ids`` with a copy PENDING, INDEXING, or FAILED below ``max_attempts``."""
        open_work = or_(
            *(
                or_(
                    status_col(kind).in_([str(s) for s in _OPEN]),
                    and_(status_col(kind) == IndexStatus.FAILED, CH.attempts < max_attempts),
                )
                for kind in kinds
            )
        )
        out: set[int] = set()
        with self._tx() as conn:
            for part in batches(list(dict.fromkeys(doc_ids))):
                query = select(CH.doc_id).where(CH.doc_id.in_(part), CH.lifecycle_status == Lifecycle.ACTIVE, open_work)
                out.update(int(r[0]) for r in conn.execute(query.distinct()))
        return out

    def unit_tallies(self, doc_ids: Sequence[int]) -> dict[int, dict[str, UnitTally]]:
        """Per document and unit (``chunk``, ``section``): how its ACTIVE rows stand (documents without rows absent)."""
        counts: dict[int, dict[str, dict[str, int]]] = defaultdict(dict)
        cols = [status_col(k) for k in KINDS]
        with self._tx() as conn:
            for part in batches(list(dict.fromkeys(doc_ids))):
                query = (
                    select(CH.doc_id, CH.unit, *cols, func.count())
                    .where(CH.doc_id.in_(part), CH.lifecycle_status == Lifecycle.ACTIVE)
                    .group_by(CH.doc_id, CH.unit, *cols)
                )
                for doc_id, unit, *rest in conn.execute(query):
                    *statuses, n = rest
                    tally = counts[int(doc_id)].setdefault(
                        str(unit), dict.fromkeys(("indexed", "failed", "pending"), 0)
                    )
                    enabled = [s for s in statuses if s is not None]
                    if IndexStatus.FAILED in enabled:
                        tally["failed"] += int(n)
                    elif all(s == IndexStatus.SUCCESS for s in enabled):
                        tally["indexed"] += int(n)
                    else:
                        tally["pending"] += int(n)
        return {
            doc_id: {unit: UnitTally(total=sum(t.values()), **t) for unit, t in units.items()}
            for doc_id, units in counts.items()
        }

    # ------------------------------------------------------------------ the single-actor lock
    @contextmanager
    def reconcile_lock(self, owner: str, *, lease_seconds: float) -> Iterator[bool]:
        """Try, without waiting, to be the one reconciler of this database; yield whether it is; release on exit."""
        dialect = self.engine.dialect.name
        if dialect == "postgresql":
            with self._session_lock(
                text("SELECT pg_try_advisory_lock(:key)"), text("SELECT pg_advisory_unlock(:key)"), {"key": _PG_KEY}
            ) as held:
                yield held
        elif self._is_mysql():
            # GET_LOCK names are server-wide: one per database, within the 64 characters allowed
            database = str(self.engine.url.database)
            name = "ragindex_reconcile_" + hashlib.sha256(database.encode()).hexdigest()[:32]
            with self._session_lock(
                text("SELECT GET_LOCK(:name, 0)"), text("SELECT RELEASE_LOCK(:name)"), {"name": name}
            ) as held:
                yield held
        else:
            held = self._take_lease(owner, lease_seconds)
            try:
                yield held
            finally:
                if held:
                    self._drop_lease(owner)

    @contextmanager
    def _session_lock(self, take: Any, release: Any, params: dict[str, Any]) -> Iterator[bool]:
        """An advisory lock held by one pooled connection for the duration of the context."""
        try:
            conn = self.engine.connect()
        except SQLAlchemyError as exc:
            raise StoreError(f"{self.name} operation failed: {exc}", backend=self.dialect) from exc
        try:
            held = conn.execute(take, params).scalar() in (1, True)
            conn.commit()
        except SQLAlchemyError as exc:
            conn.close()
            raise StoreError(f"{self.name} operation failed: {exc}", backend=self.dialect) from exc
        try:
            yield held
        finally:
            if held:
                try:
                    conn.execute(release, params)
                    conn.commit()
                except SQLAlchemyError:
                    conn.invalidate()  # a broken session has lost the lock with it; never pool it
            conn.close()

    def _take_lease(self, owner: str, lease_seconds: float) -> bool:
        now = utcnow()
        values = {"owner": owner, "lease_until": now + timedelta(seconds=lease_seconds)}
        with self._claim_tx() as conn:
            _ensure_row(conn)
            current = conn.execute(select(R.owner, R.lease_until).where(R.name == _ROW)).one()
            free = (
                current.owner in (None, owner)
                or current.lease_until is None
                or current.lease_until < now
                or _holder_gone(current.owner)
            )
            if free:
                conn.execute(update(schema.reconciler).where(R.name == _ROW).values(**values))
            return bool(free)

    def _drop_lease(self, owner: str) -> None:
        with self._tx() as conn:
            conn.execute(
                update(schema.reconciler).where(R.name == _ROW, R.owner == owner).values(owner=None, lease_until=None)
            )

    # ------------------------------------------------------------------ totals
    def record_reconcile(
        self, actions: Mapping[str, int], *, retry_failed: int, duration_ms: float, owner: str
    ) -> None:
        """Add one finished pass and its action counts (retry, release, purge, finish) to the totals."""
        unknown = set(actions) - set(ACTION_COLUMNS)
        if unknown:
            raise ValidationError(
                "actions", f"unknown reconcile action(s) {sorted(unknown)}; valid: {list(ACTION_COLUMNS)}"
            )
        values: dict[str, Any] = {col: R[col] + int(actions.get(action, 0)) for action, col in ACTION_COLUMNS.items()}
        values.update(
            passes=R.passes + 1,
            retry_failed=R.retry_failed + retry_failed,
            last_pass_at=utcnow(),
            last_pass_ms=duration_ms,
            last_owner=owner[:255],
        )
        with self._tx() as conn:
            _ensure_row(conn)
            conn.execute(update(schema.reconciler).where(R.name == _ROW).values(**values))

    def reconcile_totals(self) -> ReconcileTotals | None:
        """The totals of every pass so far, or None before the first."""
        with self._tx() as conn:
            row = conn.execute(select(schema.reconciler).where(R.name == _ROW)).first()
        if row is None or not row.passes:
            return None
        return ReconcileTotals(
            passes=int(row.passes),
            actions={action: int(getattr(row, col)) for action, col in ACTION_COLUMNS.items()},
            retry_failed=int(row.retry_failed),
            last_pass_at=row.last_pass_at,
            last_pass_ms=row.last_pass_ms,
            last_owner=row.last_owner,
        )


def _holder_gone(owner: str) -> bool:
    """Whether ``owner`` (``host:pid:...``) names a process of this host that no longer runs."""
    host, _, rest = owner.partition(":")
    pid = rest.split(":", 1)[0]
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return True
    except PermissionError:  # it exists, under another user
        return False
    return False


def _ensure_row(conn: Connection) -> None:
    conn.execute(insert_ignoring_duplicates(conn, schema.reconciler), [{"name": _ROW}])
