"""The shared SQL core: engine and pool per dialect, transactions, error translation, migrations, IN-list batching.

Every role module of the SQL truth store (and the service's own store) builds on :class:`SqlCore`;
dialect differences stay in this package.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Connection, Engine, Table, create_engine, event, insert
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.sql import Executable

from ragindex._optional import EXTRAS, missing_extra
from ragindex.errors import ConfigurationError, StoreError, ValidationError
from ragindex.store import schema
from ragindex.store.migrations import MIGRATIONS, Migration, apply_migrations
from ragindex.store.search_reads import batches as batches  # re-exported: every role module batches its IN-lists
from ragindex.types import VectorKind

if TYPE_CHECKING:
    from ragindex.store.sql.search_sql import SearchSql

KINDS: tuple[VectorKind, ...] = tuple(VectorKind)
ERROR_CHARS = 4000  # error texts are cut to this many characters
DOC = schema.documents.c
CH = schema.chunks.c
RUN = schema.pipeline_runs.c
OWN = schema.claim_owners.c
OWNER_ID_CHARS = 16  # a claim token is its owner's id followed by 16 hex characters of its own


_DRIVER_EXTRAS = {"mysql": "mysql", "mariadb": "mysql", "postgresql": "postgres"}
_DRIVER_URLS = {"mysql": "mysql+pymysql://user:pass@host/db", "postgres": "postgresql+psycopg://user:pass@host/db"}


def given(*filters: tuple[ColumnElement[Any], Any]) -> list[ColumnElement[bool]]:
    """``column == value`` for each (column, value) whose value is given (not None): a read's optional filters."""
    return [column == value for column, value in filters if value is not None]


