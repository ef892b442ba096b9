"""The HTTP service's own state: ingest jobs and API keys (a Protocol and its SQL implementation).

The service opens it on the truth store's database URL; the tables and their migrations are in
:mod:`ragindex.service.schema`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypedDict, Unpack

from sqlalchemy import and_, insert, or_, select, update

from ragindex.clock import utcnow
from ragindex.errors import NotFoundError
from ragindex.service import schema
from ragindex.store.sql.core import SqlCore, given
from ragindex.store.sql.rows import record


@dataclass(frozen=True, slots=True)
class JobRow:
    """A job of the HTTP service (an upload's ingest)."""

    job_id: str
    user_id: int
    set_id: int
    kind: str
    status: str
    files: tuple[str, ...]
    report: Mapping[str, Any] | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    starts: int = 0
    """How many times a process started it (a job left ``running`` by a process that died has one more start than
    finishes; see ``RAGINDEX_JOB_MAX_STARTS``)."""


@dataclass(frozen=True, slots=True)
class ApiKeyRow:
    """An API key of the HTTP service: its id, display prefix, tenant and role (never the key)."""

    key_id: str
    key_hash: str
    prefix: str
    user_id: int
    admin: bool
    name: str | None
    created_at: datetime
    revoked_at: datetime | None


class NewJob(TypedDict):
    """A job :meth:`JobStore.create_job` records: its tenant, kind, status and the paths it will read."""

    user_id: int
    set_id: int
    kind: str
    status: str
    files: Sequence[str]


class JobChange(TypedDict, total=False):
    """How :meth:`JobStore.set_job_status` moves a job besides its status (each left out: False or None).

    ``started``/``finished`` stamp its start or end now (``started`` also counts one more start); ``unstarted``
    takes the last start back (a job handed back to the queue by a clean shutdown: that start is no crash);
    ``report`` and ``error`` are recorded (an error clipped to 4000 characters); with ``expected``, only a job
    whose status is one of them moves.
    """

    started: bool
    unstarted: bool
    finished: bool
    report: Mapping[str, Any] | None
    error: str | None
    expected: Sequence[str] | None


class JobFilter(TypedDict, total=False):
    """Which jobs :meth:`JobStore.list_jobs` lists, newest first.

    Those of ``user_id`` and with ``status`` (each when not None), after the (created_at, job_id) key ``before``;
    at most ``limit`` (left out: 100).
    """

    user_id: int | None
    status: str | None
    before: tuple[datetime, str] | None
    limit: int


class JobStore(Protocol):
    """Ingest jobs: recorded before they are queued, so a restarted service re-queues unfinished ones."""

    def create_job(self, job_id: str, **job: Unpack[NewJob]) -> None:
        """Record a new job of a tenant (files are the paths the job will read)."""
        ...

    def set_job_status(self, job_id: str, status: str, **change: Unpack[JobChange]) -> bool:
        """Move a job to ``status``, stamping its start or end, with its report and error.

        With ``expected``, only a job whose status is one of them moves (a compare-and-set: a cancel and the
        job's own progress never overwrite each other). Returns whether the job moved.
        """
        ...

    def get_job(self, job_id: str, *, user_id: int | None = None) -> JobRow:
        """A job by id (scoped to ``user_id`` when given); NotFoundError otherwise."""
        ...

    def jobs_with_status(self, statuses: Sequence[str]) -> list[JobRow]:
        """Jobs in any of ``statuses``, oldest first."""
        ...

    def list_jobs(self, **where: Unpack[JobFilter]) -> list[JobRow]:
        """Jobs newest first (created_at, then job_id, descending), those after the key ``before`` only."""
        ...


class _NewApiKey(TypedDict):
    key_id: str
    key_hash: str
    prefix: str
    user_id: int
    admin: bool


class NewApiKey(_NewApiKey, total=False):
    """A key :meth:`ApiKeyStore.create_api_key` records: its id, sha256, display prefix, tenant, role and name."""

    name: str | None


class ApiKeyStore(Protocol):
    """Per-tenant API keys, kept as their sha256 only."""

    def create_api_key(self, **key: Unpack[NewApiKey]) -> None:
        """Record an API key by its sha256 (the key itself is never stored)."""
        ...

    def key_owner(self, key_hash: str) -> tuple[str, int, bool] | None:
        """``(key_id, user_id, admin)`` of the un-revoked key with this sha256, or None (every request's check)."""
        ...

    def list_api_keys(self, *, user_id: int | None = None) -> list[ApiKeyRow]:
        """Every key (revoked ones too), oldest first."""
        ...

    def revoke_api_key(self, key_id: str) -> bool:
        """Revoke a key; False when no un-revoked key has this id."""
        ...


class ServiceStore(JobStore, ApiKeyStore, Protocol):
    """Everything the HTTP service keeps of its own."""

    def close(self) -> None:
        """Release pooled connections."""
        ...


class SqlServiceStore(SqlCore):
    """:class:`ServiceStore` on SQL, in the truth store's database.

    Args:
        url: SQLAlchemy URL (the truth store's).
    """

    name = "service store"

    def __init__(self, url: str) -> None:
        super().__init__(url, migrations=schema.SERVICE_MIGRATIONS)

    # ------------------------------------------------------------------ jobs
    def create_job(self, job_id: str, **job: Unpack[NewJob]) -> None:
        """See :meth:`JobStore.create_job`."""
        row = {**job, "job_id": job_id, "files": list(job["files"]), "created_at": utcnow()}
        with self._tx() as conn:
            conn.execute(insert(schema.jobs).values(**row))

    def set_job_status(self, job_id: str, status: str, **change: Unpack[JobChange]) -> bool:
        """See :meth:`JobStore.set_job_status`."""
        error = change.get("error")
        values: dict[str, Any] = {"status": status, "error": error[:4000] if error else None}
        if change.get("started"):
            values["started_at"] = utcnow()
            values["starts"] = schema.jobs.c.starts + 1
        elif change.get("unstarted"):
            values["starts"] = schema.jobs.c.starts - 1
        if change.get("finished"):
            values["finished_at"] = utcnow()
        if (report := change.get("report")) is not None:
            values["report"] = dict(report)
        cond = [schema.jobs.c.job_id == job_id]
        if (expected := change.get("expected")) is not None:
            cond.append(schema.jobs.c.status.in_(list(expected)))
        with self._tx() as conn:
            result = conn.execute(update(schema.jobs).where(*cond).values(**values))
        return bool(result.rowcount)

    def get_job(self, job_id: str, *, user_id: int | None = None) -> JobRow:
        """See :meth:`JobStore.get_job`."""
        t = schema.jobs.c
        with self._tx() as conn:
            row = conn.execute(select(schema.jobs).where(t.job_id == job_id, *given((t.user_id, user_id)))).first()
        if row is None:
            raise NotFoundError(f"job {job_id} not found", job_id=job_id)
        return _job_row(row._mapping)

    def jobs_with_status(self, statuses: Sequence[str]) -> list[JobRow]:
        """See :meth:`JobStore.jobs_with_status`."""
        t = schema.jobs.c
        query = select(schema.jobs).where(t.status.in_(list(statuses))).order_by(t.created_at, t.job_id)
        with self._tx() as conn:
            return [_job_row(r._mapping) for r in conn.execute(query)]

    def list_jobs(self, **where: Unpack[JobFilter]) -> list[JobRow]:
        """See :meth:`JobStore.list_jobs` (keyset pagination on the ``ix_jobs_tenant`` index)."""
        t = schema.jobs.c
        cond = given((t.user_id, where.get("user_id")), (t.status, where.get("status")))
        if (before := where.get("before")) is not None:
            created, job_id = before
            cond.append(or_(t.created_at < created, and_(t.created_at == created, t.job_id < job_id)))
        query = select(schema.jobs).where(*cond).order_by(t.created_at.desc(), t.job_id.desc())
        query = query.limit(where.get("limit", 100))
        with self._tx() as conn:
            return [_job_row(r._mapping) for r in conn.execute(query)]

    # ------------------------------------------------------------------ API keys
    def create_api_key(self, **key: Unpack[NewApiKey]) -> None:
        """See :meth:`ApiKeyStore.create_api_key`."""
        row: dict[str, Any] = {**key, "created_at": utcnow()}
        row["is_admin"] = 1 if row.pop("admin") else 0
        with self._tx() as conn:
            conn.execute(insert(schema.api_keys).values(**row))

    def key_owner(self, key_hash: str) -> tuple[str, int, bool] | None:
        """See :meth:`ApiKeyStore.key_owner`.

        Every request reads it, so it is plain SQL on a pooled DBAPI connection, through the search path's reads
        (:meth:`~ragindex.store.sql.search_sql.SearchSql.rows`): ~0.34 ms of CPU on SQLite through a ``select``
        and a transaction, ~0.07 ms as text.
        """
        reads = self._search_sql
        mark = reads.texts.mark
        sql = f"SELECT key_id, user_id, is_admin FROM api_keys WHERE key_hash = {mark} AND revoked_at IS NULL"
        with self._errors():
            found = reads.rows(sql, (key_hash,))
        if not found:
            return None
        key_id, user_id, admin = found[0]
        return str(key_id), int(user_id), bool(admin)

    def list_api_keys(self, *, user_id: int | None = None) -> list[ApiKeyRow]:
        """See :meth:`ApiKeyStore.list_api_keys`."""
        t = schema.api_keys.c
        query = select(schema.api_keys).where(*given((t.user_id, user_id))).order_by(t.created_at, t.key_id)
        with self._tx() as conn:
            return [_api_key_row(r._mapping) for r in conn.execute(query)]

    def revoke_api_key(self, key_id: str) -> bool:
        """See :meth:`ApiKeyStore.revoke_api_key`."""
        t = schema.api_keys.c
        with self._tx() as conn:
            result = conn.execute(
                update(schema.api_keys).where(t.key_id == key_id, t.revoked_at.is_(None)).values(revoked_at=utcnow())
            )
        return bool(result.rowcount)


def _job_row(m: Mapping[Any, Any]) -> JobRow:
    return record(JobRow, m, files=tuple(m["files"] or ()))


def _api_key_row(m: Mapping[Any, Any]) -> ApiKeyRow:
    return record(ApiKeyRow, m, admin=bool(m["is_admin"]))
