"""Named, ordered schema migrations recorded in ``schema_migrations`` (llm's pattern).

Each step is idempotent (it checks what exists before changing it), so a crash in
the middle of a migration is repaired by running it again. ``schema.py`` is the
head of the schema; a later step that adds a column must add it to ``schema.py``
too and create it here only when the inspector does not see it yet.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, inspect, select

from ragindex.store import schema

Migration = Callable[[Connection], None]


def m001_initial_schema(conn: Connection) -> None:
    """Documents, chunks, pipeline runs, embedding cache and index metadata."""
    schema.metadata.create_all(
        conn,
        tables=[schema.documents, schema.chunks, schema.pipeline_runs, schema.embedding_cache, schema.index_meta],
        checkfirst=True,
    )


MIGRATIONS: tuple[tuple[str, Migration], ...] = (("m001_initial_schema", m001_initial_schema),)


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
