"""The truth store of a process that only searches, on SQLite: the standard library's ``sqlite3``, no SQLAlchemy.

A one-shot ``ragindex search`` spent ~0.2 s of its ~0.7 s importing SQLAlchemy and building an engine, pool and
dialect for a handful of reads, all holding the GIL while the query's ONNX session was being built beside them. This
store answers the calls a search makes with plain SQL on one ``sqlite3`` connection: the set's fusion calibration
and metadata fields, the collections, the search path's reads (:mod:`ragindex.store.search_reads`, the same texts
and row handling as the SQL store's), and the drift watch's score windows (:mod:`ragindex.store.score_windows`,
written under SQLite's write lock as the SQL store does). Any other method of the truth store opens the full
:class:`~ragindex.store.sql.SqlTruthStore` on first use and is answered by it, so a caller never meets a missing
method; the search path itself never does that.

:meth:`SqliteSearchStore.open` gives None (use the full store) unless the database exists and its schema has every
migration this version knows: creating or migrating a store stays the full store's job.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragindex.clock import utcnow
from ragindex.errors import StoreError
from ragindex.store import search_reads
from ragindex.store.records import ChunkText, ChunkView, FusionCalibration, IndexMeta, ScoreBatch, ScoreWindow
from ragindex.store.score_windows import merge_batch, stats_key
from ragindex.store.states import WindowState
from ragindex.types import VectorKind

if TYPE_CHECKING:
    from ragindex.store.protocol import TruthStore

log = logging.getLogger(__name__)

HEAD_MIGRATIONS = (  # the names of ragindex.store.migrations.MIGRATIONS (a test keeps them equal)
    "m001_initial_schema",
    "m002_mysql_exact_keys_and_times",
    "m005_sections_and_context",
    "m006_claim_owners",
    "m008_document_stages",
    "m009_reconciler_lock",
    "m010_parsed_documents",
    "m011_purge_scan_index",
    "m012_score_stats",
    "m014_metadata_fields",
    "m015_imports",
    "m016_fusion_calibrations",
)
BUSY_TIMEOUT_S = 30.0  # as the SQL store's (ragindex.store.sql.core.SQLITE_BUSY_S; a test keeps them equal)
_TIMESTAMP = "%Y-%m-%d %H:%M:%S.%f"  # how SQLAlchemy keeps a DateTime in SQLite (naive UTC)


class SqliteSearchStore:
    """The search path's calls on ``sqlite3``; every other call goes to the full store, opened on first use.

    Args:
        connection: An open connection to an up-to-date truth store (see :meth:`open`).
        full: Builds the full truth store on the same database.
    """

    dialect = "sqlite"
    name = "truth store"

    def __init__(self, connection: sqlite3.Connection, full: Callable[[], TruthStore]) -> None:
        self._conn = connection
        self._lock = threading.Lock()  # one connection, shared by the search's threads
        self._build_full = full
        self._full: TruthStore | None = None
        self._full_lock = threading.Lock()
        self._queries = _Queries(self)

    @classmethod
    def open(cls, url: str, full: Callable[[], TruthStore]) -> SqliteSearchStore | None:
        """This store over the SQLite file of ``url``; None when the full store must open it instead.

        None: not a plain ``sqlite:///path`` URL, no file there yet, not a database, or a schema short of a
        migration (the full store creates, migrates or reports it).
        """
        path = url.removeprefix("sqlite:///")
        if path == url or not path or path == ":memory:" or "?" in path or not Path(path).is_file():
            return None
        try:
            connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, check_same_thread=False, isolation_level=None)
        except sqlite3.Error:
            return None
        try:
            connection.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
            connection.execute("PRAGMA synchronous=NORMAL")  # the database is in WAL mode: the full store set it
            applied = {name for (name,) in connection.execute("SELECT name FROM schema_migrations")}
        except sqlite3.Error:
            connection.close()
            return None
        if not applied.issuperset(HEAD_MIGRATIONS):
            connection.close()
            return None
        return cls(connection, full)

    # ------------------------------------------------------------------ the calls a search makes
    def active_collections(self) -> list[str]:
        """The names of the ACTIVE collections."""
        return search_reads.active_collections(self._queries)

    def list_index_meta(self) -> list[IndexMeta]:
        """Every collection's metadata."""
        rows = self._read(
            "SELECT collection, backend, state, dense_fingerprint, dense_dim, sparse_model, bm25_config, "
            "chunker_config FROM index_meta"
        )
        return [
            IndexMeta(
                collection=collection,
                backend=backend,
                state=state,
                dense_fingerprint=fingerprint,
                dense_dim=None if dim is None else int(dim),
                sparse_model=sparse,
                bm25_config=_json(bm25),
                chunker_config=_json(chunker),
            )
            for collection, backend, state, fingerprint, dim, sparse, bm25, chunker in rows
        ]

    def fusion_calibration(self, user_id: int, set_id: int) -> FusionCalibration | None:
        """The set's calibration, or None when it has none."""
        rows = self._read(
            "SELECT fusion, weights, documents, report, created_at FROM fusion_calibrations "
            "WHERE user_id = ? AND set_id = ?",
            (user_id, set_id),
        )
        if not rows:
            return None
        fusion, weights, documents, report, created_at = rows[0]
        return FusionCalibration(
            user_id=user_id,
            set_id=set_id,
            fusion=str(fusion),
            weights={str(k): float(v) for k, v in (_json(weights) or {}).items()},
            documents=int(documents),
            report=dict(_json(report) or {}),
            created_at=datetime.fromisoformat(created_at),
        )

    def field_types(self, user_id: int, set_id: int) -> dict[str, str]:
        """Name -> type of every metadata field recorded in the set."""
        rows = self._read(
            "SELECT name, field_type FROM metadata_fields WHERE user_id = ? AND set_id = ?", (user_id, set_id)
        )
        return {str(name): str(kind) for name, kind in rows}

    def chunk_sections(self, chunk_ids: Sequence[str]) -> dict[str, tuple[str, int]]:
        """chunk_id -> (section_id, chunk_index) of the ACTIVE chunks among ``chunk_ids`` that have a section."""
        return search_reads.chunk_sections(self._queries, chunk_ids)

    def backfill(self, chunk_ids: Sequence[str]) -> dict[str, ChunkView]:
        """ACTIVE chunks (joined with their document) by id: no ghosts."""
        return search_reads.backfill(self._queries, chunk_ids)

    def section_chunks(self, section_ids: Sequence[str]) -> dict[str, list[ChunkText]]:
        """section_id -> its ACTIVE chunks in document order (sections without live chunks are absent)."""
        return search_reads.section_chunks(self._queries, section_ids)

    def live_sections(self, section_ids: Sequence[str]) -> set[str]:
        """The ids among ``section_ids`` that have an ACTIVE chunk."""
        return search_reads.live_sections(self._queries, section_ids)

    def record_scores(
        self, batches: Sequence[ScoreBatch], *, window_queries: int, keep_windows: int
    ) -> list[ScoreWindow]:
        """Add each batch to the OPEN window of its (source, fingerprint); return the windows this call closed.

        As :meth:`SqlScoreStats.record_scores <ragindex.store.sql.scores.SqlScoreStats.record_scores>`, under the
        database's write lock (``BEGIN IMMEDIATE``), which every writer of a SQLite store takes: no two processes
        can open the same window at once.
        """
        closed = [self._record_one(batch, window_queries, keep_windows) for batch in batches if batch.queries >= 1]
        return [window for window in closed if window is not None]

    def _record_one(self, batch: ScoreBatch, window_queries: int, keep_windows: int) -> ScoreWindow | None:
        key = stats_key(batch.source, batch.fingerprint)
        with self._write() as cursor:
            cursor.execute(
                "SELECT window_no, state, queries, started_at, top1, top10 FROM score_stats "
                "WHERE stats_key = ? ORDER BY window_no DESC LIMIT 1",
                (key,),
            )
            found = cursor.fetchone()
            latest = None
            if found is not None:
                number, state, queries, started_at, top1, top10 = found
                latest = {
                    "window_no": number,
                    "state": state,
                    "queries": queries,
                    "started_at": datetime.fromisoformat(started_at),
                    "top1": json.loads(top1),
                    "top10": json.loads(top10),
                }

            def has_reference() -> bool:
                cursor.execute(
                    "SELECT window_no FROM score_stats WHERE stats_key = ? AND is_reference = 1 LIMIT 1", (key,)
                )
                return cursor.fetchone() is not None

            write = merge_batch(batch, latest, window_queries=window_queries, has_reference=has_reference, now=utcnow())
            row = {name: _sql_value(value) for name, value in write.row.items()}
            if write.new:
                marks = ", ".join("?" * len(row))
                cursor.execute(f"INSERT INTO score_stats ({', '.join(row)}) VALUES ({marks})", tuple(row.values()))
            else:
                changes = {name: row[name] for name in write.changes()}
                assignments = ", ".join(f"{name} = ?" for name in changes)
                cursor.execute(
                    f"UPDATE score_stats SET {assignments} WHERE stats_key = ? AND window_no = ?",
                    (*changes.values(), key, write.number),
                )
            if write.closed is not None:
                cursor.execute(
                    "DELETE FROM score_stats WHERE stats_key = ? AND state = ? AND is_reference = 0 AND window_no <= ?",
                    (key, WindowState.CLOSED.value, write.number - keep_windows),
                )
        return write.closed

    @property
    def full_store_open(self) -> bool:
        """Whether a call this store does not make itself has opened the full store."""
        return self._full is not None

    # ------------------------------------------------------------------ the claim owner (the full store's, if any)
    @property
    def owner_id(self) -> str | None:
        """The claim owner this process registered (through the full store); None while it has none."""
        return None if self._full is None else self._full.owner_id

    @owner_id.setter
    def owner_id(self, value: str | None) -> None:
        self._full_store().owner_id = value

    def drop_owner(self) -> dict[str, list[str]]:
        """Give back this process's claims: none unless it registered an owner (through the full store)."""
        if self._full is None:
            return {str(kind): [] for kind in VectorKind}
        return self._full.drop_owner()

    def close(self) -> None:
        """Close the connection, and the full store if one was opened."""
        try:
            if self._full is not None:
                self._full.close()
        finally:
            self._conn.close()

    # ------------------------------------------------------------------ everything else
    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # this store's own attributes are never the full store's
            raise AttributeError(name)
        return getattr(self._full_store(), name)

    def _full_store(self) -> TruthStore:
        with self._full_lock:
            if self._full is None:
                log.debug("the search store opens the full truth store (a call the search path does not make)")
                self._full = self._build_full()
            return self._full

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock, _errors():
            return self._conn.execute(sql, params).fetchall()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Cursor]:
        with self._lock, _errors():
            cursor = self._conn.cursor()
            cursor.execute("BEGIN IMMEDIATE")  # the write lock first: the read below sees the row it updates
            try:
                yield cursor
            except BaseException:
                cursor.execute("ROLLBACK")
                raise
            cursor.execute("COMMIT")


class _Queries(search_reads.TextQueries):
    """The search path's reads (:class:`~ragindex.store.search_reads.SearchQueries`) on the store's connection."""

    def __init__(self, store: SqliteSearchStore) -> None:
        super().__init__(search_reads.SearchTexts(lambda name: f'"{name}"', "?"))
        self._store_read = store._read

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        return self._store_read(sql, params)


@contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise StoreError(f"truth store operation failed: {exc}", backend="sqlite") from exc


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _sql_value(value: Any) -> Any:
    """A value as SQLAlchemy keeps it in SQLite: JSON and timestamps as text, booleans as 0/1, enums as text."""
    if isinstance(value, Mapping):
        return json.dumps(dict(value))
    if isinstance(value, datetime):
        return value.strftime(_TIMESTAMP)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        return str(value)  # a state enum as its text
    return value
