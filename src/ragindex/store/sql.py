"""The SQL truth store (SQLAlchemy Core): SQLite by default; MySQL/MariaDB and PostgreSQL through the same code.

Every state change is a compare-and-set ``UPDATE ... WHERE <status> IN (...)``; the row
count tells whether it took. Dialect differences stay in this module.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from sqlalchemy import (
    Connection,
    Engine,
    Table,
    and_,
    bindparam,
    case,
    create_engine,
    delete,
    event,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.sql import Executable

from ragindex.errors import NotFoundError, StoreError, ValidationError
from ragindex.store import schema
from ragindex.store.migrations import apply_migrations
from ragindex.store.records import (
    ChunkDiff,
    ChunkRow,
    ChunkView,
    Claim,
    DocumentRow,
    IndexMeta,
    NewDocument,
    RunRow,
)
from ragindex.store.states import CLAIMABLE, IndexStatus, Lifecycle, RunStatus
from ragindex.types import ChunkDraft

_T = TypeVar("_T")
KINDS = ("dense", "bm25", "sparse")
_SQL_IN_BATCH = 500  # bound IN-lists (SQLite's variable limit, server packet sizes)
_DOC = schema.documents.c
_CH = schema.chunks.c
_RUN = schema.pipeline_runs.c


def utcnow() -> datetime:
    """Naive UTC now (all timestamps in the store are UTC)."""
    return datetime.now(UTC).replace(tzinfo=None)


def sha256_text(text: str) -> str:
    """Hex sha256 of a string's UTF-8 bytes (chunk content hashes, key columns)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _batches(items: Sequence[_T], size: int = _SQL_IN_BATCH) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _status_col(kind: str) -> Any:
    if kind not in KINDS:
        raise ValidationError("kind", f"unknown vector kind {kind!r}; valid: {', '.join(KINDS)}")
    return _CH[f"{kind}_status"]


def _claim_col(kind: str) -> Any:
    return _CH[f"{kind}_claim"]


