"""The inspection contract (document pages, chunk counts, run stages) on SQLite, MariaDB/MySQL and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragindex.store.sql import SqlTruthStore
from ragindex.testing.contracts.inspection import DocumentInspectionContract


class TestSqliteInspection(DocumentInspectionContract):
    @pytest.fixture
    def store(self, sqlite_url: str) -> Iterator[SqlTruthStore]:
        store = SqlTruthStore(sqlite_url)
        yield store
        store.close()


@pytest.mark.mysql
class TestMysqlInspection(DocumentInspectionContract):
    @pytest.fixture
    def store(self, empty_mysql_url: str) -> Iterator[SqlTruthStore]:
        store = SqlTruthStore(empty_mysql_url)
        yield store
        store.close()


@pytest.mark.postgres
class TestPostgresInspection(DocumentInspectionContract):
    @pytest.fixture
    def store(self, empty_postgres_url: str) -> Iterator[SqlTruthStore]:
        store = SqlTruthStore(empty_postgres_url)
        yield store
        store.close()
