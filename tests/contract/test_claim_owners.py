"""The claim owner contract (owners, leases, gone owners' claims released) on SQLite, MariaDB and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragindex.store.sql import SqlTruthStore
from ragindex.testing.contracts.claim_owners import ClaimOwnerContract


class TestSqliteClaimOwners(ClaimOwnerContract):
    @pytest.fixture
    def store(self, sqlite_url: str) -> Iterator[SqlTruthStore]:
        store = SqlTruthStore(sqlite_url)
        yield store
        store.close()


@pytest.mark.mysql
class TestMysqlClaimOwners(ClaimOwnerContract):
    @pytest.fixture
    def store(self, empty_mysql_url: str) -> Iterator[SqlTruthStore]:
        store = SqlTruthStore(empty_mysql_url)
        yield store
        store.close()


@pytest.mark.postgres
class TestPostgresClaimOwners(ClaimOwnerContract):
    @pytest.fixture
    def store(self, empty_postgres_url: str) -> Iterator[SqlTruthStore]:
        store = SqlTruthStore(empty_postgres_url)
        yield store
        store.close()
