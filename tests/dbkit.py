"""Throw-away databases on the MariaDB/MySQL and PostgreSQL test servers.

The servers are reached at the addresses below (override with ``RAGINDEX_TEST_MYSQL`` /
``RAGINDEX_TEST_POSTGRES``, e.g. ``root@db:3306``). A test that needs a server is skipped, with
the reason, only when the driver is missing or the server does not answer; everything else is a
failure. The fixtures choose the scope: one database per session (contract suites), per module
(workers) or per test (service tables).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

MYSQL_SERVER = os.environ.get("RAGINDEX_TEST_MYSQL", "root@127.0.0.1:3306")
POSTGRES_SERVER = os.environ.get("RAGINDEX_TEST_POSTGRES", "postgres@127.0.0.1:5432")

Server = Literal["mysql", "postgres"]


@contextmanager
def throwaway_database(server: Server, prefix: str = "ragindex_test_") -> Iterator[str]:
    """Create a database named ``prefix`` + random hex on ``server``; yield its URL; drop it afterwards."""
    if server == "mysql":
        pytest.importorskip("pymysql", reason="pymysql is not installed: pip install 'ragindex[mysql]'")
        label, address, drop = "MariaDB/MySQL", MYSQL_SERVER, ""
        base = f"mysql+pymysql://{address}"
        admin = create_engine(f"{base}/", poolclass=NullPool, connect_args={"connect_timeout": 3})
    else:
        pytest.importorskip("psycopg", reason="psycopg is not installed: pip install 'ragindex[postgres]'")
        label, address, drop = "PostgreSQL", POSTGRES_SERVER, " WITH (FORCE)"
        base = f"postgresql+psycopg://{address}"
        admin = create_engine(
            f"{base}/postgres", poolclass=NullPool, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3}
        )
    try:
        conn = admin.connect()
    except Exception as exc:  # any driver error here means "no server": skip, never fail
        admin.dispose()
        pytest.skip(f"{label} is not reachable at {address}: {exc}")
    name = f"{prefix}{secrets.token_hex(4)}"
    with conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
        conn.commit()
    try:
        yield f"{base}/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name}{drop}"))
            conn.commit()
        admin.dispose()
