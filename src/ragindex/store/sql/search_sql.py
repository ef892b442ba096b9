"""The search path's reads as plain SQL text: no statement built, compiled or cache-keyed per call.

A search reads the truth store four times (the ACTIVE collection, the dense candidates' sections, the backfill of
the fused candidates, the sections a hit's context needs). Through SQLAlchemy's expression layer each read cost
~0.4 ms of Python before the database did anything (building the ``select``, its cache key, expanding the IN-list,
processing each result column); the same read as text costs ~0.1 ms (measured in docs/service.md, "The read
path"). The texts are rendered once per dialect with its quoting and its driver's positional placeholder; only the
IN-lists vary, and their placeholders are cached per length. They run on a pooled DBAPI connection's own
cursor (``fetchall``: plain tuples), not through a SQLAlchemy ``Connection`` and its result (a ``fetchone`` and a
``Row`` per row: ~0.3 ms of a 100-row backfill), with the pool's checkout and reset as before; a driver error is
raised as SQLAlchemy's wrapped one, which the store turns into its :class:`~ragindex.errors.StoreError`. JSON
columns come back as the driver gives them (text, or a dict from drivers that decode JSON themselves):
:class:`~ragindex.store.records.JsonObject` decodes them when first read.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from ragindex.store import schema
from ragindex.store.records import CHUNK_COLUMNS


class SearchSql:
    """The search path's three reads for one engine's dialect.

    Args:
        engine: The truth store's engine (its pool and dialect).
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._driver_error: type[Exception] = engine.dialect.loaded_dbapi.Error
        self.mark = "?" if engine.dialect.paramstyle == "qmark" else "%s"
        quote = engine.dialect.identifier_preparer.quote
        chunks, documents = quote(schema.chunks.name), quote(schema.documents.name)
        c = {name: f"c.{quote(name)}" for name in {*CHUNK_COLUMNS, "lifecycle_status"}}
        d = {name: f"d.{quote(name)}" for name in ("doc_id", "source_uri", "filename", "metadata", "lifecycle_status")}
        self._backfill = (
            f"SELECT {', '.join(c[name] for name in CHUNK_COLUMNS)}, {d['source_uri']}, {d['filename']}, "
            f"{d['metadata']} FROM {chunks} c JOIN {documents} d ON {d['doc_id']} = {c['doc_id']} "
            f"WHERE ({{wanted}}) AND {c['lifecycle_status']} = {self.mark} AND {d['lifecycle_status']} = {self.mark}"
        )
        self._by_id = f"{c['chunk_id']} IN ({{}})"
        self._by_section = f"{c['section_id']} IN ({{}})"
        self._sections_of = (
            f"SELECT {c['chunk_id']}, {c['section_id']}, {c['chunk_index']} FROM {chunks} c "
            f"WHERE {c['chunk_id']} IN ({{}}) AND {c['lifecycle_status']} = {self.mark} "
            f"AND {c['section_id']} IS NOT NULL"
        )
        meta = quote(schema.index_meta.name)
        self._active = (
            f"SELECT {quote('collection')} FROM {meta} WHERE {quote('state')} = {self.mark} "
            f"ORDER BY {quote('collection')}"
        )
        self._members = (
            f"SELECT {c['section_id']}, {c['chunk_id']}, {c['content']}, {c['start_line']}, {c['end_line']} "
            f"FROM {chunks} c WHERE {c['section_id']} IN ({{}}) AND {c['lifecycle_status']} = {self.mark} "
            f"ORDER BY {c['doc_id']}, {c['chunk_index']}"
        )

    def active_collections(self, active: str) -> list[Any]:
        """``(collection,)`` of the collections in state ``active``."""
        return self._read(self._active, (active,))

    def backfill(self, chunk_ids: Sequence[str], sections: Sequence[str], live: str) -> list[Any]:
        """Rows of ``chunk_ids`` and of the chunks of ``sections`` with lifecycle ``live``, their documents too."""
        wanted = []
        if chunk_ids:
            wanted.append(self._by_id.format(_marks(self.mark, len(chunk_ids))))
        if sections:
            wanted.append(self._by_section.format(_marks(self.mark, len(sections))))
        sql = self._backfill.format(wanted=" OR ".join(wanted))
        return self._read(sql, (*chunk_ids, *sections, live, live))

    def sections_of(self, chunk_ids: Sequence[str], live: str) -> list[Any]:
        """``(chunk_id, section_id, chunk_index)`` of the ``live`` chunks among ``chunk_ids`` with a section."""
        return self._read(self._sections_of.format(_marks(self.mark, len(chunk_ids))), (*chunk_ids, live))

    def members(self, section_ids: Sequence[str], live: str) -> list[Any]:
        """``(section_id, chunk_id, content, start_line, end_line)`` of the ``live`` chunks of ``section_ids``."""
        return self._read(self._members.format(_marks(self.mark, len(section_ids))), (*section_ids, live))

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


@cache
def _marks(mark: str, count: int) -> str:
    return ", ".join([mark] * count)
