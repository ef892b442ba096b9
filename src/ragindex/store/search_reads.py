"""The search path's reads of the truth store, free of SQLAlchemy: their SQL texts and what is made of the rows.

A search reads the store four times: the ACTIVE collections, the sections of the dense candidates (fusion), the
backfill of the fused candidates with their documents, and the chunks of the sections a hit's context needs. The
texts are rendered once per dialect (its identifier quoting, its driver's placeholder) by :class:`SearchTexts`; a
:class:`TextQueries` runs them on a connection and returns plain tuples. Two do: the SQL store's
:class:`~ragindex.store.sql.search_sql.SearchSql` on its SQLAlchemy pool (every dialect), and the one-shot search's
:class:`~ragindex.store.sqlite_search.SqliteSearchStore` on the standard library's ``sqlite3`` (a CLI search that
never imports SQLAlchemy). The functions below turn the rows into the store's records for both, so the two cannot
answer differently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cache
from typing import Any, Protocol, TypeVar

from ragindex.records import RECORD_URI_PREFIX
from ragindex.store.records import CHUNK_COLUMNS, ChunkText, ChunkView, JsonObject
from ragindex.store.states import CollectionState, Lifecycle

SQL_IN_BATCH = 500  # bound IN-lists (SQLite's variable limit, server packet sizes)
CHUNKS, DOCUMENTS, INDEX_META = "chunks", "documents", "index_meta"  # the tables' names (schema.py)

_T = TypeVar("_T")


def batches(items: Sequence[_T], size: int = SQL_IN_BATCH) -> Iterator[Sequence[_T]]:
    """``items`` in slices of at most ``size`` (one IN-list each)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


class SearchQueries(Protocol):
    """The search path's reads on one connection pool: rows as plain tuples."""

    def active_collections(self, active: str) -> list[Any]:
        """``(collection,)`` of the collections in state ``active``."""
        ...

    def backfill(self, chunk_ids: Sequence[str], live: str) -> list[Any]:
        """Rows of ``chunk_ids`` with lifecycle ``live``, their documents' too."""
        ...

    def sections_of(self, chunk_ids: Sequence[str], live: str) -> list[Any]:
        """``(chunk_id, section_id, chunk_index)`` of the ``live`` chunks among ``chunk_ids`` with a section."""
        ...

    def members(self, section_ids: Sequence[str], live: str) -> list[Any]:
        """``(section_id, chunk_id, content, start_line, end_line)`` of the ``live`` chunks of ``section_ids``."""
        ...

    def live_sections(self, section_ids: Sequence[str], live: str) -> list[Any]:
        """``(section_id,)`` of each of ``section_ids`` that has a ``live`` chunk."""
        ...


class SearchTexts:
    """The search path's SQL texts in one dialect; only the IN-lists vary (their placeholders cached per length).

    Args:
        quote: The dialect's identifier quoting.
        mark: The driver's positional placeholder (``?`` or ``%s``).
    """

    def __init__(self, quote: Callable[[str], str], mark: str) -> None:
        self.mark = mark
        chunks, documents = quote(CHUNKS), quote(DOCUMENTS)
        c = {name: f"c.{quote(name)}" for name in {*CHUNK_COLUMNS, "lifecycle_status"}}
        names = ("doc_id", "source_uri", "filename", "metadata", "file_uri", "lifecycle_status")
        d = {name: f"d.{quote(name)}" for name in names}
        self._backfill = (
            f"SELECT {', '.join(c[name] for name in CHUNK_COLUMNS)}, {d['source_uri']}, {d['filename']}, "
            f"{d['metadata']}, {d['file_uri']} FROM {chunks} c JOIN {documents} d ON {d['doc_id']} = {c['doc_id']} "
            f"WHERE {c['chunk_id']} IN ({{}}) AND {c['lifecycle_status']} = {mark} "
            f"AND {d['lifecycle_status']} = {mark}"
        )
        self._sections_of = (
            f"SELECT {c['chunk_id']}, {c['section_id']}, {c['chunk_index']} FROM {chunks} c "
            f"WHERE {c['chunk_id']} IN ({{}}) AND {c['lifecycle_status']} = {mark} "
            f"AND {c['section_id']} IS NOT NULL"
        )
        self.active = (
            f"SELECT {quote('collection')} FROM {quote(INDEX_META)} WHERE {quote('state')} = {mark} "
            f"ORDER BY {quote('collection')}"
        )
        self._members = (
            f"SELECT {c['section_id']}, {c['chunk_id']}, {c['content']}, {c['start_line']}, {c['end_line']} "
            f"FROM {chunks} c WHERE {c['section_id']} IN ({{}}) AND {c['lifecycle_status']} = {mark} "
            f"ORDER BY {c['doc_id']}, {c['chunk_index']}"
        )
        self._live_sections = (
            f"SELECT DISTINCT {c['section_id']} FROM {chunks} c WHERE {c['section_id']} IN ({{}}) "
            f"AND {c['lifecycle_status']} = {mark}"
        )

    def backfill(self, chunk_ids: int) -> str:
        """The backfill of ``chunk_ids`` ids (parameters: the ids, then the chunk's and the document's lifecycle)."""
        return self._backfill.format(_marks(self.mark, chunk_ids))

    def sections_of(self, chunk_ids: int) -> str:
        """The sections of ``chunk_ids`` ids (parameters: the ids, then the lifecycle)."""
        return self._sections_of.format(_marks(self.mark, chunk_ids))

    def members(self, section_ids: int) -> str:
        """The chunks of ``section_ids`` sections (parameters: the ids, then the lifecycle)."""
        return self._members.format(_marks(self.mark, section_ids))

    def live_sections(self, section_ids: int) -> str:
        """Which of ``section_ids`` sections have a chunk in a lifecycle (parameters: the ids, then it)."""
        return self._live_sections.format(_marks(self.mark, section_ids))


