"""Tables of the SQL truth store (SQLAlchemy Core; portable across SQLite, MySQL/MariaDB and PostgreSQL).

Long strings that must be unique are indexed through a sha256 key column, because
MySQL cannot index long VARCHARs; timestamps are UTC, with microseconds. On MySQL/MariaDB every table is
utf8mb4 with the binary collation, so that keys compare byte for byte as on SQLite and
PostgreSQL (the server default, e.g. utf8mb4_general_ci, ignores case and trailing spaces
and treats every emoji as equal, which would let two model keys share cached vectors).
Binary collations still pad spaces there: trailing spaces of a key do not count on MySQL.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.schema import SchemaItem

metadata = MetaData()

# MySQL's TEXT holds 64 KiB; chunks and vectors can exceed it.
LongText = Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")
LongBlob = LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb")
Id = BigInteger().with_variant(Integer(), "sqlite")  # SQLite autoincrements only INTEGER PRIMARY KEY
# MySQL's DATETIME keeps whole seconds unless asked for microseconds ("changed since t" queries need them)
Timestamp = DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")

MYSQL_CHARSET = "utf8mb4"
MYSQL_COLLATION = "utf8mb4_bin"
# the option prefix is the dialect's name: "mysql" for mysql:// URLs (also on MariaDB), "mariadb" for mariadb://
TABLE_OPTIONS: dict[str, Any] = {
    f"{dialect}_{option}": value
    for dialect in ("mysql", "mariadb")
    for option, value in (("charset", MYSQL_CHARSET), ("collate", MYSQL_COLLATION))
}


def table(name: str, meta: MetaData, *items: SchemaItem) -> Table:
    """A table of ``meta`` with the options of every ragindex table (utf8mb4, binary collation on MySQL/MariaDB)."""
    return Table(name, meta, *items, **TABLE_OPTIONS)


def tenant() -> tuple[Column[Any], Column[Any]]:
    """The ``user_id`` and ``set_id`` columns of a tenant's rows."""
    return Column("user_id", BigInteger, nullable=False), Column("set_id", BigInteger, nullable=False)


def stamps() -> tuple[Column[Any], Column[Any]]:
    """The ``created_at`` and ``updated_at`` columns of a row that changes."""
    return Column("created_at", Timestamp, nullable=False), Column("updated_at", Timestamp, nullable=False)


schema_migrations = table(
    "schema_migrations",
    metadata,
    Column("name", String(128), primary_key=True),
    Column("applied_at", Timestamp, nullable=False),
)

