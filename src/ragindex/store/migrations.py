"""Named, ordered schema migrations recorded in ``schema_migrations`` (llm's pattern).

Each step is idempotent (it checks what exists before changing it), so a crash in
the middle of a migration is repaired by running it again. ``schema.py`` is the
head of the schema; a later step that adds a column must add it to ``schema.py``
too and create it here only when the inspector does not see it yet.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, inspect, select, text

from ragindex.store import schema

Migration = Callable[[Connection], None]


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


MIGRATIONS: tuple[tuple[str, Migration], ...] = (
    ("m001_initial_schema", m001_initial_schema),
    ("m002_mysql_exact_keys_and_times", m002_mysql_exact_keys_and_times),
)


def apply_migrations(engine: Engine) -> list[str]:
    """Apply every migration not yet recorded, in order; return the names applied now."""
    applied_now: list[str] = []
    with engine.begin() as conn:
        schema.schema_migrations.create(conn, checkfirst=True)
    for name, step in MIGRATIONS:
        with engine.begin() as conn:
            done = conn.execute(
                select(schema.schema_migrations.c.name).where(schema.schema_migrations.c.name == name)
            ).first()
            if done:
                continue
            step(conn)
            conn.execute(schema.schema_migrations.insert().values(name=name, applied_at=_utcnow()))
            applied_now.append(name)
    return applied_now


def has_table(engine: Engine, name: str) -> bool:
    """Whether ``name`` exists (used by status commands on a data dir that was never initialised)."""
    return inspect(engine).has_table(name)


def _utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)