class SqlCore:
    """An SQLAlchemy engine on ``url`` with the schema migrated, and the transactions every role uses.

    Args:
        url: SQLAlchemy URL (``sqlite:///path``, ``mysql+pymysql://...``, ``postgresql+psycopg://...``).
        migrations: The named steps this store's schema needs (the truth store's by default).
    """

    name = "truth store"  # how errors name this store
    owner_id: str | None = None  # the claim owner this store acts for (see SqlOwners.register_owner)

    def __init__(self, url: str, *, migrations: Sequence[tuple[str, Migration]] = MIGRATIONS) -> None:
        self.url = url
        self.dialect = url.split(":", 1)[0].split("+", 1)[0]
        try:
            self.engine = self._create_engine(url)
            apply_migrations(self.engine, migrations)
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot open the {self.name} at {self._safe_url()}: {exc}", backend=self.dialect) from exc

    @cached_property
    def _search_sql(self) -> SearchSql:
        """The search path's reads as SQL text (:mod:`ragindex.store.sql.search_sql`)."""
        from ragindex.store.sql.search_sql import SearchSql

        return SearchSql(self.engine)

    def _safe_url(self) -> str:
        return self.url.split("@", 1)[-1] if "@" in self.url else self.url

    def _create_engine(self, url: str) -> Engine:
        if self.dialect == "sqlite":
            path = url.removeprefix("sqlite:///")
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            # pooled: a fresh SQLite connection (plus its pragmas) costs ~8 ms, a pooled one ~0.5 ms per transaction
            engine = create_engine(
                url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_S}, pool_size=8
            )
            event.listen(engine, "connect", _sqlite_pragmas)
            return engine
        try:
            return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)
        except ImportError as exc:  # SQLAlchemy imports the URL's driver here
            extra = _DRIVER_EXTRAS.get(self.dialect)
            if extra is None:
                raise
            if exc.name not in EXTRAS[extra]:  # SQLAlchemy's default driver of the dialect, not ours
                raise ConfigurationError(
                    f"{self._safe_url()}: driver {exc.name} is not installed; ragindex supports "
                    f"{_DRIVER_URLS[extra]} with pip install 'ragindex[{extra}]'",
                    backend=self.dialect,
                ) from exc
            raise missing_extra(extra, f"the {self.dialect} truth store", exc) from exc

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        try:
            with self.engine.begin() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise StoreError(f"{self.name} operation failed: {exc}", backend=self.dialect) from exc

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Driver and pool errors of the block as :class:`StoreError` (reads outside :meth:`_tx`)."""
        try:
            yield
        except SQLAlchemyError as exc:
            raise StoreError(f"{self.name} operation failed: {exc}", backend=self.dialect) from exc

    @contextmanager
    def _claim_tx(self) -> Iterator[Connection]:
        """A transaction for select-then-claim: the rows it selects stay claimable until it commits.

        SQLite takes its write lock up front (``BEGIN IMMEDIATE``, waiting up to the busy timeout), which
        serialises claimers; MySQL/MariaDB runs it at READ COMMITTED so that ``FOR UPDATE SKIP LOCKED``
        takes no gap locks (which would block or deadlock the other claimers' index updates).
        """
        try:
            with self.engine.connect() as conn:
                if self._is_mysql():
                    conn.execution_options(isolation_level="READ COMMITTED")
                with conn.begin():
                    if self.engine.dialect.name == "sqlite":
                        conn.exec_driver_sql("BEGIN IMMEDIATE")
                    yield conn
        except SQLAlchemyError as exc:
            raise StoreError(f"{self.name} operation failed: {exc}", backend=self.dialect) from exc

    def _is_mysql(self) -> bool:
        return self.engine.dialect.name in ("mysql", "mariadb")

    def _supports_skip_locked(self) -> bool:
        dialect = self.engine.dialect
        version = dialect.server_version_info or ()
        if dialect.name == "postgresql":
            return True
        if self._is_mysql():
            return version >= ((10, 6) if getattr(dialect, "is_mariadb", False) else (8, 0, 1))
        return False

    def close(self) -> None:
        """Release pooled connections."""
        self.engine.dispose()


def status_col(kind: str) -> Any:
    """The status column of vector kind ``kind``; ValidationError naming the valid kinds otherwise."""
    if kind not in KINDS:
        raise ValidationError("kind", f"unknown vector kind {kind!r}; valid: {', '.join(KINDS)}")
    return CH[f"{kind}_status"]


def claim_col(kind: str) -> Any:
    """The claim-token column of vector kind ``kind``."""
    return CH[f"{kind}_claim"]


def clip_error(error: str | None) -> str | None:
    """An error text cut to what the error columns hold; None for no (or an empty) error."""
    return (error or "")[:ERROR_CHARS] or None


def insert_ignoring_duplicates(conn: Connection, table: Table) -> Executable:
    """INSERT that skips rows whose primary key exists (ON CONFLICT DO NOTHING, or a no-op update on MySQL)."""
    # the dialects' insert constructs are imported here: a search (which never inserts) does not import them
    from sqlalchemy.dialects import mysql, postgresql, sqlite

    name = conn.dialect.name
    if name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing()
    if name == "sqlite":
        return sqlite.insert(table).on_conflict_do_nothing()
    if name in ("mysql", "mariadb"):
        first_key = table.primary_key.columns.values()[0]
        return mysql.insert(table).on_duplicate_key_update({first_key.name: first_key})
    return insert(table)


def new_id(primary_key: Any) -> int:
    """The integer primary key an INSERT returned."""
    if not primary_key:
        raise StoreError("the database did not return the new row's primary key")
    return int(primary_key[0])


SQLITE_BUSY_S = 30.0
"""SQLite's busy timeout (``connect_args`` and ``PRAGMA busy_timeout``), also the bound of the WAL switch's retries."""


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_S * 1000)}")
    _switch_to_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _switch_to_wal(cursor: Any) -> None:
    """``PRAGMA journal_mode=WAL``, tried again while another connection makes the same switch.

    On a new database the switch needs an exclusive lock, and a connection that holds a shared one while another
    takes it can be answered "database is locked" without waiting out the busy timeout (waiting there could
    deadlock): four processes opening a new truth store at the same moment failed once in a whole suite
    (``tests/contract/test_claim_contention.py``, "database is locked" from this pragma).
    """
    deadline = time.monotonic() + SQLITE_BUSY_S
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)
