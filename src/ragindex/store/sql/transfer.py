"""Moving rows out of and into the SQL truth store (``ragindex export`` / ``import``, see :mod:`ragindex.transfer`).

The export reads every table in one read-only transaction at a snapshot isolation level (a deferred ``BEGIN`` on
SQLite's WAL, ``REPEATABLE READ`` on PostgreSQL and InnoDB), so the archive is one point in time even while ``serve``
or ``watch`` write; rows stream through server-side cursors, never a whole table in memory. The import writes are
idempotent: documents are matched by their source key, chunks by their id (the index point id), so a rerun after a
crash at any point converges instead of duplicating.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import (
    JSON,
    Connection,
    DateTime,
    LargeBinary,
    Select,
    String,
    Table,
    Text,
    cast,
    delete,
    insert,
    select,
    type_coerce,
    update,
)
from sqlalchemy.exc import SQLAlchemyError

from ragindex.clock import utcnow
from ragindex.errors import StoreError
from ragindex.store import schema
from ragindex.store.records import SetDigest, TransferScope
from ragindex.store.sql.core import CH, DOC, SqlCore, batches, insert_ignoring_duplicates
from ragindex.store.states import CollectionState, IndexStatus, Lifecycle, RunStatus

_STREAM_ROWS = 2000  # rows a server-side cursor fetches at a time
_KIND_STATUS = ("dense_status", "bm25_status", "sparse_status")
_CLAIM_RESET = {
    "attempts": 0,
    "last_error": None,
    "claimed_at": None,
    "dense_claim": None,
    "bm25_claim": None,
    "sparse_claim": None,
    "purged_at": None,
}

TRANSFER_TABLES = (
    "metadata_fields",
    "documents",
    "parsed_documents",
    "parsed_parts",
    "chunks",
    "embedding_cache",
    "index_meta",
    "score_stats",
)
"""The tables an archive holds, in the order they are written and imported (a row's references come first)."""


def columns_of(table: str) -> list[str]:
    """The column names of ``table`` in the order the archive keeps a row's values."""
    return [c.name for c in schema.metadata.tables[table].columns]


def encode_value(value: Any) -> Any:
    """A column value as JSON can hold it (timestamps as ISO text, bytes as base64)."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def decoders(table: str, columns: Sequence[str]) -> list[Any]:
    """Per column of an archived row: a function turning the JSON value back into the column's value (or None)."""
    cols = schema.metadata.tables[table].c
    out: list[Any] = []
    for name in columns:
        kind = cols[name].type if name in cols else None
        python_type: Any = None
        if kind is not None:
            try:
                python_type = kind.python_type
            except NotImplementedError:
                python_type = None
        if isinstance(kind, LargeBinary) or python_type is bytes:
            out.append(_from_base64)
        elif python_type is datetime:
            out.append(_from_iso)
        else:
            out.append(None)
    return out


def _from_base64(value: Any) -> Any:
    return None if value is None else base64.b64decode(value)


def _from_iso(value: Any) -> Any:
    return None if value is None else datetime.fromisoformat(value)


class SqlSnapshot:
    """One read-only transaction over the truth store: every table of a scope, streamed, at one point in time."""

    def __init__(self, conn: Connection, scope: TransferScope) -> None:
        self._conn = conn
        self.scope = scope

    def _tenant(self, table: Any) -> list[Any]:
        cond = []
        if self.scope.user_id is not None:
            cond.append(table.c.user_id == self.scope.user_id)
        if self.scope.set_id is not None:
            cond.append(table.c.set_id == self.scope.set_id)
        return cond

    def _doc_ids(self) -> Select[Any]:
        return select(DOC.doc_id).where(DOC.lifecycle_status == Lifecycle.ACTIVE, *self._tenant(schema.documents))

    def fingerprints(self) -> list[str]:
        """Dense fingerprints of the ACTIVE and BUILDING collections (whose cached vectors the archive keeps)."""
        meta = schema.index_meta.c
        query = (
            select(meta.dense_fingerprint)
            .where(meta.state.in_((CollectionState.ACTIVE, CollectionState.BUILDING)))
            .distinct()
        )
        return sorted(str(r[0]) for r in self._conn.execute(query))

    def model_keys(self, fingerprints: Sequence[str]) -> list[str]:
        """Embedding-cache keys of ``fingerprints`` (a key is ``fingerprint|precision``)."""
        keys = [str(r[0]) for r in self._conn.execute(select(schema.embedding_cache.c.model_key).distinct())]
        return sorted(k for k in keys if k.rsplit("|", 1)[0] in fingerprints)

    def _raw_columns(self, table: Table) -> list[Any]:
        """``table``'s columns, JSON ones as their stored text (and SQLite's timestamps as theirs): nothing decoded.

        The archive writes a JSON column's text verbatim and a timestamp as ISO 8601 text, so decoding either into
        Python objects only to encode it again was most of an export's CPU.
        """
        dialect = self._conn.dialect.name
        out: list[Any] = []
        for column in table.columns:
            if isinstance(column.type, JSON):
                # psycopg parses json itself, whatever SQLAlchemy's type says: only a cast keeps the text
                out.append((cast if dialect == "postgresql" else type_coerce)(column, Text).label(column.name))
            elif dialect == "sqlite" and isinstance(column.type, DateTime):
                out.append(type_coerce(column, String).label(column.name))  # "YYYY-MM-DD HH:MM:SS.ffffff"
            else:
                out.append(column)
        return out

    def query(self, table: str, model_keys: Sequence[str] = ()) -> Select[Any] | None:
        """The SELECT of ``table``'s rows in scope (None: the table has none to take in this scope)."""
        t = schema.metadata.tables[table]
        base = select(*self._raw_columns(t))
        if table == "documents":
            return base.where(DOC.lifecycle_status == Lifecycle.ACTIVE, *self._tenant(t)).order_by(DOC.doc_id)
        if table == "chunks":
            return base.where(CH.lifecycle_status == Lifecycle.ACTIVE, *self._tenant(t))
        if table in ("parsed_documents", "parsed_parts"):
            return base.where(t.c.doc_id.in_(self._doc_ids()))
        if table == "metadata_fields":
            return base.where(*self._tenant(t))
        if table == "embedding_cache":
            if not model_keys:
                return None
            hashes = select(CH.content_hash).where(
                CH.lifecycle_status == Lifecycle.ACTIVE, *self._tenant(schema.chunks)
            )
            return base.where(t.c.model_key.in_(model_keys), t.c.content_hash.in_(hashes))
        if table == "index_meta":
            return base
        if table == "score_stats":
            return base if self.scope.everything else None
        raise StoreError(f"table {table!r} is not exported")

    def rows(self, table: str, model_keys: Sequence[str] = ()) -> Iterator[Sequence[Any]]:
        """``table``'s rows in scope, streamed, each in :func:`columns_of` order.

        A JSON column's value is its stored JSON text as an :class:`orjson.Fragment` (written verbatim, never
        decoded); a timestamp is a :class:`~datetime.datetime`, or on SQLite its stored ISO 8601 text.
        """
        query = self.query(table, model_keys)
        if query is None:
            return
        json_at = [i for i, c in enumerate(schema.metadata.tables[table].columns) if isinstance(c.type, JSON)]
        try:
            result = self._conn.execution_options(stream_results=True, yield_per=_STREAM_ROWS).execute(query)
            for part in result.partitions():
                if not json_at:
                    yield from part
                    continue
                for row in part:
                    values = list(row)
                    for i in json_at:
                        if isinstance(values[i], str):
                            values[i] = orjson.Fragment(values[i])
                    yield values
        except SQLAlchemyError as exc:
            raise StoreError(f"reading {table} for the export failed: {exc}") from exc


class SqlTransfer(SqlCore):
    """The transfer role (:class:`~ragindex.store.protocol.TransferStore`): snapshot reads and idempotent writes."""

    @contextmanager
    def snapshot(self, scope: TransferScope) -> Iterator[SqlSnapshot]:
        """A read-only transaction at one point in time, for an export of ``scope``."""
        try:
            with self.engine.connect() as conn:
                if self.engine.dialect.name == "sqlite":
                    with conn.begin():
                        conn.exec_driver_sql("BEGIN")  # pysqlite begins only before writes; WAL keeps this snapshot
                        yield SqlSnapshot(conn, scope)
                        return
                conn.execution_options(isolation_level="REPEATABLE READ")
                with conn.begin():
                    if self.engine.dialect.name == "postgresql":
                        conn.exec_driver_sql("SET TRANSACTION READ ONLY")
                    yield SqlSnapshot(conn, scope)
        except SQLAlchemyError as exc:
            raise StoreError(f"the export's snapshot failed: {exc}", backend=self.dialect) from exc

    # ------------------------------------------------------------------ checks before an import
    def set_digest(self, user_id: int, set_id: int) -> SetDigest:
        """What the set holds now (ACTIVE rows), as :meth:`SqlSnapshot`'s export of it would."""
        with self._tx() as conn:
            return set_digest(conn, user_id, set_id)

    def sets_with_documents(self) -> list[tuple[int, int]]:
        """Every (user_id, set_id) that has an ACTIVE document."""
        query = select(DOC.user_id, DOC.set_id).where(DOC.lifecycle_status == Lifecycle.ACTIVE).distinct()
        with self._tx() as conn:
            return sorted((int(u), int(s)) for u, s in conn.execute(query))

    def import_state(self, archive_id: str, user_id: int, set_id: int) -> str | None:
        """IMPORTING or DONE when archive ``archive_id`` was (being) imported into the set; None otherwise."""
        t = schema.imports.c
        query = select(t.state).where(t.archive_id == archive_id, t.user_id == user_id, t.set_id == set_id)
        with self._tx() as conn:
            row = conn.execute(query).first()
        return None if row is None else str(row[0])

    def set_import_state(self, archive_id: str, sets: Sequence[tuple[int, int]], state: str) -> None:
        """Record that archive ``archive_id`` is being imported (IMPORTING) or was imported (DONE) into ``sets``."""
        t = schema.imports
        now = utcnow()
        with self._tx() as conn:
            for user_id, set_id in sets:
                moved = conn.execute(
                    update(t)
                    .where(t.c.archive_id == archive_id, t.c.user_id == user_id, t.c.set_id == set_id)
                    .values(state=state, updated_at=now)
                ).rowcount
                if not moved:
                    conn.execute(
                        insert(t).values(
                            archive_id=archive_id,
                            user_id=user_id,
                            set_id=set_id,
                            state=state,
                            created_at=now,
                            updated_at=now,
                        )
                    )

    # ------------------------------------------------------------------ writes of an import
    def import_rows(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], doc_ids: dict[int, int]
    ) -> int:
        """Write one batch of archived ``rows`` of ``table``, idempotently; return how many rows changed.

        ``doc_ids`` maps the archive's doc ids to this store's: :meth:`import_rows` of ``documents`` fills it, the
        tables that reference a document read it. Chunks arrive with every index copy PENDING (the import rebuilds
        them); a chunk already here ACTIVE with the same content (an earlier run of the same import) is left as it is.
        """
        if not rows:
            return 0
        records = _records(table, columns, rows)
        with self._tx() as conn:
            if table == "documents":
                return _import_documents(conn, records, doc_ids)
            if table in ("parsed_documents", "parsed_parts"):
                return _import_parsed(conn, table, records, doc_ids)
            if table == "chunks":
                return _import_chunks(conn, records, doc_ids)
            if table in ("metadata_fields", "embedding_cache", "score_stats"):
                before = len(records)
                conn.execute(insert_ignoring_duplicates(conn, schema.metadata.tables[table]), records)
                return before
            raise StoreError(f"table {table!r} is not imported row by row")

    def cache_alias(self, source_key: str, target_key: str, content_hashes: Sequence[str]) -> int:
        """Copy cached vectors of ``content_hashes`` from ``source_key`` to ``target_key`` where missing.

        The same model under another precision (an archive of a bfloat16 deployment imported where float32 runs): the
        archived vectors are reused as they are, so nothing is embedded and the scores stay those of the archive.
        """
        c = schema.embedding_cache.c
        copied = 0
        with self._tx() as conn:
            for part in batches(list(content_hashes)):
                rows = conn.execute(
                    select(c.content_hash, c.dim, c.vector, c.created_at).where(
                        c.model_key == source_key, c.content_hash.in_(part)
                    )
                ).all()
                if rows:
                    values = [
                        {"model_key": target_key, "content_hash": h, "dim": d, "vector": v, "created_at": t}
                        for h, d, v, t in rows
                    ]
                    conn.execute(insert_ignoring_duplicates(conn, schema.embedding_cache), values)
                    copied += len(values)
        return copied

    def settle_imported_documents(self, doc_ids: Sequence[int]) -> int:
        """Mark ``doc_ids`` still PROCESSING SUCCESS, once the import indexed and verified their chunks.

        A document is recorded PROCESSING in the same transaction as its chunk rows, and marked SUCCESS once its
        index copies are written. An export taken while an ingest ran holds some documents in between: complete
        rows whose copies the import has just rebuilt. Left PROCESSING, they would be listed as in progress
        forever and parsed again by every ingest of their folder.
        """
        settled = 0
        with self._tx() as conn:
            for part in batches(list(doc_ids)):
                settled += conn.execute(
                    update(schema.documents)
                    .where(DOC.doc_id.in_(part), DOC.status == RunStatus.PROCESSING)
                    .values(status=RunStatus.SUCCESS, error=None)
                ).rowcount
        return settled


