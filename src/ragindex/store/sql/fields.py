"""The metadata role of the SQL truth store: each set's field types, and documents looked up by key or id.

A field's type is fixed by the first value recorded in the set (:mod:`ragindex.metadata`). Two writers adding the same
new field at once collide on the primary key: the loser reads the winner's type, which is the one that counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError

from ragindex.clock import utcnow
from ragindex.hashing import sha256_text
from ragindex.store import schema
from ragindex.store.records import DocumentRow
from ragindex.store.sql.core import CH, KINDS, SqlCore, batches, status_col
from ragindex.store.sql.rows import doc_row
from ragindex.store.sql.runs import insert_run
from ragindex.store.states import IndexStatus, Lifecycle, RunStatus

F = schema.metadata_fields.c
DOC = schema.documents.c


class SqlMetadataFields(SqlCore):
    """Field types and key lookups (:class:`~ragindex.store.protocol.MetadataFieldStore`)."""

    def field_types(self, user_id: int, set_id: int) -> dict[str, str]:
        """Name -> type of every metadata field recorded in the set."""
        query = select(F.name, F.field_type).where(F.user_id == user_id, F.set_id == set_id)
        with self._tx() as conn:
            return {str(name): str(kind) for name, kind in conn.execute(query)}

    def add_field_types(self, user_id: int, set_id: int, types: Mapping[str, str]) -> dict[str, str]:
        """Record the fields of ``types`` the set does not have yet; return the set's types of those fields.

        A field recorded meanwhile by another writer keeps its type: the caller compares and refuses a mismatch.
        """
        known = self.field_types(user_id, set_id)
        for name, kind in types.items():
            if name in known:
                continue
            try:
                with self._tx() as conn:
                    conn.execute(
                        insert(schema.metadata_fields).values(
                            user_id=user_id, set_id=set_id, name=name, field_type=kind, created_at=utcnow()
                        )
                    )
                known[name] = kind
            except IntegrityError:  # recorded by a concurrent writer
                known = self.field_types(user_id, set_id)
        return {name: known[name] for name in types}

    def documents_by_key(self, user_id: int, set_id: int, keys: Sequence[str]) -> dict[str, DocumentRow]:
        """Key (``source_uri``) -> the ACTIVE document of the set with that key, for those that exist."""
        found: dict[str, DocumentRow] = {}
        by_hash = {sha256_text(key): key for key in keys}
        with self._tx() as conn:
            for part in batches(list(by_hash)):
                query = select(schema.documents).where(
                    DOC.user_id == user_id,
                    DOC.set_id == set_id,
                    DOC.source_key.in_(part),
                    DOC.lifecycle_status == Lifecycle.ACTIVE,
                )
                for row in conn.execute(query):
                    doc = doc_row(row._mapping)
                    found[doc.source_uri] = doc
        return found

    def document_metadata(self, doc_ids: Sequence[int]) -> dict[int, Mapping[str, Any]]:
        """doc_id -> metadata of those documents (what the indexer writes into the copies' payloads)."""
        out: dict[int, Mapping[str, Any]] = {}
        with self._tx() as conn:
            for part in batches(sorted(set(doc_ids))):
                for doc_id, meta in conn.execute(select(DOC.doc_id, DOC.metadata).where(DOC.doc_id.in_(part))):
                    out[int(doc_id)] = meta or {}
        return out

    def relabel_documents(
        self, changes: Sequence[tuple[int, Mapping[str, Any], str]], *, job_id: str | None, kinds: Sequence[str]
    ) -> dict[int, int]:
        """New metadata and file hash for documents, their copies back to PENDING and a run each, in one transaction.

        ``changes``: ``(doc_id, metadata, file_hash)`` of documents whose text and chunks are unchanged. Their rows
        stay as they are; only their copies' payloads are stale, so the indexer rewrites them (the dense vectors come
        from the embedding cache). Each document is PROCESSING with a run whose loading and chunking are SKIPPED,
        settled when its copies are written; a process killed before that leaves a run that ``repair`` settles, as
        it does a killed ingest's. Returns doc_id -> run_id.
        """
        if not changes:
            return {}
        now = utcnow()
        with self._tx() as conn:
            conn.execute(
                update(schema.documents)
                .where(DOC.doc_id == bindparam("b_doc_id"))
                .values(
                    metadata=bindparam("b_metadata"),
                    file_hash=bindparam("b_file_hash"),
                    status=RunStatus.PROCESSING,
                    error=None,
                    updated_at=now,
                ),
                [{"b_doc_id": d, "b_metadata": dict(m), "b_file_hash": h} for d, m, h in changes],
            )
            doc_ids = [d for d, _m, _h in changes]
            for part in batches(doc_ids):
                for kind in KINDS:
                    status = status_col(kind)
                    conn.execute(
                        update(schema.chunks)
                        .where(CH.doc_id.in_(part), CH.lifecycle_status == Lifecycle.ACTIVE, status.is_not(None))
                        .values({status.key: IndexStatus.PENDING, f"{kind}_claim": None, "attempts": 0})
                    )
            enabled = set(kinds)
            return {
                d: insert_run(conn, d, job_id=job_id, enabled=enabled, now=now, owner_id=self.owner_id, parsed=False)
                for d in doc_ids
            }
