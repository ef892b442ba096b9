"""Documents of the SQL truth store: file hashes (the no-op check), versions, status, removal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Unpack

from sqlalchemy import Connection, insert, select, update

from ragindex.clock import utcnow
from ragindex.errors import NotFoundError
from ragindex.hashing import canonical_json, sha256_text
from ragindex.store import schema
from ragindex.store.options import StagedRun
from ragindex.store.records import ChunkDiff, ChunkLayout, DocumentFilter, DocumentRow, NewDocument
from ragindex.store.sql.chunks import replace_chunk_rows
from ragindex.store.sql.core import CH, DOC, RUN, SqlCore, batches, clip_error, given, new_id
from ragindex.store.sql.parsed import delete_parsed, parsed_versions, write_parsed
from ragindex.store.sql.rows import doc_row
from ragindex.store.sql.runs import insert_run
from ragindex.store.states import Lifecycle, RunStatus
from ragindex.types import Document


class SqlDocuments(SqlCore):
    """The documents role (:class:`~ragindex.store.protocol.DocumentStore`)."""

    def file_hashes(self, user_id: int, set_id: int) -> dict[str, tuple[str, int]]:
        """file_uri -> (file hash, documents) of the ACTIVE documents of a set, in one query.

        Every document of a file must carry the same committed hash and not be FAILED, else the file
        counts as changed (hash ""): it is parsed again. The no-op check of an ingest is this one query
        plus hashing the files.
        """
        with self._tx() as conn:
            rows = conn.execute(
                select(DOC.file_uri, DOC.file_hash, DOC.status).where(
                    DOC.user_id == user_id, DOC.set_id == set_id, DOC.lifecycle_status == Lifecycle.ACTIVE
                )
            ).all()
        state: dict[str, tuple[str, int]] = {}
        for file_uri, committed, status in rows:
            file_hash = "" if status == RunStatus.FAILED else committed
            previous = state.get(file_uri)
            if previous is None:
                state[file_uri] = (file_hash, 1)
            else:
                state[file_uri] = (file_hash if previous[0] == file_hash else "", previous[1] + 1)
        return state

    def files_chunked_otherwise(self, user_id: int, set_id: int, fingerprint: str) -> set[str]:
        """file_uris of a set's ACTIVE documents chunked with another chunking fingerprint (to re-chunk)."""
        with self._tx() as conn:
            rows = conn.execute(
                select(DOC.file_uri)
                .where(
                    DOC.user_id == user_id,
                    DOC.set_id == set_id,
                    DOC.lifecycle_status == Lifecycle.ACTIVE,
                    DOC.chunking_fingerprint != fingerprint,
                )
                .distinct()
            )
            return {r[0] for r in rows}

    def set_file_hashes(self, file_hash: str, documents: Mapping[int, Document | None]) -> None:
        """Move documents to a new file hash when their file changed but their own content did not.

        ``documents``: doc_id -> the document as its file parses now (or None); recorded as its parsed artifact if
        it has none of this text yet (a document ingested before artifacts were kept gets one when its file
        changes). One UPDATE and one artifact lookup per :data:`~ragindex.store.search_reads.SQL_IN_BATCH` documents,
        each batch its own transaction: a records file with one changed record among thousands moves the others
        in a few statements (a crash between batches leaves the old hash on the rest: the file is parsed again).
        """
        for part in batches(list(documents)):
            with self._tx() as conn:
                conn.execute(update(schema.documents).where(DOC.doc_id.in_(part)).values(file_hash=file_hash))
                texts = {
                    doc_id: (sha256_text(parsed.text), parsed)
                    for doc_id in part
                    if (parsed := documents[doc_id]) is not None
                }
                present = parsed_versions(conn, list(texts))
                now = utcnow()
                for doc_id, (content_hash, parsed) in texts.items():
                    if (doc_id, content_hash) not in present:
                        write_parsed(conn, doc_id, content_hash=content_hash, parsed=parsed, now=now)

    def documents_of_file(self, user_id: int, set_id: int, file_uri: str) -> list[DocumentRow]:
        """ACTIVE documents that came from ``file_uri`` (one for a plain file, many for a records file)."""
        key = sha256_text(file_uri)
        with self._tx() as conn:
            rows = conn.execute(
                select(schema.documents).where(
                    DOC.user_id == user_id,
                    DOC.set_id == set_id,
                    DOC.file_key == key,
                    DOC.lifecycle_status == Lifecycle.ACTIVE,
                )
            ).all()
        return [doc_row(r._mapping) for r in rows]

    def upsert_document(self, doc: NewDocument, *, status: str = RunStatus.PROCESSING) -> int:
        """Record a document (revive it if it was REMOVED) and return its doc_id.

        The file and content hashes are committed later, with the chunks, in one transaction
        (:meth:`stage_document`): a crash in between leaves the old hash, so a re-run re-parses.
        """
        now = utcnow()
        with self._tx() as conn:
            return _upsert_document(conn, doc, _document_values(doc, status, now), now)[0]

    def stage_document(
        self, doc: NewDocument, layout: ChunkLayout, **run: Unpack[StagedRun]
    ) -> tuple[int, int, ChunkDiff]:
        """Record a document version, its chunks (diffed by content hash) and its run, in ONE transaction.

        This is the ingest's hot path: one round trip per changed document instead of five. The run is
        opened with its loading and chunking stages SUCCESS and the index stages PENDING (SKIPPED when disabled).
        ``parsed``: the loaded document, kept as the version's parsed artifact (replacing the previous version's).
        Returns (doc_id, run_id, diff).
        """
        now = utcnow()
        with self._tx() as conn:
            before = _recorded_metadata(conn, doc)
            doc_id, created = _upsert_document(conn, doc, _document_values(doc, RunStatus.PROCESSING, now), now)
            requeue = before is not None and canonical_json(before) != canonical_json(doc.metadata)
            diff = replace_chunk_rows(conn, doc_id, doc, layout, now, requeue=requeue)
            if (parsed := run.get("parsed")) is not None:
                # a new doc_id has no artifact to replace: two statements instead of four on the hot path
                write_parsed(conn, doc_id, content_hash=doc.content_hash, parsed=parsed, now=now, replace=not created)
            run_id = insert_run(
                conn, doc_id, job_id=run["job_id"], enabled=set(layout.kinds), now=now, owner_id=self.owner_id
            )
            conn.execute(
                update(schema.pipeline_runs)
                .where(RUN.run_id == run_id)
                .values(
                    loading_status=RunStatus.SUCCESS,
                    loading_ms=run.get("loading_ms"),
                    chunking_status=RunStatus.SUCCESS,
                    chunking_ms=run["chunking_ms"],
                    chunk_count=len(layout.drafts),
                )
            )
        return doc_id, run_id, diff

    def record_failed_document(self, doc: NewDocument, error: str) -> int:
        """Record a document whose loading failed (status FAILED, error and file hash kept, no chunks)."""
        now = utcnow()
        values = {
            **_document_values(doc, RunStatus.FAILED, now),
            "error": clip_error(error),
            "file_hash": doc.file_hash,
            "content_hash": "",
        }
        with self._tx() as conn:
            return _upsert_document(conn, doc, values, now)[0]

    def set_document_status(self, doc_id: int, status: str, error: str | None = None) -> None:
        """Set a document's processing status (PROCESSING, SUCCESS, FAILED) and error."""
        with self._tx() as conn:
            conn.execute(
                update(schema.documents)
                .where(DOC.doc_id == doc_id)
                .values(status=status, error=error, updated_at=utcnow())
            )

    def get_document(self, doc_id: int, *, user_id: int | None = None) -> DocumentRow:
        """A document by id (scoped to ``user_id`` when given); NotFoundError otherwise."""
        query = select(schema.documents).where(DOC.doc_id == doc_id, *given((DOC.user_id, user_id)))
        with self._tx() as conn:
            row = conn.execute(query).first()
        if row is None:
            raise NotFoundError(f"document {doc_id} not found", doc_id=doc_id)
        return doc_row(row._mapping)

    def list_documents(
        self, *, user_id: int | None = None, set_id: int | None = None, include_removed: bool = False
    ) -> list[DocumentRow]:
        """Documents, optionally of one tenant/set, ordered by doc_id."""
        cond = _document_filter(user_id, set_id, include_removed=include_removed)
        with self._tx() as conn:
            rows = conn.execute(select(schema.documents).where(*cond).order_by(DOC.doc_id)).all()
        return [doc_row(r._mapping) for r in rows]

    def document_page(self, where: DocumentFilter, *, after: int = 0, limit: int = 100) -> list[DocumentRow]:
        """ACTIVE documents ``where`` selects after doc_id ``after``, by doc_id, at most ``limit``.

        Keyset pagination: a page starts after the last doc_id of the previous one, so documents added or
        removed meanwhile never shift a page, and every page costs one index range scan.
        """
        cond = _document_filter(where.user_id, where.set_id, include_removed=False)
        cond += [*given((DOC.status, where.status)), DOC.doc_id > after]
        query = select(schema.documents).where(*cond).order_by(DOC.doc_id).limit(limit)
        with self._tx() as conn:
            return [doc_row(r._mapping) for r in conn.execute(query)]

    def find_documents_under(self, user_id: int, set_id: int, prefix: str) -> list[DocumentRow]:
        """ACTIVE documents whose file lies under the directory or file ``prefix`` (a source sync's scope)."""
        rows = self.list_documents(user_id=user_id, set_id=set_id)
        base = prefix.rstrip("/")
        return [d for d in rows if d.file_uri == base or d.file_uri.startswith(base + "/")]

    def remove_documents(self, doc_ids: Sequence[int]) -> list[str]:
        """Flip documents and their chunks to REMOVED and drop their parsed artifacts, at once.

        Returns the chunk ids that left search.
        """
        if not doc_ids:
            return []
        now = utcnow()
        active = [CH.doc_id.in_(doc_ids), CH.lifecycle_status == Lifecycle.ACTIVE]
        with self._tx() as conn:
            ids = [r[0] for r in conn.execute(select(CH.chunk_id).where(*active))]
            conn.execute(
                update(schema.chunks).where(*active).values(lifecycle_status=Lifecycle.REMOVED, updated_at=now)
            )
            conn.execute(
                update(schema.documents)
                .where(DOC.doc_id.in_(doc_ids))
                .values(lifecycle_status=Lifecycle.REMOVED, updated_at=now)
            )
            delete_parsed(conn, doc_ids)
        return ids