def set_digest(conn: Connection, user_id: int, set_id: int) -> SetDigest:
    """The :class:`SetDigest` of a set's ACTIVE documents and chunks, read on ``conn``."""
    digest = SetDigester()
    docs = select(DOC.source_key, DOC.content_hash).where(
        DOC.user_id == user_id, DOC.set_id == set_id, DOC.lifecycle_status == Lifecycle.ACTIVE
    )
    for source_key, content_hash in conn.execute(docs):
        digest.document(str(source_key), str(content_hash))
    chunks = select(CH.chunk_id, CH.content_hash).where(
        CH.user_id == user_id, CH.set_id == set_id, CH.lifecycle_status == Lifecycle.ACTIVE
    )
    for chunk_id, content_hash in conn.execute(chunks):
        digest.chunk(str(chunk_id), str(content_hash))
    return digest.result()


class SetDigester:
    """An order-independent digest of a set's rows (a sum of their sha256s), fed in whatever order they stream."""

    def __init__(self) -> None:
        self.documents = 0
        self.chunks = 0
        self._sum = 0

    def _add(self, line: str) -> None:
        self._sum = (self._sum + int.from_bytes(hashlib.sha256(line.encode("utf-8")).digest()[:16], "big")) % _MOD

    def document(self, source_key: str, content_hash: str) -> None:
        """Count a document (its key and content)."""
        self.documents += 1
        self._add(f"d {source_key} {content_hash}")

    def chunk(self, chunk_id: str, content_hash: str) -> None:
        """Count a chunk (its id, which is its index point id, and content)."""
        self.chunks += 1
        self._add(f"c {chunk_id} {content_hash}")

    def result(self) -> SetDigest:
        """The digest of what was fed."""
        return SetDigest(documents=self.documents, chunks=self.chunks, digest=f"{self._sum:032x}")


