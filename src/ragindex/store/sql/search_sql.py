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

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from ragindex.store.search_reads import SearchTexts


class SearchSql:
    """The search path's reads on one engine's pool (:class:`~ragindex.store.search_reads.SearchQueries`).

    Args:
        engine: The truth store's engine (its pool and dialect).
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._driver_error: type[Exception] = engine.dialect.loaded_dbapi.Error
        mark = "?" if engine.dialect.paramstyle == "qmark" else "%s"
        self.texts = SearchTexts(engine.dialect.identifier_preparer.quote, mark)

    def active_collections(self, active: str) -> list[Any]:
        """``(collection,)`` of the collections in state ``active``."""
        return self._read(self.texts.active, (active,))

    def backfill(self, chunk_ids: Sequence[str], sections: Sequence[str], live: str) -> list[Any]:
        """Rows of ``chunk_ids`` and of the chunks of ``sections`` with lifecycle ``live``, their documents too."""
        return self._read(self.texts.backfill(len(chunk_ids), len(sections)), (*chunk_ids, *sections, live, live))

    def sections_of(self, chunk_ids: Sequence[str], live: str) -> list[Any]:
        """``(chunk_id, section_id, chunk_index)`` of the ``live`` chunks among ``chunk_ids`` with a section."""
        return self._read(self.texts.sections_of(len(chunk_ids)), (*chunk_ids, live))

    def members(self, section_ids: Sequence[str], live: str) -> list[Any]:
        """``(section_id, chunk_id, content, start_line, end_line)`` of the ``live`` chunks of ``section_ids``."""
        return self._read(self.texts.members(len(section_ids)), (*section_ids, live))

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
