"""The HTTP service's own tables and their migrations: ingest jobs and per-tenant API keys.

They live in the same database as the truth store (one URL to configure) but belong to the
service: the chunk truth store knows nothing of HTTP. The step names are the ones these tables
had when the truth store created them, so a database made by an earlier version is not migrated twice.
A later step that adds a column adds it to the table here too and creates it only where the database lacks it.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Connection,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    inspect,
    text,
)

from ragindex.store.migrations import Migration
from ragindex.store.schema import Timestamp, table, tenant

metadata = MetaData()

jobs = table(
    "jobs",
    metadata,
    Column("job_id", String(64), primary_key=True),
    *tenant(),
    Column("kind", String(16), nullable=False),
    Column("status", String(16), nullable=False),
    Column("files", JSON),
    Column("report", JSON),
    Column("error", Text),
    Column("created_at", Timestamp, nullable=False),
    Column("started_at", Timestamp),
    Column("finished_at", Timestamp),
    Column("starts", Integer, nullable=False, default=0, server_default="0"),  # m013: times a process started it
    Index("ix_jobs_tenant", "user_id", "created_at"),
    Index("ix_jobs_status", "status"),
)

api_keys = table(
    "api_keys",
    metadata,
    Column("key_id", String(32), primary_key=True),
    Column("key_hash", String(64), nullable=False),
    Column("prefix", String(16), nullable=False),
    Column("user_id", BigInteger, nullable=False),
    Column("is_admin", Integer, nullable=False, default=0),
    Column("name", String(255)),
    Column("created_at", Timestamp, nullable=False),
    Column("revoked_at", Timestamp),
    UniqueConstraint("key_hash", name="uq_api_keys_hash"),
)


def m003_jobs(conn: Connection) -> None:
    """Ingest jobs of the HTTP service (status, files, report), scoped to a tenant."""
    metadata.create_all(conn, tables=[jobs], checkfirst=True)


def m004_api_keys(conn: Connection) -> None:
    """Per-tenant API keys of the HTTP service (sha256 of the key and a display prefix only)."""
    metadata.create_all(conn, tables=[api_keys], checkfirst=True)


def m013_job_starts(conn: Connection) -> None:
    """``jobs.starts``: how many times a process started the job, so a job that kills its process is not rerun forever.

    Jobs recorded before it count 0 starts.
    """
    if "starts" not in {c["name"] for c in inspect(conn).get_columns("jobs")}:
        conn.execute(text("ALTER TABLE jobs ADD COLUMN starts INTEGER DEFAULT 0 NOT NULL"))


SERVICE_MIGRATIONS: tuple[tuple[str, Migration], ...] = (
    ("m003_jobs", m003_jobs),
    ("m004_api_keys", m004_api_keys),
    ("m013_job_starts", m013_job_starts),
)