_MOD = 1 << 128


def _records(table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """Archived rows as column -> value dicts of this store's columns (an unknown column is left out)."""
    known = set(schema.metadata.tables[table].c.keys())
    decode = decoders(table, columns)
    keep = [(i, name, decode[i]) for i, name in enumerate(columns) if name in known]
    return [{name: (fn(row[i]) if fn is not None else row[i]) for i, name, fn in keep} for row in rows]


def _import_documents(conn: Connection, records: list[dict[str, Any]], doc_ids: dict[int, int]) -> int:
    """Documents by (user, set, source key): inserted, or an existing row (REMOVED, or half imported) updated."""
    by_key: dict[tuple[int, int, str], dict[str, Any]] = {
        (r["user_id"], r["set_id"], r["source_key"]): r for r in records
    }
    existing: dict[tuple[int, int, str], int] = {}
    for (user_id, set_id), keys in _group_by_set(by_key).items():
        for part in batches(keys):
            query = select(DOC.source_key, DOC.doc_id).where(
                DOC.user_id == user_id, DOC.set_id == set_id, DOC.source_key.in_(part)
            )
            existing.update({(user_id, set_id, str(k)): int(d) for k, d in conn.execute(query)})
    fresh = [{k: v for k, v in r.items() if k != "doc_id"} for key, r in by_key.items() if key not in existing]
    if fresh:
        conn.execute(insert(schema.documents), fresh)
    for key, doc_id in existing.items():
        values = {k: v for k, v in by_key[key].items() if k != "doc_id"}
        conn.execute(update(schema.documents).where(DOC.doc_id == doc_id).values(**values))
    for (user_id, set_id), keys in _group_by_set(by_key).items():
        for part in batches(keys):
            query = select(DOC.source_key, DOC.doc_id).where(
                DOC.user_id == user_id, DOC.set_id == set_id, DOC.source_key.in_(part)
            )
            for source_key, doc_id in conn.execute(query):
                doc_ids[int(by_key[(user_id, set_id, str(source_key))]["doc_id"])] = int(doc_id)
    return len(records)


def _group_by_set(by_key: Mapping[tuple[int, int, str], Any]) -> dict[tuple[int, int], list[str]]:
    groups: dict[tuple[int, int], list[str]] = {}
    for user_id, set_id, source_key in by_key:
        groups.setdefault((user_id, set_id), []).append(source_key)
    return groups


def _mapped(records: list[dict[str, Any]], doc_ids: Mapping[int, int], table: str) -> list[dict[str, Any]]:
    out = []
    for record in records:
        old = int(record["doc_id"])
        if old not in doc_ids:
            raise StoreError(f"archived {table} row of document {old}, which the archive's documents do not hold")
        out.append({**record, "doc_id": doc_ids[old]})
    return out


def _import_parsed(conn: Connection, table: str, records: list[dict[str, Any]], doc_ids: Mapping[int, int]) -> int:
    """Parsed artifacts: a document's header replaces whatever it had (its parts follow); parts are added."""
    rows = _mapped(records, doc_ids, table)
    if table == "parsed_documents":
        ids = [r["doc_id"] for r in rows]
        for part in batches(ids):
            conn.execute(delete(schema.parsed_parts).where(schema.parsed_parts.c.doc_id.in_(part)))
            conn.execute(delete(schema.parsed_documents).where(schema.parsed_documents.c.doc_id.in_(part)))
        conn.execute(insert(schema.parsed_documents), rows)
    else:
        conn.execute(insert_ignoring_duplicates(conn, schema.parsed_parts), rows)
    return len(rows)


def _import_chunks(conn: Connection, records: list[dict[str, Any]], doc_ids: Mapping[int, int]) -> int:
    """Chunks by id: new ones inserted PENDING; one here REMOVED or with other content rewritten PENDING."""
    rows = _mapped(records, doc_ids, "chunks")
    now = utcnow()
    for row in rows:
        row.update(_CLAIM_RESET)
        row["lifecycle_status"] = Lifecycle.ACTIVE
        row["updated_at"] = now
        for status in _KIND_STATUS:
            if row.get(status) is not None:
                row[status] = IndexStatus.PENDING
    present: dict[str, tuple[str, str, int]] = {}
    for part in batches([r["chunk_id"] for r in rows]):
        query = select(CH.chunk_id, CH.lifecycle_status, CH.content_hash, CH.doc_id).where(CH.chunk_id.in_(part))
        present.update({str(c): (str(lc), str(h), int(d)) for c, lc, h, d in conn.execute(query)})
    fresh = [r for r in rows if r["chunk_id"] not in present]
    if fresh:
        conn.execute(insert(schema.chunks), fresh)
    changed = len(fresh)
    for row in rows:
        found = present.get(row["chunk_id"])
        if found is None or found == (Lifecycle.ACTIVE, row["content_hash"], row["doc_id"]):
            continue
        values = {k: v for k, v in row.items() if k != "chunk_id"}
        conn.execute(update(schema.chunks).where(CH.chunk_id == row["chunk_id"]).values(**values))
        changed += 1
    return changed
