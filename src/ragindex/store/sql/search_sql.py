"""The search path's reads on the SQL store's pool: plain SQL text, no statement built, compiled or cache-keyed.

Through SQLAlchemy's expression layer each read cost ~0.4 ms of Python before the database did anything (building
the ``select``, its cache key, expanding the IN-list, processing each result column); the same read as text costs
~0.1 ms (measured in docs/service.md, "The read path"). The texts are :class:`~ragindex.store.search_reads.SearchTexts`
rendered with the dialect's quoting and its driver's placeholder. They run on a pooled DBAPI connection's own cursor
(``fetchall``: plain tuples), not through a SQLAlchemy ``Connection`` and its result (a ``fetchone`` and a ``Row`` per
row: ~0.3 ms of a 100-row backfill), with the pool's checkout and reset as before; a driver error is raised as
SQLAlchemy's wrapped one, which the store turns into its :class:`~ragindex.errors.StoreError`. JSON columns come back
as the driver gives them (text, or a dict from drivers that decode JSON themselves):
:class:`~ragindex.store.records.JsonObject` decodes them when first read.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from ragindex.store.search_reads import SearchTexts, TextQueries


class SearchSql(TextQueries):
    """The search path's reads on one engine's pool (:class:`~ragindex.store.search_reads.SearchQueries`).

    Args:
        engine: The truth store's engine (its pool and dialect).
    """

    def __init__(self, engine: Engine) -> None:
        mark = "?" if engine.dialect.paramstyle == "qmark" else "%s"
        super().__init__(SearchTexts(engine.dialect.identifier_preparer.quote, mark))
        self.engine = engine
        self._driver_error: type[Exception] = engine.dialect.loaded_dbapi.Error

    def rows(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        """The rows of any plain SQL ``sql`` (placeholders: ``self.texts.mark``) on this pool, as plain tuples."""
        return self._read(sql, params)

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        conn = self.engine.raw_connection()  # the pool's checkout (pre-ping where configured) and reset on close
        try:
            cursor = conn.cursor()
            try:
                cursor.execute(sql, params)
                return list(cursor.fetchall())
            finally:
                cursor.close()
        except self._driver_error as exc:
            raise DBAPIError.instance(sql, params, exc, self._driver_error) from exc
        finally:
            conn.close()
