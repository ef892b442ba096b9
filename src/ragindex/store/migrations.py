"""Named, ordered schema migrations recorded in ``schema_migrations`` (llm's pattern).

Each step is idempotent (it checks what exists before changing it), so a crash in
the middle of a migration is repaired by running it again. ``schema.py`` is the
head of the schema; a later step that adds a column must add it to ``schema.py``
too and create it here only when the inspector does not see it yet.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from sqlalchemy import Connection, Engine, Table, inspect, select, text
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from ragindex.clock import utcnow
from ragindex.errors import StoreError
from ragindex.store import schema

Migration = Callable[[Connection], None]

_PG_LOCK_KEY = 0x72616769_6E646578  # "ragindex": the advisory lock that serialises migrations
_LOCK_TIMEOUT_S = 300


def m001_initial_schema(conn: Connection) -> None:
    """Documents, chunks, pipeline runs, embedding cache and index metadata."""
    schema.metadata.create_all(
        conn,
        tables=[schema.documents, schema.chunks, schema.pipeline_runs, schema.embedding_cache, schema.index_meta],
        checkfirst=True,
    )


def m002_mysql_exact_keys_and_times(conn: Connection) -> None:
    """MySQL/MariaDB: binary collation and microsecond timestamps on tables m001 made without them.

    Keys (model keys, collection names, job ids) must compare case and emoji sensitively, and a
    timestamp must not be truncated to whole seconds; the server defaults (utf8mb4_general_ci,
    DATETIME) do neither. No-op on other dialects and on tables made from the current ``schema.py``.
    """
    if conn.dialect.name not in ("mysql", "mariadb"):
        return
    tables = text("SELECT TABLE_NAME, TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()")
    collations: dict[str, str] = {str(name): str(collation) for name, collation in conn.execute(tables)}
    columns = text(
        "SELECT TABLE_NAME, COLUMN_NAME, DATETIME_PRECISION FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = DATABASE() AND DATA_TYPE = 'datetime'"
    )
    precision = {(str(t), str(c)): int(p or 0) for t, c, p in conn.execute(columns)}
    for table in schema.metadata.sorted_tables:
        if table.name not in collations:
            continue
        if collations[table.name] != schema.MYSQL_COLLATION:
            conn.execute(
                text(
                    f"ALTER TABLE {table.name} CONVERT TO CHARACTER SET {schema.MYSQL_CHARSET} "
                    f"COLLATE {schema.MYSQL_COLLATION}"
                )
            )
        coarse = [c for c in table.columns if precision.get((table.name, c.name), 6) < 6]
        if coarse:
            changes = ", ".join(f"MODIFY {c.name} DATETIME(6) {'NULL' if c.nullable else 'NOT NULL'}" for c in coarse)
            conn.execute(text(f"ALTER TABLE {table.name} {changes}"))


def m005_sections_and_context(conn: Connection) -> None:
    """Sections, contextual text and the chunking fingerprint: columns added where missing.

    ``chunks.unit`` and ``chunks.section_id`` (sections), ``chunks.context`` (the context line indexed in front
    of the text) and ``documents.chunking_fingerprint`` (re-chunk when the chunking settings change).
    """
    _add_missing_columns(conn, {"chunks": ("unit", "section_id", "context"), "documents": ("chunking_fingerprint",)})
    _create_missing_index(conn, schema.chunks, "ix_chunks_section")


def m006_claim_owners(conn: Connection) -> None:
    """Claim owners and their leases: the ``claim_owners`` table and ``pipeline_runs.owner_id``."""
    schema.claim_owners.create(conn, checkfirst=True)
    _add_missing_columns(conn, {"pipeline_runs": ("owner_id",)})


def m008_document_stages(conn: Connection) -> None:
    """Inspection: the loading stage of a run and the index behind pages of a tenant's documents.

    ``pipeline_runs.loading_status`` and ``loading_ms`` (NULL on older runs), and ``ix_documents_pages``
    (user_id, doc_id): a page is a range scan of it instead of a sort of every document of the tenant.
    """
    _add_missing_columns(conn, {"pipeline_runs": ("loading_status", "loading_ms")})
    _create_missing_index(conn, schema.documents, "ix_documents_pages")


def m009_reconciler_lock(conn: Connection) -> None:
    """The ``reconciler`` table (the reconciler's totals and, on SQLite, its lease row) and the purge scan's index.

    Without the purge scan's index every pass would read the whole chunks table to find REMOVED rows not yet
    purged.
    """
    schema.reconciler.create(conn, checkfirst=True)
    _create_missing_index(conn, schema.chunks, "ix_chunks_purge_scan")  # was ix_chunks_unpurged: see m011


def m010_parsed_documents(conn: Connection) -> None:
    """The parsed artifact of each document's current version: ``parsed_documents`` and ``parsed_parts``.

    Documents ingested before it have no artifact until their file changes or a ``--full`` ingest re-parses them.
    """
    schema.parsed_documents.create(conn, checkfirst=True)
    schema.parsed_parts.create(conn, checkfirst=True)


def m011_purge_scan_index(conn: Connection) -> None:
    """The purge scan's index with ``purged_at`` first: ``ix_chunks_purge_scan`` replaces m009's ``ix_chunks_unpurged``.

    With ``lifecycle_status`` leading, SQLite's planner chose that index for every read filtered on
    ``lifecycle_status = ?`` (a backfill by ``chunk_id``, a section's chunks) and scanned all ACTIVE rows.
    """
    if "ix_chunks_unpurged" in {i["name"] for i in inspect(conn).get_indexes("chunks")}:
        on_table = " ON chunks" if conn.dialect.name in ("mysql", "mariadb") else ""
        conn.execute(text(f"DROP INDEX ix_chunks_unpurged{on_table}"))
    _create_missing_index(conn, schema.chunks, "ix_chunks_purge_scan")


def m012_score_stats(conn: Connection) -> None:
    """The score-drift watch's windows: ``score_stats`` (see :mod:`ragindex.retrieval.drift`)."""
    schema.score_stats.create(conn, checkfirst=True)


def m014_metadata_fields(conn: Connection) -> None:
    """The metadata field types of each set: ``metadata_fields`` (see :mod:`ragindex.metadata`)."""
    schema.metadata_fields.create(conn, checkfirst=True)


def m015_imports(conn: Connection) -> None:
    """The imports of export archives, per archive and set: ``imports`` (see :mod:`ragindex.transfer`)."""
    schema.imports.create(conn, checkfirst=True)


def m016_fusion_calibrations(conn: Connection) -> None:
    """Each set's fusion calibration: ``fusion_calibrations`` (see :mod:`ragindex.retrieval.calibration`)."""
    schema.fusion_calibrations.create(conn, checkfirst=True)


def _create_missing_index(conn: Connection, table: Table, name: str) -> None:
    """Create index ``name`` of ``schema.py``'s ``table`` unless the database has it."""
    if name not in {i["name"] for i in inspect(conn).get_indexes(table.name)}:
        next(i for i in table.indexes if i.name == name).create(conn)


def _add_missing_columns(conn: Connection, columns: dict[str, tuple[str, ...]]) -> None:
    """``ALTER TABLE ... ADD COLUMN`` each column of ``schema.py`` named in ``columns`` that the table lacks."""
    inspector = inspect(conn)
    for table_name, names in columns.items():
        table = schema.metadata.tables[table_name]
        present = {c["name"] for c in inspector.get_columns(table_name)}
        for name in names:
            if name not in present:
                column = table.c[name]
                ddl = column.type.compile(dialect=conn.dialect)
                value = getattr(column.server_default, "arg", None)
                default = f" DEFAULT '{value}'" if value is not None else ""
                null = "" if column.nullable else " NOT NULL"
                conn.execute(text(f"ALTER TABLE {table_name} ADD COLUMN {name} {ddl}{default}{null}"))


# The truth store's steps. The HTTP service's tables (jobs, API keys) have their own steps in
# ragindex.service.schema, recorded in the same schema_migrations table.
MIGRATIONS: tuple[tuple[str, Migration], ...] = (
    ("m001_initial_schema", m001_initial_schema),
    ("m002_mysql_exact_keys_and_times", m002_mysql_exact_keys_and_times),
    ("m005_sections_and_context", m005_sections_and_context),
    ("m006_claim_owners", m006_claim_owners),
    ("m008_document_stages", m008_document_stages),
    ("m009_reconciler_lock", m009_reconciler_lock),
    ("m010_parsed_documents", m010_parsed_documents),
    ("m011_purge_scan_index", m011_purge_scan_index),
    ("m012_score_stats", m012_score_stats),
    ("m014_metadata_fields", m014_metadata_fields),
    ("m015_imports", m015_imports),
    ("m016_fusion_calibrations", m016_fusion_calibrations),
)


def apply_migrations(engine: Engine, migrations: Sequence[tuple[str, Migration]] = MIGRATIONS) -> list[str]:
    """Apply every step of ``migrations`` not yet recorded, in order; return the names applied now.

    Processes that open a new database at the same time (workers starting together) are
    serialised by a database lock (an advisory lock on PostgreSQL, ``GET_LOCK`` on MySQL/MariaDB,
    the write lock on SQLite), so each step runs once and nobody reads a half-made schema.
    An up-to-date database costs one query and takes no lock.
    """
    if _recorded(engine) >= {name for name, _ in migrations}:
        return []
    applied_now: list[str] = []
    with engine.connect() as conn, _migration_lock(conn):
        with _step(conn):
            schema.schema_migrations.create(conn, checkfirst=True)
        for name, step in migrations:
            with _step(conn):
                done = conn.execute(
                    select(schema.schema_migrations.c.name).where(schema.schema_migrations.c.name == name)
                ).first()
                if done:
                    continue
                step(conn)
                conn.execute(schema.schema_migrations.insert().values(name=name, applied_at=utcnow()))
                applied_now.append(name)
    return applied_now


def applied_migrations(engine: Engine) -> set[str]:
    """Names of every step recorded in ``schema_migrations`` (the truth store's and the service's); empty if none."""
    return _recorded(engine)


def _recorded(engine: Engine) -> set[str]:
    """Names in ``schema_migrations``; empty when the table does not exist (yet)."""
    try:
        with engine.connect() as conn:
            return {str(r[0]) for r in conn.execute(select(schema.schema_migrations.c.name))}
    except DBAPIError:
        return set()  # no table yet, or a real failure that the locked path reports


@contextmanager
def _step(conn: Connection) -> Iterator[None]:
    """One migration step's transaction; on SQLite it holds the write lock from its first statement."""
    with conn.begin():
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        yield


@contextmanager
def _migration_lock(conn: Connection) -> Iterator[None]:
    """Hold a database-wide lock (session level: MySQL DDL commits implicitly) while migrating."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _PG_LOCK_KEY})
        conn.commit()
        release = text("SELECT pg_advisory_unlock(:key)")
        params: dict[str, Any] = {"key": _PG_LOCK_KEY}
    elif conn.dialect.name in ("mysql", "mariadb"):
        # GET_LOCK names are server-wide: one per database, within the 64 characters allowed
        name = "ragindex_migrate_" + hashlib.sha256(str(conn.engine.url.database).encode()).hexdigest()[:32]
        got = conn.execute(text("SELECT GET_LOCK(:name, :timeout)"), {"name": name, "timeout": _LOCK_TIMEOUT_S})
        acquired = got.scalar()
        conn.commit()
        if acquired != 1:
            raise StoreError(
                f"another process has been migrating the truth store for {_LOCK_TIMEOUT_S} s; "
                "wait for it to finish or check for a stuck process",
                backend=conn.dialect.name,
            )
        release = text("SELECT RELEASE_LOCK(:name)")
        params = {"name": name}
    else:
        yield
        return
    try:
        yield
    finally:
        # a broken connection has lost the lock with its session already
        with suppress(SQLAlchemyError):
            conn.execute(release, params)
            conn.commit()


def has_table(engine: Engine, name: str) -> bool:
    """Whether ``name`` exists (used by status commands on a data dir that was never initialised)."""
    return inspect(engine).has_table(name)
