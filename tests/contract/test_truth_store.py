"""The truth store contracts (claim owners and leases, the reconciler, the reads behind inspection) on SQLite,
MariaDB/MySQL and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from sqlalchemy import text

from ragindex.store import schema
from ragindex.store.migrations import apply_migrations
from ragindex.store.sql import SqlTruthStore
from ragindex.store.sqlite_search import SqliteSearchStore
from ragindex.testing.contracts.claim_owners import ClaimOwnerContract
from ragindex.testing.contracts.inspection import DocumentInspectionContract
from ragindex.testing.contracts.parsed_documents import ParsedDocumentContract
from ragindex.testing.contracts.reconcile_store import ReconcileStoreContract
from ragindex.testing.contracts.score_stats import ScoreStatsContract
from ragindex.testing.contracts.truth_store import TruthStoreContract


class TestSqliteTruthStore(
    TruthStoreContract,
    ReconcileStoreContract,
    ClaimOwnerContract,
    DocumentInspectionContract,
    ParsedDocumentContract,
    ScoreStatsContract,
):
    @pytest.fixture
    def store(self, sqlite_url: str) -> Iterator[SqlTruthStore]:
        store = SqlTruthStore(sqlite_url)
        yield store
        store.close()


class TestSqliteSearchStore(TruthStoreContract, ClaimOwnerContract, ScoreStatsContract):
    """The one-shot search's store: its reads and score windows on ``sqlite3``, every other call the full store's."""

    @pytest.fixture
    def store(self, sqlite_url: str) -> Iterator[SqliteSearchStore]:
        SqlTruthStore(sqlite_url).close()  # creates the database (the search store opens only an existing one)
        store = SqliteSearchStore.open(sqlite_url, lambda: SqlTruthStore(sqlite_url))
        assert store is not None
        yield store
        store.close()


@pytest.mark.mysql
class TestMysqlTruthStore(
    TruthStoreContract,
    ReconcileStoreContract,
    ClaimOwnerContract,
    DocumentInspectionContract,
    ParsedDocumentContract,
    ScoreStatsContract,
):
    @pytest.fixture
    def store(self, empty_mysql_url: str) -> Iterator[SqlTruthStore]:
        store = SqlTruthStore(empty_mysql_url)
        yield store
        store.close()

    def test_tables_use_the_binary_collation_and_microseconds(self, store: SqlTruthStore) -> None:
        assert set(_table_collations(store).values()) == {schema.MYSQL_COLLATION}
        assert _datetime_precisions(store) == {6}

    def test_m002_upgrades_tables_made_with_the_server_defaults(self, store: SqlTruthStore) -> None:
        store.cache_vectors("model", {"h": np.ones(4, dtype=np.float32)})
        with store.engine.begin() as conn:  # what m001 made before schema.py pinned collation and precision
            for table in schema.metadata.sorted_tables:
                conn.execute(
                    text(f"ALTER TABLE {table.name} CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci")
                )
                for column in table.columns:
                    if column.type.compile(conn.dialect).startswith("DATETIME"):
                        null = "NULL" if column.nullable else "NOT NULL"
                        conn.execute(text(f"ALTER TABLE {table.name} MODIFY {column.name} DATETIME {null}"))
            conn.execute(text("DELETE FROM schema_migrations WHERE name = 'm002_mysql_exact_keys_and_times'"))
        assert _datetime_precisions(store) == {0}
        assert store.cached_vectors("MODEL", ["h"]) != {}, "the server default collation ignores case"

        assert apply_migrations(store.engine) == ["m002_mysql_exact_keys_and_times"]
        assert set(_table_collations(store).values()) == {schema.MYSQL_COLLATION}
        assert _datetime_precisions(store) == {6}
        assert store.cached_vectors("MODEL", ["h"]) == {}
        assert list(store.cached_vectors("model", ["h"])) == ["h"]
        assert apply_migrations(store.engine) == []


@pytest.mark.postgres
class TestPostgresTruthStore(
    TruthStoreContract,
    ReconcileStoreContract,
    ClaimOwnerContract,
    DocumentInspectionContract,
    ParsedDocumentContract,
    ScoreStatsContract,
):
    @pytest.fixture
    def store(self, empty_postgres_url: str) -> Iterator[SqlTruthStore]:
        store = SqlTruthStore(empty_postgres_url)
        yield store
        store.close()


def _table_collations(store: SqlTruthStore) -> dict[str, str]:
    query = text("SELECT TABLE_NAME, TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()")
    with store.engine.connect() as conn:
        return {str(name): str(collation) for name, collation in conn.execute(query)}


def _datetime_precisions(store: SqlTruthStore) -> set[int]:
    query = text(
        "SELECT DATETIME_PRECISION FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
        "AND DATA_TYPE = 'datetime'"
    )
    with store.engine.connect() as conn:
        return {int(r[0]) for r in conn.execute(query)}
