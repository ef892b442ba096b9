"""Database fixtures for the contract suites: one throw-away database per test session and server.

The servers, and when a test is skipped rather than failed, are described in ``dbkit``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, select
from sqlalchemy.pool import NullPool

from dbkit import throwaway_database
from ragindex.store import schema
from ragindex.store.migrations import MIGRATIONS


@pytest.fixture(scope="session")
def mysql_url() -> Iterator[str]:
    """URL of a fresh MariaDB/MySQL database, dropped at the end of the session."""
    with throwaway_database("mysql") as url:
        yield url


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a fresh PostgreSQL database, dropped (WITH FORCE) at the end of the session."""
    with throwaway_database("postgres") as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """URL of a fresh SQLite file."""
    return f"sqlite:///{tmp_path / 'truth.db'}"


def _drop_store(url: str) -> None:
    """Drop every truth store table, the migrations record included."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            present = set(inspect(conn).get_table_names())
            for table in reversed(schema.metadata.sorted_tables):
                if table.name in present:
                    table.drop(conn)
    finally:
        engine.dispose()


def _empty_store(url: str) -> None:
    """Leave no truth store rows behind: delete them when the schema is complete, else drop every table.

    Deleting rows is much faster than DDL on a server (tables are recreated only when a test changed
    the schema, or on the first use of the database).
    """
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            present = set(inspect(conn).get_table_names())
            applied: set[str] = set()
            if schema.schema_migrations.name in present:
                applied = {r[0] for r in conn.execute(select(schema.schema_migrations.c.name))}
            complete = {t.name for t in schema.metadata.sorted_tables} <= present and applied == {
                name for name, _ in MIGRATIONS
            }
            if complete:
                for table in reversed(schema.metadata.sorted_tables):
                    if table is not schema.schema_migrations:
                        conn.execute(table.delete())
    finally:
        engine.dispose()
    if not complete:
        _drop_store(url)


@pytest.fixture
def empty_mysql_url(mysql_url: str) -> Iterator[str]:
    """The session's MariaDB/MySQL database with no truth store rows in it (emptied again afterwards)."""
    _empty_store(mysql_url)
    yield mysql_url
    _empty_store(mysql_url)


@pytest.fixture
def empty_postgres_url(postgres_url: str) -> Iterator[str]:
    """The session's PostgreSQL database with no truth store rows in it (emptied again afterwards)."""
    _empty_store(postgres_url)
    yield postgres_url
    _empty_store(postgres_url)


@pytest.fixture
def bare_mysql_url(mysql_url: str) -> Iterator[str]:
    """The session's MariaDB/MySQL database with no truth store tables at all (never migrated)."""
    _drop_store(mysql_url)
    yield mysql_url
    _drop_store(mysql_url)


@pytest.fixture
def bare_postgres_url(postgres_url: str) -> Iterator[str]:
    """The session's PostgreSQL database with no truth store tables at all (never migrated)."""
    _drop_store(postgres_url)
    yield postgres_url
    _drop_store(postgres_url)