def _document_filter(user_id: int | None, set_id: int | None, *, include_removed: bool) -> list[Any]:
    cond: list[Any] = given((DOC.user_id, user_id), (DOC.set_id, set_id))
    if not include_removed:
        cond.append(DOC.lifecycle_status == Lifecycle.ACTIVE)
    return cond


def _document_values(doc: NewDocument, status: str, now: datetime) -> dict[str, Any]:
    return {
        "source_uri": doc.source_uri,
        "file_uri": doc.file_uri,
        "file_key": sha256_text(doc.file_uri),
        "filename": doc.filename[:512],
        "size": doc.size,
        "parser": doc.parser,
        "chunking_fingerprint": doc.chunking_fingerprint,
        "metadata": dict(doc.metadata),
        "lifecycle_status": Lifecycle.ACTIVE,
        "status": status,
        "error": None,
        "updated_at": now,
    }


def _recorded_metadata(conn: Connection, doc: NewDocument) -> Mapping[str, Any] | None:
    """The metadata recorded for ``doc``'s source (None: not recorded, or REMOVED: it has no copies to rewrite)."""
    row = conn.execute(
        select(DOC.metadata).where(
            DOC.user_id == doc.user_id,
            DOC.set_id == doc.set_id,
            DOC.source_key == sha256_text(doc.source_uri),
            DOC.lifecycle_status == Lifecycle.ACTIVE,
        )
    ).first()
    return None if row is None else (row[0] or {})


def _upsert_document(conn: Connection, doc: NewDocument, values: Mapping[str, Any], now: datetime) -> tuple[int, bool]:
    """Update the document of ``doc``'s source, or insert it; return its doc_id and whether it was inserted now."""
    key = sha256_text(doc.source_uri)
    existing = conn.execute(
        select(DOC.doc_id).where(DOC.user_id == doc.user_id, DOC.set_id == doc.set_id, DOC.source_key == key)
    ).first()
    if existing:
        conn.execute(update(schema.documents).where(DOC.doc_id == existing[0]).values(**values))
        return int(existing[0]), False
    result = conn.execute(
        insert(schema.documents).values(
            user_id=doc.user_id,
            set_id=doc.set_id,
            source_key=key,
            chunk_count=0,
            created_at=now,
            # no committed hash until the chunks are written: a crash before means re-parse
            **{"file_hash": "", "content_hash": "", **values},
        )
    )
    return new_id(result.inserted_primary_key), True