class SqlTruthStore:
    """The truth store: documents, chunks and their state machine, pipeline runs, embedding cache, index metadata.

    Args:
        url: SQLAlchemy URL (``sqlite:///path``, ``mysql+pymysql://...``, ``postgresql+psycopg://...``).
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.dialect = url.split(":", 1)[0].split("+", 1)[0]
        try:
            self.engine = self._create_engine(url)
            apply_migrations(self.engine)
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot open the truth store at {self._safe_url()}: {exc}", backend=self.dialect) from exc

    def _safe_url(self) -> str:
        return self.url.split("@", 1)[-1] if "@" in self.url else self.url

    def _create_engine(self, url: str) -> Engine:
        if self.dialect == "sqlite":
            path = url.removeprefix("sqlite:///")
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            # pooled: a fresh SQLite connection (plus its pragmas) costs ~8 ms, a pooled one ~0.5 ms per transaction
            engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, pool_size=8)
            event.listen(engine, "connect", _sqlite_pragmas)
            return engine
        return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        try:
            with self.engine.begin() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise StoreError(f"truth store operation failed: {exc}", backend=self.dialect) from exc

    @contextmanager
    def _claim_tx(self) -> Iterator[Connection]:
        """A transaction for select-then-claim: the rows it selects stay claimable until it commits.

        SQLite takes its write lock up front (``BEGIN IMMEDIATE``, waiting up to the busy timeout), which
        serialises claimers; MySQL/MariaDB runs it at READ COMMITTED so that ``FOR UPDATE SKIP LOCKED``
        takes no gap locks (which would block or deadlock the other claimers' index updates).
        """
        try:
            with self.engine.connect() as conn:
                if self.engine.dialect.name in ("mysql", "mariadb"):
                    conn.execution_options(isolation_level="READ COMMITTED")
                with conn.begin():
                    if self.engine.dialect.name == "sqlite":
                        conn.exec_driver_sql("BEGIN IMMEDIATE")
                    yield conn
        except SQLAlchemyError as exc:
            raise StoreError(f"truth store operation failed: {exc}", backend=self.dialect) from exc

    def _supports_skip_locked(self) -> bool:
        dialect = self.engine.dialect
        version = dialect.server_version_info or ()
        if dialect.name == "postgresql":
            return True
        if dialect.name in ("mysql", "mariadb"):
            return version >= ((10, 6) if getattr(dialect, "is_mariadb", False) else (8, 0, 1))
        return False

    def close(self) -> None:
        """Release pooled connections."""
        self.engine.dispose()

    # ------------------------------------------------------------------ documents
    def file_hashes(self, user_id: int, set_id: int) -> dict[str, tuple[str, int]]:
        """file_uri -> (file hash, documents) of the ACTIVE documents of a set, in one query.

        Every document of a file must carry the same committed hash, else the file counts as
        changed (hash ""). The no-op check of an ingest is this one query plus hashing the files.
        """
        with self._tx() as conn:
            rows = conn.execute(
                select(_DOC.file_uri, _DOC.file_hash).where(
                    _DOC.user_id == user_id, _DOC.set_id == set_id, _DOC.lifecycle_status == Lifecycle.ACTIVE
                )
            ).all()
        state: dict[str, tuple[str, int]] = {}
        for file_uri, file_hash in rows:
            previous = state.get(file_uri)
            if previous is None:
                state[file_uri] = (file_hash, 1)
            else:
                state[file_uri] = (file_hash if previous[0] == file_hash else "", previous[1] + 1)
        return state

    def set_file_hash(self, doc_id: int, file_hash: str) -> None:
        """Move a document to a new file hash when its file changed but its own content did not."""
        with self._tx() as conn:
            conn.execute(update(schema.documents).where(_DOC.doc_id == doc_id).values(file_hash=file_hash))

    def documents_of_file(self, user_id: int, set_id: int, file_uri: str) -> list[DocumentRow]:
        """ACTIVE documents that came from ``file_uri`` (one for a plain file, many for a records file)."""
        key = sha256_text(file_uri)
        with self._tx() as conn:
            rows = conn.execute(
                select(schema.documents).where(
                    _DOC.user_id == user_id,
                    _DOC.set_id == set_id,
                    _DOC.file_key == key,
                    _DOC.lifecycle_status == Lifecycle.ACTIVE,
                )
            ).all()
        return [_doc_row(r._mapping) for r in rows]

    def upsert_document(self, doc: NewDocument, *, status: str = RunStatus.PROCESSING) -> int:
        """Record a document (revive it if it was REMOVED) and return its doc_id.

        The file and content hashes are committed later, by :meth:`replace_chunks`, in the same
        transaction as the chunks: a crash in between leaves the old hash, so a re-run re-parses.
        """
        now = utcnow()
        values = _document_values(doc, status, now)
        with self._tx() as conn:
            return _upsert_document(conn, doc, values, now)

    def stage_document(
        self,
        doc: NewDocument,
        *,
        drafts: Sequence[ChunkDraft],
        bucket_id: int,
        kinds: Iterable[str],
        job_id: str | None,
        chunking_ms: float,
    ) -> tuple[int, int, ChunkDiff]:
        """Record a document version, its chunks (diffed by content hash) and its run, in ONE transaction.

        This is the ingest's hot path: one round trip per changed document instead of five. The run is
        opened with its chunking stage SUCCESS and the index stages PENDING (SKIPPED when disabled).
        Returns (doc_id, run_id, diff).
        """
        enabled = set(kinds)
        now = utcnow()
        with self._tx() as conn:
            doc_id = _upsert_document(conn, doc, _document_values(doc, RunStatus.PROCESSING, now), now)
            diff = _replace_chunks(
                conn,
                doc_id,
                user_id=doc.user_id,
                set_id=doc.set_id,
                bucket_id=bucket_id,
                drafts=drafts,
                enabled=enabled,
                file_hash=doc.file_hash,
                content_hash=doc.content_hash,
                now=now,
            )
            run_id = _start_run(conn, doc_id, job_id=job_id, enabled=enabled, now=now)
            conn.execute(
                update(schema.pipeline_runs)
                .where(_RUN.run_id == run_id)
                .values(chunking_status=RunStatus.SUCCESS, chunking_ms=chunking_ms, chunk_count=len(drafts))
            )
        return doc_id, run_id, diff

    def record_failed_document(self, doc: NewDocument, error: str) -> int:
        """Record a document whose loading failed (status FAILED, error and file hash kept, no chunks)."""
        doc_id = self.upsert_document(doc, status=RunStatus.FAILED)
        with self._tx() as conn:
            conn.execute(
                update(schema.documents)
                .where(_DOC.doc_id == doc_id)
                .values(status=RunStatus.FAILED, error=error[:4000], file_hash=doc.file_hash, content_hash="")
            )
        return doc_id

    def set_document_status(self, doc_id: int, status: str, error: str | None = None) -> None:
        """Set a document's processing status (PROCESSING, SUCCESS, FAILED) and error."""
        with self._tx() as conn:
            conn.execute(
                update(schema.documents)
                .where(_DOC.doc_id == doc_id)
                .values(status=status, error=error, updated_at=utcnow())
            )

    def get_document(self, doc_id: int, *, user_id: int | None = None) -> DocumentRow:
        """A document by id (scoped to ``user_id`` when given); NotFoundError otherwise."""
        cond = [_DOC.doc_id == doc_id]
        if user_id is not None:
            cond.append(_DOC.user_id == user_id)
        with self._tx() as conn:
            row = conn.execute(select(schema.documents).where(*cond)).first()
        if row is None:
            raise NotFoundError(f"document {doc_id} not found", doc_id=doc_id)
        return _doc_row(row._mapping)

    def list_documents(
        self, *, user_id: int | None = None, set_id: int | None = None, include_removed: bool = False
    ) -> list[DocumentRow]:
        """Documents, optionally of one tenant/set, ordered by doc_id."""
        cond = []
        if user_id is not None:
            cond.append(_DOC.user_id == user_id)
        if set_id is not None:
            cond.append(_DOC.set_id == set_id)
        if not include_removed:
            cond.append(_DOC.lifecycle_status == Lifecycle.ACTIVE)
        with self._tx() as conn:
            rows = conn.execute(select(schema.documents).where(*cond).order_by(_DOC.doc_id)).all()
        return [_doc_row(r._mapping) for r in rows]

    def find_documents_under(self, user_id: int, set_id: int, prefix: str) -> list[DocumentRow]:
        """ACTIVE documents whose file lies under the directory or file ``prefix`` (a source sync's scope)."""
        rows = self.list_documents(user_id=user_id, set_id=set_id)
        base = prefix.rstrip("/")
        return [d for d in rows if d.file_uri == base or d.file_uri.startswith(base + "/")]

    # ------------------------------------------------------------------ chunks: write side
    def replace_chunks(
        self,
        doc_id: int,
        *,
        user_id: int,
        set_id: int,
        bucket_id: int,
        drafts: Sequence[ChunkDraft],
        kinds: Iterable[str],
        file_hash: str,
        content_hash: str,
    ) -> ChunkDiff:
        """Make ``drafts`` the ACTIVE chunks of a document, diffing by content hash in one transaction.

        A draft whose content hash matches an existing ACTIVE chunk keeps that chunk_id and its index
        statuses (only its position is updated); new content gets a new chunk_id with PENDING statuses
        for each enabled kind (NULL for disabled kinds); existing chunks with no match become REMOVED.
        """
        with self._tx() as conn:
            return _replace_chunks(
                conn,
                doc_id,
                user_id=user_id,
                set_id=set_id,
                bucket_id=bucket_id,
                drafts=drafts,
                enabled=set(kinds),
                file_hash=file_hash,
                content_hash=content_hash,
                now=utcnow(),
            )

    def remove_documents(self, doc_ids: Sequence[int]) -> list[str]:
        """Flip documents and their chunks to REMOVED at once; return the chunk ids that left search."""
        if not doc_ids:
            return []
        now = utcnow()
        with self._tx() as conn:
            ids = [
                r[0]
                for r in conn.execute(
                    select(_CH.chunk_id).where(_CH.doc_id.in_(doc_ids), _CH.lifecycle_status == Lifecycle.ACTIVE)
                )
            ]
            conn.execute(
                update(schema.chunks)
                .where(_CH.doc_id.in_(doc_ids), _CH.lifecycle_status == Lifecycle.ACTIVE)
                .values(lifecycle_status=Lifecycle.REMOVED, updated_at=now)
            )
            conn.execute(
                update(schema.documents)
                .where(_DOC.doc_id.in_(doc_ids))
                .values(lifecycle_status=Lifecycle.REMOVED, updated_at=now)
            )
        return ids

    def remove_chunks(self, chunk_ids: Sequence[str]) -> list[str]:
        """Flip chunks to REMOVED at once; return the ids that were ACTIVE."""
        now = utcnow()
        flipped: list[str] = []
        with self._tx() as conn:
            for part in _batches(list(chunk_ids)):
                flipped += [
                    r[0]
                    for r in conn.execute(
                        select(_CH.chunk_id).where(_CH.chunk_id.in_(part), _CH.lifecycle_status == Lifecycle.ACTIVE)
                    )
                ]
                conn.execute(
                    update(schema.chunks)
                    .where(_CH.chunk_id.in_(part), _CH.lifecycle_status == Lifecycle.ACTIVE)
                    .values(lifecycle_status=Lifecycle.REMOVED, updated_at=now)
                )
        return flipped

    def update_chunk_content(self, chunk_id: str, content: str, kinds: Iterable[str]) -> bool:
        """Replace a chunk's content; if it changed, every enabled kind goes back to PENDING. Return changed."""
        new_hash = sha256_text(content)
        with self._tx() as conn:
            row = conn.execute(select(_CH.content_hash, _CH.lifecycle_status).where(_CH.chunk_id == chunk_id)).first()
            if row is None or row[1] != Lifecycle.ACTIVE:
                raise NotFoundError(f"chunk {chunk_id} not found", chunk_id=chunk_id)
            if row[0] == new_hash:
                return False
            conn.execute(
                update(schema.chunks)
                .where(_CH.chunk_id == chunk_id)
                .values(
                    content=content,
                    content_hash=new_hash,
                    attempts=0,
                    last_error=None,
                    updated_at=utcnow(),
                    **{f"{k}_status": IndexStatus.PENDING for k in kinds},
                    **{f"{k}_claim": None for k in kinds},
                )
            )
        return True

    def update_chunk_metadata(self, chunk_id: str, metadata: Mapping[str, Any]) -> None:
        """Merge ``metadata`` into a chunk's metadata (no re-embedding)."""
        with self._tx() as conn:
            row = conn.execute(
                select(_CH.metadata).where(_CH.chunk_id == chunk_id, _CH.lifecycle_status == Lifecycle.ACTIVE)
            ).first()
            if row is None:
                raise NotFoundError(f"chunk {chunk_id} not found", chunk_id=chunk_id)
            merged = {**(row[0] or {}), **metadata}
            conn.execute(
                update(schema.chunks).where(_CH.chunk_id == chunk_id).values(metadata=merged, updated_at=utcnow())
            )

    # ------------------------------------------------------------------ chunks: state machine
    def pending_chunks(
        self,
        kind: str,
        *,
        doc_ids: Sequence[int] | None = None,
        chunk_ids: Sequence[str] | None = None,
        user_id: int | None = None,
        set_id: int | None = None,
        statuses: Sequence[str] = CLAIMABLE,
        max_attempts: int | None = None,
        limit: int | None = None,
    ) -> list[ChunkRow]:
        """ACTIVE chunks whose ``kind`` copy is in ``statuses`` (PENDING/FAILED), in document order.

        bm25 and sparse copies live on the dense point, so they are only offered once dense is SUCCESS.
        """
        cond = _claimable(kind, statuses, max_attempts)
        if doc_ids is not None:
            cond.append(_CH.doc_id.in_(list(doc_ids)))
        if chunk_ids is not None:
            cond.append(_CH.chunk_id.in_(list(chunk_ids)))
        if user_id is not None:
            cond.append(_CH.user_id == user_id)
        if set_id is not None:
            cond.append(_CH.set_id == set_id)
        query = select(schema.chunks).where(*cond).order_by(_CH.doc_id, _CH.chunk_index)
        if limit is not None:
            query = query.limit(limit)
        with self._tx() as conn:
            return [_chunk_row(r._mapping) for r in conn.execute(query)]

    def claim(self, kind: str, chunk_ids: Sequence[str], *, allowed: Sequence[str] = CLAIMABLE) -> Claim:
        """Claim chunks for ``kind`` with one compare-and-set UPDATE; return what this caller now owns.

        Only rows in ``allowed`` (PENDING, FAILED) move to INDEXING, so a SUCCESS row is never pulled
        back. A dense claim also resets the other enabled kinds to PENDING, because the dense write
        replaces the whole point (and with it the bm25/sparse vectors).
        """
        token = uuid.uuid4().hex
        _status_col(kind)  # validate the kind even when chunk_ids is empty
        with self._tx() as conn:
            claimed = _claim_rows(conn, kind, token, chunk_ids, allowed)
        return Claim(kind=kind, token=token, chunk_ids=tuple(claimed), requested=len(chunk_ids))

    def claim_next(self, kind: str, limit: int, *, max_attempts: int | None = None) -> Claim:
        """Select up to ``limit`` claimable chunks and claim them in one transaction (a work queue's pop).

        Unlike :meth:`pending_chunks` followed by :meth:`claim`, concurrent workers do not race for
        the same rows: PostgreSQL and MySQL 8 / MariaDB 10.6+ select with ``FOR UPDATE SKIP LOCKED``
        (rows another claimer is taking are skipped), SQLite holds its write lock for the whole
        transaction. The claim is therefore complete (``requested`` is the number selected). Rows come
        in document order, except on MySQL/MariaDB, where sorting would lock every candidate row.

        An empty claim means that nothing is claimable except rows that concurrent claimers are taking
        right now (they move to INDEXING when those transactions commit).

        Args:
            kind: The vector kind (dense, bm25, sparse).
            limit: Most chunks to claim (>= 1).
            max_attempts: Skip FAILED chunks that failed this many times (PENDING ones are always taken).
        """
        if limit < 1:
            raise ValidationError("limit", f"must be >= 1, got {limit}")
        token = uuid.uuid4().hex
        query = select(_CH.chunk_id).where(*_claimable(kind, CLAIMABLE, max_attempts)).limit(limit)
        mysql = self.engine.dialect.name in ("mysql", "mariadb")
        if not mysql:
            query = query.order_by(_CH.doc_id, _CH.chunk_index)
        if self._supports_skip_locked():
            query = query.with_for_update(skip_locked=True)
        elif mysql:
            query = query.with_for_update()
        with self._claim_tx() as conn:
            ids = [r[0] for r in conn.execute(query)]
            claimed = _claim_rows(conn, kind, token, ids, CLAIMABLE) if ids else []
        return Claim(kind=kind, token=token, chunk_ids=tuple(claimed), requested=len(ids))

    def mark_success(self, claim: Claim, chunk_ids: Sequence[str] | None = None) -> int:
        """INDEXING -> SUCCESS for chunks still held by ``claim``; return how many moved."""
        return self._finish(claim, chunk_ids, IndexStatus.SUCCESS, None)

    def mark_failed(self, claim: Claim, chunk_ids: Sequence[str], error: str) -> int:
        """INDEXING -> FAILED (attempts + 1, last_error) for chunks still held by ``claim``."""
        return self._finish(claim, chunk_ids, IndexStatus.FAILED, error)

    def _finish(self, claim: Claim, chunk_ids: Sequence[str] | None, target: IndexStatus, error: str | None) -> int:
        ids = list(claim.chunk_ids if chunk_ids is None else chunk_ids)
        status = _status_col(claim.kind)
        values: dict[str, Any] = {status.key: target, f"{claim.kind}_claim": None, "updated_at": utcnow()}
        if target == IndexStatus.FAILED:
            values.update(attempts=_CH.attempts + 1, last_error=(error or "")[:4000])
        else:
            values.update(attempts=0, last_error=None)
        moved = 0
        with self._tx() as conn:
            for part in _batches(ids):
                moved += conn.execute(
                    update(schema.chunks)
                    .where(
                        _CH.chunk_id.in_(part), status == IndexStatus.INDEXING, _claim_col(claim.kind) == claim.token
                    )
                    .values(**values)
                ).rowcount
        return moved

    def release_stale(
        self, kind: str, older_than_seconds: float, *, limit: int | None = None, max_attempts: int | None = None
    ) -> list[str]:
        """INDEXING claims older than the stale timeout go back to PENDING; return their ids.

        A stale claim means its worker died holding it, so it counts as an attempt: a chunk that kills
        every worker that encodes it reaches ``max_attempts`` and goes to FAILED, where automatic
        repair stops retrying it (an explicit reindex still can).
        """
        status = _status_col(kind)
        cutoff = utcnow() - timedelta(seconds=older_than_seconds)
        target: Any = IndexStatus.PENDING
        if max_attempts is not None:
            target = case((_CH.attempts + 1 >= max_attempts, IndexStatus.FAILED), else_=IndexStatus.PENDING)
        with self._tx() as conn:
            query = select(_CH.chunk_id).where(status == IndexStatus.INDEXING, _CH.claimed_at < cutoff)
            ids = [r[0] for r in conn.execute(query.limit(limit) if limit else query)]
            for part in _batches(ids):
                conn.execute(
                    update(schema.chunks)
                    .where(_CH.chunk_id.in_(part), status == IndexStatus.INDEXING, _CH.claimed_at < cutoff)
                    .values(
                        {
                            status.key: target,
                            f"{kind}_claim": None,
                            "attempts": _CH.attempts + 1,
                            "last_error": f"{kind} claim went stale (its worker died or hung)",
                        }
                    )
                )
        return ids

    def reset_status(self, chunk_ids: Sequence[str], kinds: Iterable[str], *, from_statuses: Sequence[str]) -> int:
        """Move the given kinds of ACTIVE chunks from ``from_statuses`` back to PENDING (repair, explicit reindex)."""
        moved = 0
        with self._tx() as conn:
            for kind in kinds:
                status = _status_col(kind)
                for part in _batches(list(chunk_ids)):
                    moved += conn.execute(
                        update(schema.chunks)
                        .where(
                            _CH.chunk_id.in_(part),
                            status.in_([str(s) for s in from_statuses]),
                            _CH.lifecycle_status == Lifecycle.ACTIVE,
                        )
                        .values({status.key: IndexStatus.PENDING, f"{kind}_claim": None, "attempts": 0})
                    ).rowcount
        return moved

    def removed_unpurged(self, *, limit: int | None = None) -> list[ChunkRow]:
        """REMOVED chunks whose index copies are not yet confirmed purged."""
        query = select(schema.chunks).where(_CH.lifecycle_status == Lifecycle.REMOVED, _CH.purged_at.is_(None))
        with self._tx() as conn:
            return [_chunk_row(r._mapping) for r in conn.execute(query.limit(limit) if limit else query)]

    def mark_purged(self, chunk_ids: Sequence[str]) -> None:
        """Record that the index copies of REMOVED chunks are gone."""
        now = utcnow()
        with self._tx() as conn:
            for part in _batches(list(chunk_ids)):
                conn.execute(
                    update(schema.chunks)
                    .where(_CH.chunk_id.in_(part), _CH.lifecycle_status == Lifecycle.REMOVED)
                    .values(purged_at=now)
                )

    # ------------------------------------------------------------------ chunks: read side
    def get_chunks(self, chunk_ids: Sequence[str]) -> list[ChunkRow]:
        """Chunks by id, in any lifecycle, in the order of ``chunk_ids`` (missing ids are skipped)."""
        found: dict[str, ChunkRow] = {}
        with self._tx() as conn:
            for part in _batches(list(chunk_ids)):
                for r in conn.execute(select(schema.chunks).where(_CH.chunk_id.in_(part))):
                    found[r.chunk_id] = _chunk_row(r._mapping)
        return [found[c] for c in chunk_ids if c in found]

    def backfill(self, chunk_ids: Sequence[str]) -> dict[str, ChunkView]:
        """ACTIVE chunks (joined with their document) by id; REMOVED or unknown ids are absent (no ghosts)."""
        views: dict[str, ChunkView] = {}
        if not chunk_ids:
            return views
        query = select(schema.chunks, _DOC.source_uri, _DOC.filename, _DOC.metadata.label("doc_metadata")).join(
            schema.documents, _DOC.doc_id == _CH.doc_id
        )
        with self._tx() as conn:
            for part in _batches(list(chunk_ids)):
                rows = conn.execute(
                    query.where(
                        _CH.chunk_id.in_(part),
                        _CH.lifecycle_status == Lifecycle.ACTIVE,
                        _DOC.lifecycle_status == Lifecycle.ACTIVE,
                    )
                )
                for r in rows:
                    m = r._mapping
                    views[m["chunk_id"]] = ChunkView(
                        chunk=_chunk_row(m),
                        source_uri=m["source_uri"],
                        filename=m["filename"],
                        doc_metadata=m["doc_metadata"] or {},
                    )
        return views

    def chunks_of_document(self, doc_id: int, *, include_removed: bool = False) -> list[ChunkRow]:
        """A document's chunks in order."""
        cond = [_CH.doc_id == doc_id]
        if not include_removed:
            cond.append(_CH.lifecycle_status == Lifecycle.ACTIVE)
        with self._tx() as conn:
            return [
                _chunk_row(r._mapping)
                for r in conn.execute(select(schema.chunks).where(*cond).order_by(_CH.chunk_index))
            ]

    def expected_points(self, bucket_id: int) -> dict[str, dict[str, str | None]]:
        """chunk_id -> {kind: status} of every ACTIVE chunk routed to ``bucket_id``."""
        with self._tx() as conn:
            rows = conn.execute(
                select(_CH.chunk_id, _CH.dense_status, _CH.bm25_status, _CH.sparse_status).where(
                    _CH.bucket_id == bucket_id, _CH.lifecycle_status == Lifecycle.ACTIVE
                )
            ).all()
        return {r[0]: {"dense": r[1], "bm25": r[2], "sparse": r[3]} for r in rows}

    def lifecycle_of(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        """chunk_id -> lifecycle status (ids unknown to the store are absent)."""
        out: dict[str, str] = {}
        with self._tx() as conn:
            for part in _batches(list(chunk_ids)):
                out.update(
                    {
                        r[0]: r[1]
                        for r in conn.execute(select(_CH.chunk_id, _CH.lifecycle_status).where(_CH.chunk_id.in_(part)))
                    }
                )
        return out

    def buckets_in_use(self) -> list[int]:
        """Bucket ids that hold any chunk."""
        with self._tx() as conn:
            return sorted(r[0] for r in conn.execute(select(_CH.bucket_id).distinct()))

    def status_counts(self) -> dict[str, Any]:
        """Documents and chunks per status, per (user_id, set_id)."""
        sets: dict[tuple[int, int], dict[str, Any]] = {}

        def entry(user_id: int, set_id: int) -> dict[str, Any]:
            return sets.setdefault(
                (user_id, set_id),
                {"user_id": user_id, "set_id": set_id, "documents": {}, "chunks": {k: {} for k in KINDS}},
            )

        with self._tx() as conn:
            for user_id, set_id, lifecycle, status, n in conn.execute(
                select(_DOC.user_id, _DOC.set_id, _DOC.lifecycle_status, _DOC.status, func.count()).group_by(
                    _DOC.user_id, _DOC.set_id, _DOC.lifecycle_status, _DOC.status
                )
            ):
                label = status if lifecycle == Lifecycle.ACTIVE else Lifecycle.REMOVED
                docs = entry(user_id, set_id)["documents"]
                docs[label] = docs.get(label, 0) + n
            for kind in KINDS:
                status = _status_col(kind)
                for user_id, set_id, lifecycle, value, n in conn.execute(
                    select(_CH.user_id, _CH.set_id, _CH.lifecycle_status, status, func.count()).group_by(
                        _CH.user_id, _CH.set_id, _CH.lifecycle_status, status
                    )
                ):
                    if value is None:
                        continue
                    label = value if lifecycle == Lifecycle.ACTIVE else Lifecycle.REMOVED
                    counts = entry(user_id, set_id)["chunks"][kind]
                    counts[label] = counts.get(label, 0) + n
        return {"sets": [sets[k] for k in sorted(sets)]}

    # ------------------------------------------------------------------ pipeline runs
    def start_run(self, doc_id: int, *, job_id: str | None = None, sparse: bool = False, bm25: bool = True) -> int:
        """Open a pipeline run for a document; every stage PENDING (SKIPPED for disabled kinds)."""
        enabled = {"dense", *(["bm25"] if bm25 else []), *(["sparse"] if sparse else [])}
        with self._tx() as conn:
            return _start_run(conn, doc_id, job_id=job_id, enabled=enabled, now=utcnow())

    def enable_kinds(self, kinds: Iterable[str]) -> int:
        """Give every ACTIVE chunk a PENDING copy of each enabled kind it lacks (NULL status: kind enabled later).

        Returns how many chunk statuses moved; the next ingest or repair writes those copies.
        """
        moved = 0
        with self._tx() as conn:
            for kind in kinds:
                status = _status_col(kind)
                moved += conn.execute(
                    update(schema.chunks)
                    .where(status.is_(None), _CH.lifecycle_status == Lifecycle.ACTIVE)
                    .values({status.key: IndexStatus.PENDING})
                ).rowcount
        return moved

    def index_outcomes(self, doc_ids: Sequence[int], kinds: Sequence[str]) -> dict[int, dict[str, str | None]]:
        """Per document: for each kind, None if every ACTIVE chunk is SUCCESS, else the first error seen.

        One query per 500 documents; the ingest settles thousands of runs with it.
        """
        out: dict[int, dict[str, str | None]] = {d: dict.fromkeys(kinds) for d in doc_ids}
        cols = [_status_col(k) for k in kinds]
        with self._tx() as conn:
            for part in _batches(list(doc_ids)):
                rows = conn.execute(
                    select(_CH.doc_id, _CH.last_error, *cols).where(
                        _CH.doc_id.in_(part), _CH.lifecycle_status == Lifecycle.ACTIVE
                    )
                )
                for doc_id, last_error, *statuses in rows:
                    for kind, status in zip(kinds, statuses, strict=True):
                        if status not in (None, IndexStatus.SUCCESS) and out[doc_id][kind] is None:
                            out[doc_id][kind] = last_error or f"{kind} copy is {status}"
        return out

    def settle_runs(self, outcomes: Sequence[Mapping[str, Any]]) -> None:
        """Close many runs and set their documents' status in one transaction.

        Each outcome: run_id, doc_id, status, failed_stage, error, total_ms and ``stages``
        (stage name -> (status, duration_ms)).
        """
        if not outcomes:
            return
        now = utcnow()
        with self._tx() as conn:
            for item in outcomes:
                values: dict[str, Any] = {
                    "status": item["status"],
                    "failed_stage": item["failed_stage"],
                    "recover_from_stage": item["failed_stage"],
                    "error": (item["error"] or "")[:4000] or None,
                    "total_ms": item["total_ms"],
                    "finished_at": now,
                }
                for stage, (status, duration) in item["stages"].items():
                    values[f"{stage}_status"] = status
                    values[f"{stage}_ms"] = duration
                conn.execute(update(schema.pipeline_runs).where(_RUN.run_id == item["run_id"]).values(**values))
            conn.execute(
                update(schema.documents)
                .where(_DOC.doc_id == bindparam("b_doc_id"))
                .values(status=bindparam("b_status"), error=bindparam("b_error"), updated_at=now),
                [
                    {"b_doc_id": i["doc_id"], "b_status": i["status"], "b_error": (i["error"] or "")[:4000] or None}
                    for i in outcomes
                ],
            )

    def set_stage(
        self, run_id: int, stage: str, status: str, *, duration_ms: float | None = None, chunk_count: int | None = None
    ) -> None:
        """Record one stage's status (and duration) of a run."""
        name = stage.lower()
        values: dict[str, Any] = {f"{name}_status": status}
        if duration_ms is not None:
            values[f"{name}_ms"] = duration_ms
        if chunk_count is not None:
            values["chunk_count"] = chunk_count
        with self._tx() as conn:
            conn.execute(update(schema.pipeline_runs).where(_RUN.run_id == run_id).values(**values))

    def finish_run(
        self,
        run_id: int,
        status: str,
        *,
        total_ms: float,
        failed_stage: str | None = None,
        recover_from_stage: str | None = None,
        error: str | None = None,
    ) -> None:
        """Close a run as SUCCESS or FAILED (with the failed stage and where to resume)."""
        with self._tx() as conn:
            conn.execute(
                update(schema.pipeline_runs)
                .where(_RUN.run_id == run_id)
                .values(
                    status=status,
                    total_ms=total_ms,
                    failed_stage=failed_stage,
                    recover_from_stage=recover_from_stage,
                    error=error[:4000] if error else None,
                    finished_at=utcnow(),
                )
            )

    def runs(self, *, doc_id: int | None = None, job_id: str | None = None, status: str | None = None) -> list[RunRow]:
        """Pipeline runs, newest first."""
        cond = []
        if doc_id is not None:
            cond.append(_RUN.doc_id == doc_id)
        if job_id is not None:
            cond.append(_RUN.job_id == job_id)
        if status is not None:
            cond.append(_RUN.status == status)
        with self._tx() as conn:
            rows = conn.execute(select(schema.pipeline_runs).where(*cond).order_by(_RUN.run_id.desc())).all()
        return [_run_row(r._mapping) for r in rows]

    def latest_runs(self, status: str | None = None) -> list[RunRow]:
        """The newest run of every document (optionally only those with ``status``)."""
        with self._tx() as conn:
            newest = select(func.max(_RUN.run_id)).group_by(_RUN.doc_id).scalar_subquery()
            query = select(schema.pipeline_runs).where(_RUN.run_id.in_(newest))
            if status is not None:
                query = query.where(_RUN.status == status)
            return [_run_row(r._mapping) for r in conn.execute(query.order_by(_RUN.doc_id))]

    # ------------------------------------------------------------------ embedding cache
    def cached_vectors(self, model_key: str, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """content_hash -> float32 vector for the hashes cached under ``model_key``."""
        out: dict[str, np.ndarray] = {}
        t = schema.embedding_cache.c
        with self._tx() as conn:
            for part in _batches(sorted(set(content_hashes))):
                for content_hash, dim, blob in conn.execute(
                    select(t.content_hash, t.dim, t.vector).where(t.model_key == model_key, t.content_hash.in_(part))
                ):
                    vector = np.frombuffer(blob, dtype=np.float32)
                    if vector.shape[0] == dim:
                        out[content_hash] = vector
        return out

    def cache_vectors(self, model_key: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Store vectors under (model_key, content_hash); existing entries are left as they are."""
        if not vectors:
            return
        t = schema.embedding_cache.c
        now = utcnow()
        with self._tx() as conn:
            present: set[str] = set()
            keys = list(vectors)
            for part in _batches(keys):
                present.update(
                    r[0]
                    for r in conn.execute(
                        select(t.content_hash).where(t.model_key == model_key, t.content_hash.in_(part))
                    )
                )
            rows = [
                {
                    "model_key": model_key,
                    "content_hash": h,
                    "dim": int(v.shape[0]),
                    "vector": np.ascontiguousarray(v, dtype=np.float32).tobytes(),
                    "created_at": now,
                }
                for h, v in sorted(vectors.items())  # one key order for all writers (fewer lock waits)
                if h not in present
            ]
            if rows:
                # another worker may cache the same content between the select and this insert
                conn.execute(_insert_ignoring_duplicates(conn, schema.embedding_cache), rows)

    # ------------------------------------------------------------------ index metadata
    def get_index_meta(self, collection: str) -> IndexMeta | None:
        """Metadata of one collection, or None."""
        with self._tx() as conn:
            row = conn.execute(select(schema.index_meta).where(schema.index_meta.c.collection == collection)).first()
        return _meta_row(row._mapping) if row else None

    def list_index_meta(self) -> list[IndexMeta]:
        """Every collection's metadata."""
        with self._tx() as conn:
            return [_meta_row(r._mapping) for r in conn.execute(select(schema.index_meta))]

    def put_index_meta(self, meta: IndexMeta) -> None:
        """Insert or replace a collection's metadata."""
        now = utcnow()
        values = {
            "backend": meta.backend,
            "state": meta.state,
            "dense_fingerprint": meta.dense_fingerprint,
            "dense_dim": meta.dense_dim,
            "sparse_model": meta.sparse_model,
            "bm25_config": dict(meta.bm25_config) if meta.bm25_config is not None else None,
            "chunker_config": dict(meta.chunker_config) if meta.chunker_config is not None else None,
            "updated_at": now,
        }
        t = schema.index_meta
        with self._tx() as conn:
            if conn.execute(select(t.c.collection).where(t.c.collection == meta.collection)).first():
                conn.execute(update(t).where(t.c.collection == meta.collection).values(**values))
            else:
                conn.execute(insert(t).values(collection=meta.collection, created_at=now, **values))

    def set_active_collection(self, collection: str) -> None:
        """Make ``collection`` the one reads use, retiring the previous active one, in one transaction."""
        t = schema.index_meta
        with self._tx() as conn:
            conn.execute(update(t).where(t.c.state == "ACTIVE").values(state="RETIRED", updated_at=utcnow()))
            conn.execute(update(t).where(t.c.collection == collection).values(state="ACTIVE", updated_at=utcnow()))

    def delete_index_meta(self, collection: str) -> None:
        """Forget a dropped collection."""
        with self._tx() as conn:
            conn.execute(delete(schema.index_meta).where(schema.index_meta.c.collection == collection))

    def chunk_count_by_status(self, kind: str) -> dict[str, int]:
        """ACTIVE chunk counts per status of ``kind`` (metrics, tests)."""
        status = _status_col(kind)
        with self._tx() as conn:
            rows = conn.execute(
                select(status, func.count()).where(_CH.lifecycle_status == Lifecycle.ACTIVE).group_by(status)
            ).all()
        return {str(s): int(n) for s, n in rows if s is not None}

    def all_active_chunk_ids(self) -> list[str]:
        """Ids of every ACTIVE chunk (verification)."""
        with self._tx() as conn:
            return [r[0] for r in conn.execute(select(_CH.chunk_id).where(_CH.lifecycle_status == Lifecycle.ACTIVE))]

    def chunks_needing_work(self, kinds: Iterable[str]) -> int:
        """How many ACTIVE chunks have any of ``kinds`` not yet SUCCESS."""
        cond = [and_(_status_col(k).is_not(None), _status_col(k) != IndexStatus.SUCCESS) for k in kinds]
        with self._tx() as conn:
            return int(
                conn.execute(
                    select(func.count()).where(_CH.lifecycle_status == Lifecycle.ACTIVE, or_(*cond))
                ).scalar_one()
            )

    # ------------------------------------------------------------------ repair and reindex helpers
    def stale_claims(self, kind: str, older_than_seconds: float, *, limit: int | None = None) -> list[str]:
        """Ids that :meth:`release_stale` would release now (read-only: repair's dry run)."""
        status = _status_col(kind)
        cutoff = utcnow() - timedelta(seconds=older_than_seconds)
        query = select(_CH.chunk_id).where(status == IndexStatus.INDEXING, _CH.claimed_at < cutoff)
        with self._tx() as conn:
            return [r[0] for r in conn.execute(query.limit(limit) if limit else query)]

    def chunk_ids_updated_since(self, since: datetime) -> list[str]:
        """Ids of ACTIVE chunks whose row changed at or after ``since`` (naive UTC): a reindex's catch-up pass."""
        query = select(_CH.chunk_id).where(_CH.lifecycle_status == Lifecycle.ACTIVE, _CH.updated_at >= since)
        with self._tx() as conn:
            return [r[0] for r in conn.execute(query)]

    def index_meta_created_at(self, collection: str) -> datetime | None:
        """When a collection's metadata was first recorded (a reindex build's start), or None."""
        t = schema.index_meta.c
        with self._tx() as conn:
            row = conn.execute(select(t.created_at).where(t.collection == collection)).first()
        return row[0] if row else None

    # ------------------------------------------------------------------ service: tenant-scoped reads
    def get_tenant_chunk(self, chunk_id: str, *, user_id: int) -> ChunkRow:
        """An ACTIVE chunk of ``user_id``; NotFoundError for unknown, deleted or another tenant's ids alike."""
        with self._tx() as conn:
            row = conn.execute(
                select(schema.chunks).where(
                    _CH.chunk_id == chunk_id, _CH.user_id == user_id, _CH.lifecycle_status == Lifecycle.ACTIVE
                )
            ).first()
        if row is None:
            raise NotFoundError(f"chunk {chunk_id} not found", chunk_id=chunk_id)
        return _chunk_row(row._mapping)

    # ------------------------------------------------------------------ service: jobs
    def create_job(
        self, job_id: str, *, user_id: int, set_id: int, kind: str, status: str, files: Sequence[str]
    ) -> None:
        """Record a new job of a tenant (files are the paths the job will read)."""
        with self._tx() as conn:
            conn.execute(
                insert(schema.jobs).values(
                    job_id=job_id,
                    user_id=user_id,
                    set_id=set_id,
                    kind=kind,
                    status=status,
                    files=list(files),
                    created_at=utcnow(),
                )
            )

    def set_job_status(
        self,
        job_id: str,
        status: str,
        *,
        started: bool = False,
        finished: bool = False,
        report: Mapping[str, Any] | None = None,
        error: str | None = None,
    ) -> None:
        """Move a job to ``status``, stamping its start or end, with its report and error."""
        values: dict[str, Any] = {"status": status, "error": error[:4000] if error else None}
        if started:
            values["started_at"] = utcnow()
        if finished:
            values["finished_at"] = utcnow()
        if report is not None:
            values["report"] = dict(report)
        with self._tx() as conn:
            conn.execute(update(schema.jobs).where(schema.jobs.c.job_id == job_id).values(**values))

    def get_job(self, job_id: str, *, user_id: int | None = None) -> JobRow:
        """A job by id (scoped to ``user_id`` when given); NotFoundError otherwise."""
        t = schema.jobs.c
        cond = [t.job_id == job_id]
        if user_id is not None:
            cond.append(t.user_id == user_id)
        with self._tx() as conn:
            row = conn.execute(select(schema.jobs).where(*cond)).first()
        if row is None:
            raise NotFoundError(f"job {job_id} not found", job_id=job_id)
        return _job_row(row._mapping)

    def jobs_with_status(self, statuses: Sequence[str]) -> list[JobRow]:
        """Jobs in any of ``statuses``, oldest first (a restarted service re-queues unfinished ones)."""
        t = schema.jobs.c
        with self._tx() as conn:
            rows = conn.execute(
                select(schema.jobs).where(t.status.in_(list(statuses))).order_by(t.created_at, t.job_id)
            ).all()
        return [_job_row(r._mapping) for r in rows]

    # ------------------------------------------------------------------ service: API keys
    def create_api_key(
        self, *, key_id: str, key_hash: str, prefix: str, user_id: int, admin: bool, name: str | None = None
    ) -> None:
        """Record an API key by its sha256 (the key itself is never stored)."""
        with self._tx() as conn:
            conn.execute(
                insert(schema.api_keys).values(
                    key_id=key_id,
                    key_hash=key_hash,
                    prefix=prefix,
                    user_id=user_id,
                    is_admin=1 if admin else 0,
                    name=name,
                    created_at=utcnow(),
                )
            )

    def api_key_by_hash(self, key_hash: str) -> ApiKeyRow | None:
        """The un-revoked key with this sha256, or None."""
        t = schema.api_keys.c
        with self._tx() as conn:
            row = conn.execute(select(schema.api_keys).where(t.key_hash == key_hash, t.revoked_at.is_(None))).first()
        return _api_key_row(row._mapping) if row else None

    def list_api_keys(self, *, user_id: int | None = None) -> list[ApiKeyRow]:
        """Every key (revoked ones too), oldest first; no secrets are stored to list."""
        t = schema.api_keys.c
        query = select(schema.api_keys).order_by(t.created_at, t.key_id)
        if user_id is not None:
            query = query.where(t.user_id == user_id)
        with self._tx() as conn:
            return [_api_key_row(r._mapping) for r in conn.execute(query)]

    def revoke_api_key(self, key_id: str) -> bool:
        """Revoke a key; False when no un-revoked key has this id."""
        t = schema.api_keys.c
        with self._tx() as conn:
            result = conn.execute(
                update(schema.api_keys).where(t.key_id == key_id, t.revoked_at.is_(None)).values(revoked_at=utcnow())
            )
        return bool(result.rowcount)


def _insert_ignoring_duplicates(conn: Connection, table: Table) -> Executable:
    """INSERT that skips rows whose primary key exists (ON CONFLICT DO NOTHING, or a no-op update on MySQL)."""
    name = conn.dialect.name
    if name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing()
    if name == "sqlite":
        return sqlite.insert(table).on_conflict_do_nothing()
    if name in ("mysql", "mariadb"):
        first_key = table.primary_key.columns.values()[0]
        return mysql.insert(table).on_duplicate_key_update({first_key.name: first_key})
    return insert(table)


def _claimable(kind: str, statuses: Sequence[str], max_attempts: int | None) -> list[Any]:
    """Conditions of an ACTIVE chunk whose ``kind`` copy may be claimed (bm25/sparse need dense SUCCESS)."""
    status = _status_col(kind)
    cond = [status.in_([str(s) for s in statuses]), _CH.lifecycle_status == Lifecycle.ACTIVE]
    if kind != "dense":
        cond.append(_CH.dense_status == IndexStatus.SUCCESS)
    if max_attempts is not None:
        cond.append(or_(status == IndexStatus.PENDING, _CH.attempts < max_attempts))
    return cond


def _claim_rows(conn: Connection, kind: str, token: str, chunk_ids: Sequence[str], allowed: Sequence[str]) -> list[str]:
    """The compare-and-set UPDATE of a claim; return the ids that now carry ``token``."""
    status = _status_col(kind)
    values: dict[str, Any] = {status.key: IndexStatus.INDEXING, f"{kind}_claim": token, "claimed_at": utcnow()}
    if kind == "dense":
        for other in ("bm25", "sparse"):
            col = _status_col(other)
            values[col.key] = case((col.is_(None), None), else_=IndexStatus.PENDING)
            values[f"{other}_claim"] = None
    extra = [] if kind == "dense" else [_CH.dense_status == IndexStatus.SUCCESS]
    claimed: list[str] = []
    for part in _batches(list(chunk_ids)):
        result = conn.execute(
            update(schema.chunks)
            .where(
                _CH.chunk_id.in_(part),
                status.in_([str(s) for s in allowed]),
                _CH.lifecycle_status == Lifecycle.ACTIVE,
                *extra,
            )
            .values(**values)
        )
        if result.rowcount == len(part):
            claimed += part
        elif result.rowcount:
            claimed += [
                r[0]
                for r in conn.execute(select(_CH.chunk_id).where(_CH.chunk_id.in_(part), _claim_col(kind) == token))
            ]
    return claimed


def _document_values(doc: NewDocument, status: str, now: datetime) -> dict[str, Any]:
    return {
        "source_uri": doc.source_uri,
        "file_uri": doc.file_uri,
        "file_key": sha256_text(doc.file_uri),
        "filename": doc.filename[:512],
        "size": doc.size,
        "parser": doc.parser,
        "metadata": dict(doc.metadata),
        "lifecycle_status": Lifecycle.ACTIVE,
        "status": status,
        "error": None,
        "updated_at": now,
    }


def _upsert_document(conn: Connection, doc: NewDocument, values: Mapping[str, Any], now: datetime) -> int:
    key = sha256_text(doc.source_uri)
    existing = conn.execute(
        select(_DOC.doc_id).where(_DOC.user_id == doc.user_id, _DOC.set_id == doc.set_id, _DOC.source_key == key)
    ).first()
    if existing:
        conn.execute(update(schema.documents).where(_DOC.doc_id == existing[0]).values(**values))
        return int(existing[0])
    result = conn.execute(
        insert(schema.documents).values(
            user_id=doc.user_id,
            set_id=doc.set_id,
            source_key=key,
            file_hash="",  # no committed hash until the chunks are written: a crash before means re-parse
            content_hash="",
            chunk_count=0,
            created_at=now,
            **values,
        )
    )
    return _new_id(result.inserted_primary_key)


def _replace_chunks(
    conn: Connection,
    doc_id: int,
    *,
    user_id: int,
    set_id: int,
    bucket_id: int,
    drafts: Sequence[ChunkDraft],
    enabled: set[str],
    file_hash: str,
    content_hash: str,
    now: datetime,
) -> ChunkDiff:
    existing = conn.execute(
        select(_CH.chunk_id, _CH.content_hash)
        .where(_CH.doc_id == doc_id, _CH.lifecycle_status == Lifecycle.ACTIVE)
        .order_by(_CH.chunk_index)
    ).all()
    by_hash: dict[str, list[str]] = defaultdict(list)
    for chunk_id, existing_hash in existing:
        by_hash[existing_hash].append(chunk_id)
    kept: list[dict[str, Any]] = []
    added: list[dict[str, Any]] = []
    for draft in drafts:
        chunk_hash = sha256_text(draft.text)
        position = {
            "chunk_index": draft.index,
            "start_line": draft.start_line,
            "end_line": draft.end_line,
            "page": draft.page,
            "section": draft.section,
            "token_count": draft.token_count,
            "updated_at": now,
        }
        if by_hash.get(chunk_hash):
            kept.append({"b_chunk_id": by_hash[chunk_hash].pop(0), **position})
            continue
        added.append(
            {
                "chunk_id": str(uuid.uuid4()),
                "doc_id": doc_id,
                "user_id": user_id,
                "set_id": set_id,
                "bucket_id": bucket_id,
                "chunk_type": draft.chunk_type,
                "content": draft.text,
                "content_hash": chunk_hash,
                "metadata": {},
                "lifecycle_status": Lifecycle.ACTIVE,
                "attempts": 0,
                "created_at": now,
                **{f"{k}_status": (IndexStatus.PENDING if k in enabled else None) for k in KINDS},
                **position,
            }
        )
    removed = [cid for ids in by_hash.values() for cid in ids]
    if kept:
        conn.execute(
            update(schema.chunks)
            .where(_CH.chunk_id == bindparam("b_chunk_id"))
            .values({k: bindparam(k) for k in kept[0] if k != "b_chunk_id"}),
            kept,
        )
    if added:
        conn.execute(insert(schema.chunks), added)
    for part in _batches(removed):
        conn.execute(
            update(schema.chunks)
            .where(_CH.chunk_id.in_(part))
            .values(lifecycle_status=Lifecycle.REMOVED, updated_at=now)
        )
    conn.execute(
        update(schema.documents)
        .where(_DOC.doc_id == doc_id)
        .values(chunk_count=len(drafts), file_hash=file_hash, content_hash=content_hash, updated_at=now)
    )
    return ChunkDiff(
        kept=tuple(k["b_chunk_id"] for k in kept), added=tuple(a["chunk_id"] for a in added), removed=tuple(removed)
    )


def _start_run(conn: Connection, doc_id: int, *, job_id: str | None, enabled: set[str], now: datetime) -> int:
    result = conn.execute(
        insert(schema.pipeline_runs).values(
            doc_id=doc_id,
            job_id=job_id,
            status=RunStatus.PROCESSING,
            chunking_status=RunStatus.PENDING,
            dense_status=RunStatus.PENDING,
            bm25_status=RunStatus.PENDING if "bm25" in enabled else RunStatus.SKIPPED,
            sparse_status=RunStatus.PENDING if "sparse" in enabled else RunStatus.SKIPPED,
            chunk_count=0,
            started_at=now,
        )
    )
    return _new_id(result.inserted_primary_key)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _doc_row(m: Mapping[Any, Any]) -> DocumentRow:
    return DocumentRow(
        doc_id=int(m["doc_id"]),
        user_id=int(m["user_id"]),
        set_id=int(m["set_id"]),
        source_uri=m["source_uri"],
        file_uri=m["file_uri"],
        file_hash=m["file_hash"],
        content_hash=m["content_hash"],
        filename=m["filename"],
        size=int(m["size"]),
        parser=m["parser"],
        lifecycle_status=m["lifecycle_status"],
        status=m["status"],
        error=m["error"],
        chunk_count=int(m["chunk_count"]),
        metadata=m["metadata"] or {},
        updated_at=m["updated_at"],
    )


def _chunk_row(m: Mapping[Any, Any]) -> ChunkRow:
    return ChunkRow(
        chunk_id=m["chunk_id"],
        doc_id=int(m["doc_id"]),
        user_id=int(m["user_id"]),
        set_id=int(m["set_id"]),
        bucket_id=int(m["bucket_id"]),
        chunk_index=int(m["chunk_index"]),
        content=m["content"],
        content_hash=m["content_hash"],
        start_line=m["start_line"],
        end_line=m["end_line"],
        page=m["page"],
        section=m["section"],
        token_count=m["token_count"],
        lifecycle_status=m["lifecycle_status"],
        dense_status=m["dense_status"],
        bm25_status=m["bm25_status"],
        sparse_status=m["sparse_status"],
        attempts=int(m["attempts"]),
        last_error=m["last_error"],
        metadata=m["metadata"] or {},
    )


def _run_row(m: Mapping[Any, Any]) -> RunRow:
    stages = ("chunking", "dense", "bm25", "sparse")
    return RunRow(
        run_id=int(m["run_id"]),
        doc_id=int(m["doc_id"]),
        job_id=m["job_id"],
        status=m["status"],
        stages={s: m[f"{s}_status"] for s in stages},
        durations_ms={s: m[f"{s}_ms"] for s in stages},
        failed_stage=m["failed_stage"],
        recover_from_stage=m["recover_from_stage"],
        chunk_count=int(m["chunk_count"]),
        error=m["error"],
        started_at=m["started_at"],
        finished_at=m["finished_at"],
    )


def _meta_row(m: Mapping[Any, Any]) -> IndexMeta:
    return IndexMeta(
        collection=m["collection"],
        backend=m["backend"],
        state=m["state"],
        dense_fingerprint=m["dense_fingerprint"],
        dense_dim=m["dense_dim"],
        sparse_model=m["sparse_model"],
        bm25_config=m["bm25_config"],
        chunker_config=m["chunker_config"],
    )


def _new_id(primary_key: Any) -> int:
    if not primary_key:
        raise StoreError("the database did not return the new row's primary key")
    return int(primary_key[0])


@dataclass(frozen=True, slots=True)
class JobRow:
    """A job of the HTTP service (an upload's ingest)."""

    job_id: str
    user_id: int
    set_id: int
    kind: str
    status: str
    files: tuple[str, ...]
    report: Mapping[str, Any] | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True, slots=True)
class ApiKeyRow:
    """An API key of the HTTP service: its id, display prefix, tenant and role (never the key)."""

    key_id: str
    key_hash: str
    prefix: str
    user_id: int
    admin: bool
    name: str | None
    created_at: datetime
    revoked_at: datetime | None


def _job_row(m: Mapping[Any, Any]) -> JobRow:
    return JobRow(
        job_id=m["job_id"],
        user_id=int(m["user_id"]),
        set_id=int(m["set_id"]),
        kind=m["kind"],
        status=m["status"],
        files=tuple(m["files"] or ()),
        report=m["report"],
        error=m["error"],
        created_at=m["created_at"],
        started_at=m["started_at"],
        finished_at=m["finished_at"],
    )


def _api_key_row(m: Mapping[Any, Any]) -> ApiKeyRow:
    return ApiKeyRow(
        key_id=m["key_id"],
        key_hash=m["key_hash"],
        prefix=m["prefix"],
        user_id=int(m["user_id"]),
        admin=bool(m["is_admin"]),
        name=m["name"],
        created_at=m["created_at"],
        revoked_at=m["revoked_at"],
    )