documents = table(
    "documents",
    metadata,
    Column("doc_id", Id, primary_key=True, autoincrement=True),
    *tenant(),
    Column("source_uri", Text, nullable=False),
    Column("source_key", String(64), nullable=False),
    Column("file_uri", Text, nullable=False),
    Column("file_key", String(64), nullable=False),
    Column("file_hash", String(64), nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("filename", String(512), nullable=False),
    Column("size", BigInteger, nullable=False, default=0),
    Column("parser", String(32), nullable=False),
    Column("lifecycle_status", String(16), nullable=False),
    Column("status", String(16), nullable=False),
    Column("error", Text),
    Column("chunk_count", Integer, nullable=False, default=0),
    Column("chunking_fingerprint", String(64), nullable=False, default="", server_default=""),  # m005
    Column("metadata", JSON),
    *stamps(),
    UniqueConstraint("user_id", "set_id", "source_key", name="uq_documents_source"),
    Index("ix_documents_file", "user_id", "set_id", "file_key"),
    Index("ix_documents_tenant", "user_id", "set_id", "lifecycle_status"),
    Index("ix_documents_pages", "user_id", "doc_id"),  # m008: a tenant's documents in doc_id order, page by page
)

chunks = table(
    "chunks",
    metadata,
    Column("chunk_id", String(36), primary_key=True),
    Column("doc_id", BigInteger, nullable=False),
    *tenant(),
    Column("bucket_id", Integer, nullable=False),
    Column("chunk_index", Integer, nullable=False),
    Column("chunk_type", String(32), nullable=False),
    Column("unit", String(16), nullable=False, default="chunk", server_default="chunk"),  # m005: chunk | section
    Column("section_id", String(36)),  # m005: a chunk's section row
    Column("context", Text),  # m005: "Title > Heading" prefixed to the indexed text
    Column("content", LongText, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("token_count", Integer),
    Column("start_line", Integer),
    Column("end_line", Integer),
    Column("page", Integer),
    Column("section", Text),
    Column("metadata", JSON),
    Column("dense_status", String(16)),
    Column("bm25_status", String(16)),
    Column("sparse_status", String(16)),
    Column("lifecycle_status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("last_error", Text),
    Column("claimed_at", Timestamp),
    Column("dense_claim", String(32)),
    Column("bm25_claim", String(32)),
    Column("sparse_claim", String(32)),
    Column("purged_at", Timestamp),
    *stamps(),
    Index("ix_chunks_doc", "doc_id", "lifecycle_status"),
    Index("ix_chunks_section", "section_id"),
    Index("ix_chunks_tenant", "user_id", "set_id"),
    Index("ix_chunks_dense", "dense_status", "lifecycle_status"),
    Index("ix_chunks_bm25", "bm25_status", "lifecycle_status"),
    Index("ix_chunks_sparse", "sparse_status", "lifecycle_status"),
    Index("ix_chunks_bucket", "bucket_id", "lifecycle_status"),
    # m011 (m009 had it the other way round): the reconciler's purge scan, REMOVED rows with purged_at NULL.
    # lifecycle_status must not lead: SQLite's planner then used it for every `lifecycle_status = ?` read (a
    # backfill by chunk_id, a section's chunks) and scanned all ACTIVE rows: 100-300 ms a search at 100k chunks.
    Index("ix_chunks_purge_scan", "purged_at", "lifecycle_status"),
)

pipeline_runs = table(
    "pipeline_runs",
    metadata,
    Column("run_id", Id, primary_key=True, autoincrement=True),
    Column("doc_id", BigInteger, nullable=False),
    Column("job_id", String(64)),
    Column("status", String(16), nullable=False),
    Column("loading_status", String(16)),  # m008: NULL on runs recorded before it
    Column("chunking_status", String(16), nullable=False),
    Column("dense_status", String(16), nullable=False),
    Column("bm25_status", String(16), nullable=False),
    Column("sparse_status", String(16), nullable=False),
    Column("failed_stage", String(16)),
    Column("recover_from_stage", String(16)),
    Column("chunk_count", Integer, nullable=False, default=0),
    Column("loading_ms", Float),  # m008
    Column("chunking_ms", Float),
    Column("dense_ms", Float),
    Column("bm25_ms", Float),
    Column("sparse_ms", Float),
    Column("total_ms", Float),
    Column("error", Text),
    Column("owner_id", String(16)),  # m006: the claim owner (process) that runs it
    Column("started_at", Timestamp, nullable=False),
    Column("finished_at", Timestamp),
    Index("ix_runs_doc", "doc_id"),
    Index("ix_runs_job", "job_id"),
    Index("ix_runs_status", "status"),
)

embedding_cache = table(
    "embedding_cache",
    metadata,
    Column("model_key", String(255), primary_key=True),
    Column("content_hash", String(64), primary_key=True),
    Column("dim", Integer, nullable=False),
    Column("vector", LongBlob, nullable=False),
    Column("created_at", Timestamp, nullable=False),
)

index_meta = table(
    "index_meta",
    metadata,
    Column("collection", String(128), primary_key=True),
    Column("backend", String(32), nullable=False),
    Column("state", String(16), nullable=False),
    Column("dense_fingerprint", String(512), nullable=False),
    Column("dense_dim", Integer),
    Column("sparse_model", String(512)),
    Column("bm25_config", JSON),
    Column("chunker_config", JSON),
    *stamps(),
)

# m009: the reconciler's running totals (read by every process's /metrics) and, on SQLite, its single-actor lease
# (MySQL/MariaDB and PostgreSQL use advisory locks, which the server drops with a dead holder's session)
reconciler = table(
    "reconciler",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("owner", String(255)),
    Column("lease_until", Timestamp),
    Column("passes", BigInteger, nullable=False, default=0),
    Column("retried", BigInteger, nullable=False, default=0),
    Column("retry_failed", BigInteger, nullable=False, default=0),
    Column("released", BigInteger, nullable=False, default=0),
    Column("purged", BigInteger, nullable=False, default=0),
    Column("finished", BigInteger, nullable=False, default=0),
    Column("last_pass_at", Timestamp),
    Column("last_pass_ms", Float),
    Column("last_owner", String(255)),
)

# m006: one row per process that claims chunks; a claim token starts with its owner's id
claim_owners = table(
    "claim_owners",
    metadata,
    Column("owner_id", String(16), primary_key=True),
    Column("host", String(255), nullable=False),
    Column("host_key", String(64), nullable=False),  # host name + boot + pid namespace: where pids compare
    Column("pid", Integer, nullable=False),
    Column("process_started", Float, nullable=False),  # epoch seconds: tells a reused pid from its owner
    Column("command", String(300), nullable=False),
    Column("registered_at", Timestamp, nullable=False),
    Column("heartbeat_at", Timestamp, nullable=False),
    Column("lease_until", Timestamp, nullable=False),
    Index("ix_claim_owners_lease", "lease_until"),
)

# m010: the parsed artifact of each document's current version (the markdown its chunks were cut from). The
# header row is small; the text, the blocks and the page starts are kept in parts of bounded size (see
# ragindex.store.sql.parsed), so that no statement outgrows a server's packet limit (MariaDB's default is 16 MiB).
parsed_documents = table(
    "parsed_documents",
    metadata,
    Column("doc_id", BigInteger, primary_key=True),
    Column("content_hash", String(64), nullable=False),  # sha256 of the parsed text (= documents.content_hash)
    Column("parser", String(32), nullable=False),
    Column("chars", BigInteger, nullable=False),
    Column("page_count", Integer),  # NULL for sources without pages
    Column("block_count", Integer, nullable=False),
    Column("metadata", JSON),  # title, parse warnings
    Column("created_at", Timestamp, nullable=False),
)

parsed_parts = table(
    "parsed_parts",
    metadata,
    Column("doc_id", BigInteger, primary_key=True),
    Column("field", String(16), primary_key=True),  # text | blocks | pages (the last two: compact JSON arrays)
    Column("seq", Integer, primary_key=True),
    Column("body", LongText, nullable=False),
)

# m012: the score-drift watch's windows: per (source, model fingerprint) and window, the histograms of the top-1 and
# top-10 scores of at least ``drift_window_queries`` searches, with their quantiles (see ragindex.retrieval.drift).
# Bounded: the reference window and the last ``drift_keep_windows`` windows of each key are kept.
score_stats = table(
    "score_stats",
    metadata,
    Column("stats_key", String(64), primary_key=True),  # sha256 of source and fingerprint (MySQL key length)
    Column("window_no", Integer, primary_key=True),
    Column("source", String(32), nullable=False),
    Column("fingerprint", String(512), nullable=False),
    Column("state", String(16), nullable=False),  # OPEN (filling) | CLOSED
    Column("is_reference", Boolean, nullable=False, default=False),
    Column("queries", BigInteger, nullable=False),
    Column("top1", JSON, nullable=False),  # ragindex.sketch.ScoreSketch.to_dict()
    Column("top10", JSON, nullable=False),
    Column("top1_p10", Float),
    Column("top1_p50", Float),
    Column("top1_p90", Float),
    Column("top10_p10", Float),
    Column("top10_p50", Float),
    Column("top10_p90", Float),
    Column("started_at", Timestamp, nullable=False),
    Column("updated_at", Timestamp, nullable=False),
    Column("closed_at", Timestamp),
)

# m014: the type of each metadata field of a set (ragindex.metadata.FieldType), fixed by the first value seen: a
# filter is checked against it, and a record whose value has another type is refused (ragindex.filters).
metadata_fields = table(
    "metadata_fields",
    metadata,
    *tenant(),
    Column("name", String(64), nullable=False),
    Column("field_type", String(16), nullable=False),
    Column("created_at", Timestamp, nullable=False),
    PrimaryKeyConstraint("user_id", "set_id", "name"),
)

# m016: each set's fusion calibration (ragindex.retrieval.calibration): the per-source fusion weights measured on
# pseudo-queries drawn from the set's own documents, and how many documents the set had then (a later ingest that
# changes the set a lot measures them again).
fusion_calibrations = table(
    "fusion_calibrations",
    metadata,
    *tenant(),
    Column("fusion", String(16), nullable=False),
    Column("weights", JSON, nullable=False),  # source -> weight
    Column("documents", BigInteger, nullable=False),
    Column("report", JSON, nullable=False),  # what was measured: queries, the score of each candidate
    Column("created_at", Timestamp, nullable=False),
    PrimaryKeyConstraint("user_id", "set_id"),
)

# m015: the imports of export archives in progress or done, per archive and set (ragindex.transfer): a set that an
# interrupted import of the same archive left half written is resumed, not refused as "a set with other content".
imports = table(
    "imports",
    metadata,
    Column("archive_id", String(36), nullable=False),
    *tenant(),
    Column("state", String(16), nullable=False),  # IMPORTING | DONE
    *stamps(),
    PrimaryKeyConstraint("archive_id", "user_id", "set_id"),
)