class TextQueries:
    """:class:`SearchQueries` by :class:`SearchTexts`: a subclass runs one text with its parameters (``_read``).

    Args:
        texts: The texts in the subclass's dialect.
    """

    def __init__(self, texts: SearchTexts) -> None:
        self.texts = texts

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        raise NotImplementedError

    def active_collections(self, active: str) -> list[Any]:
        """``(collection,)`` of the collections in state ``active``."""
        return self._read(self.texts.active, (active,))

    def backfill(self, chunk_ids: Sequence[str], live: str) -> list[Any]:
        """Rows of ``chunk_ids`` with lifecycle ``live``, their documents' too."""
        return self._read(self.texts.backfill(len(chunk_ids)), (*chunk_ids, live, live))

    def sections_of(self, chunk_ids: Sequence[str], live: str) -> list[Any]:
        """``(chunk_id, section_id, chunk_index)`` of the ``live`` chunks among ``chunk_ids`` with a section."""
        return self._read(self.texts.sections_of(len(chunk_ids)), (*chunk_ids, live))

    def members(self, section_ids: Sequence[str], live: str) -> list[Any]:
        """``(section_id, chunk_id, content, start_line, end_line)`` of the ``live`` chunks of ``section_ids``."""
        return self._read(self.texts.members(len(section_ids)), (*section_ids, live))

    def live_sections(self, section_ids: Sequence[str], live: str) -> list[Any]:
        """``(section_id,)`` of each of ``section_ids`` that has a ``live`` chunk."""
        return self._read(self.texts.live_sections(len(section_ids)), (*section_ids, live))


@cache
def _marks(mark: str, count: int) -> str:
    return ", ".join([mark] * count)


def active_collections(queries: SearchQueries) -> list[str]:
    """The names of the ACTIVE collections."""
    return [name for (name,) in queries.active_collections(CollectionState.ACTIVE.value)]


def backfill(queries: SearchQueries, chunk_ids: Sequence[str]) -> dict[str, ChunkView]:
    """ACTIVE chunks (joined with their document) by id: no ghosts.

    Each view keeps the row as read and builds its :class:`~ragindex.store.records.ChunkRow` on first use only; a
    document's metadata is decoded at most once per call (:class:`~ragindex.store.records.JsonObject`).
    """
    views: dict[str, ChunkView] = {}
    docs: dict[int, tuple[str, str, Mapping[str, Any], bool]] = {}
    width = len(CHUNK_COLUMNS)
    for part in batches(list(chunk_ids)):
        for r in queries.backfill(part, Lifecycle.ACTIVE.value):
            doc = docs.get(r[1])
            if doc is None:
                record = str(r[width + 3] or "").startswith(RECORD_URI_PREFIX)
                doc = docs[r[1]] = (r[width], r[width + 1], JsonObject.of(r[width + 2]), record)
            views[r[0]] = ChunkView(r, *doc)
    return views


def chunk_sections(queries: SearchQueries, chunk_ids: Sequence[str]) -> dict[str, tuple[str, int]]:
    """chunk_id -> (section_id, chunk_index) of the ACTIVE chunks among ``chunk_ids`` that have a section."""
    out: dict[str, tuple[str, int]] = {}
    for part in batches(list(chunk_ids)):
        rows = queries.sections_of(part, Lifecycle.ACTIVE.value)
        out.update({chunk_id: (section_id, int(index)) for chunk_id, section_id, index in rows})
    return out


def section_chunks(queries: SearchQueries, section_ids: Sequence[str]) -> dict[str, list[ChunkText]]:
    """section_id -> its ACTIVE chunks in document order (sections without live chunks are absent)."""
    out: dict[str, list[ChunkText]] = {}
    for part in batches(list(dict.fromkeys(section_ids))):
        for section_id, chunk_id, content, start_line, end_line in queries.members(part, Lifecycle.ACTIVE.value):
            out.setdefault(section_id, []).append(ChunkText(chunk_id, content, start_line, end_line))
    return out


def live_sections(queries: SearchQueries, section_ids: Sequence[str]) -> set[str]:
    """The ids among ``section_ids`` that have an ACTIVE chunk."""
    out: set[str] = set()
    for part in batches(list(dict.fromkeys(section_ids))):
        out.update(section_id for (section_id,) in queries.live_sections(part, Lifecycle.ACTIVE.value))
    return out
