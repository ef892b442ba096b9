"""Database fixtures for the contract suites: one throw-away database per test session and server.

MariaDB/MySQL and PostgreSQL are reached at the addresses below (override with
``RAGINDEX_TEST_MYSQL`` / ``RAGINDEX_TEST_POSTGRES``, e.g. ``root@db:3306``). A test that
needs a server is skipped, with the reason, only when the driver is missing or the server
does not answer; everything else is a failure.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, select, text
from sqlalchemy.pool import NullPool

from ragindex.store import schema
from ragindex.store.migrations import MIGRATIONS

MYSQL_SERVER = os.environ.get("RAGINDEX_TEST_MYSQL", "root@127.0.0.1:3306")
POSTGRES_SERVER = os.environ.get("RAGINDEX_TEST_POSTGRES", "postgres@127.0.0.1:5432")


def _unique_name() -> str:
    return f"ragindex_test_{secrets.token_hex(4)}"


@pytest.fixture(scope="session")
def mysql_url() -> Iterator[str]:
    """URL of a fresh MariaDB/MySQL database, dropped at the end of the session."""
    pytest.importorskip("pymysql", reason="pymysql is not installed: pip install 'ragindex[mysql]'")
    admin = create_engine(f"mysql+pymysql://{MYSQL_SERVER}/", poolclass=NullPool, connect_args={"connect_timeout": 3})
    try:
        conn = admin.connect()
    except Exception as exc:  # any driver error here means "no server": skip, never fail
        admin.dispose()
        pytest.skip(f"MariaDB/MySQL is not reachable at {MYSQL_SERVER}: {exc}")
    name = _unique_name()
    with conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    try:
        yield f"mysql+pymysql://{MYSQL_SERVER}/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
        admin.dispose()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a fresh PostgreSQL database, dropped (WITH FORCE) at the end of the session."""
    pytest.importorskip("psycopg", reason="psycopg is not installed: pip install 'ragindex[postgres]'")
    admin = create_engine(
        f"postgresql+psycopg://{POSTGRES_SERVER}/postgres",
        poolclass=NullPool,
        isolation_level="AUTOCOMMIT",
        connect_args={"connect_timeout": 3},
    )
    try:
        conn = admin.connect()
    except Exception as exc:  # any driver error here means "no server": skip, never fail
        admin.dispose()
        pytest.skip(f"PostgreSQL is not reachable at {POSTGRES_SERVER}: {exc}")
    name = _unique_name()
    with conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    try:
        yield f"postgresql+psycopg://{POSTGRES_SERVER}/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


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
