"""Chunks of the SQL truth store, write side: the content diff, removal, edits, enabling a vector kind."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select, update

from ragindex.clock import utcnow
from ragindex.errors import NotFoundError
from ragindex.hashing import sha256_text
from ragindex.store import schema
from ragindex.store.records import ChunkDiff
from ragindex.store.sql.core import CH, DOC, KINDS, SqlCore, batches, status_col
from ragindex.store.states import IndexStatus, Lifecycle
from ragindex.types import ChunkDraft


class SqlChunkWrites(SqlCore):
    """The write half of the chunks role (:class:`~ragindex.store.protocol.ChunkStore`)."""

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
        The document's file and content hashes are committed in the same transaction.
        """
        with self._tx() as conn:
            return replace_chunk_rows(
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

    def remove_chunks(self, chunk_ids: Sequence[str]) -> list[str]:
        """Flip chunks to REMOVED at once; return the ids that were ACTIVE."""
        now = utcnow()
        flipped: list[str] = []
        with self._tx() as conn:
            for part in batches(list(chunk_ids)):
                active = [CH.chunk_id.in_(part), CH.lifecycle_status == Lifecycle.ACTIVE]
                flipped += [r[0] for r in conn.execute(select(CH.chunk_id).where(*active))]
                conn.execute(
                    update(schema.chunks).where(*active).values(lifecycle_status=Lifecycle.REMOVED, updated_at=now)
                )
        return flipped

    def update_chunk_content(self, chunk_id: str, content: str, kinds: Iterable[str]) -> bool:
        """Replace a chunk's content; if it changed, every enabled kind goes back to PENDING. Return changed."""
        new_hash = sha256_text(content)
        with self._tx() as conn:
            row = conn.execute(select(CH.content_hash, CH.lifecycle_status).where(CH.chunk_id == chunk_id)).first()
            if row is None or row[1] != Lifecycle.ACTIVE:
                raise NotFoundError(f"chunk {chunk_id} not found", chunk_id=chunk_id)
            if row[0] == new_hash:
                return False
            conn.execute(
                update(schema.chunks)
                .where(CH.chunk_id == chunk_id)
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
                select(CH.metadata).where(CH.chunk_id == chunk_id, CH.lifecycle_status == Lifecycle.ACTIVE)
            ).first()
            if row is None:
                raise NotFoundError(f"chunk {chunk_id} not found", chunk_id=chunk_id)
            merged = {**(row[0] or {}), **metadata}
            conn.execute(
                update(schema.chunks).where(CH.chunk_id == chunk_id).values(metadata=merged, updated_at=utcnow())
            )

    def enable_kinds(self, kinds: Iterable[str]) -> int:
        """Give every ACTIVE chunk a PENDING copy of each enabled kind it lacks (NULL status: kind enabled later).

        Returns how many chunk statuses moved; the next ingest or repair writes those copies.
        """
        moved = 0
        with self._tx() as conn:
            for kind in kinds:
                status = status_col(kind)
                moved += conn.execute(
                    update(schema.chunks)
                    .where(status.is_(None), CH.lifecycle_status == Lifecycle.ACTIVE)
                    .values({status.key: IndexStatus.PENDING})
                ).rowcount
        return moved


def replace_chunk_rows(
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
    """The chunk diff of :meth:`SqlChunkWrites.replace_chunks` inside the caller's transaction."""
    existing = conn.execute(
        select(CH.chunk_id, CH.content_hash)
        .where(CH.doc_id == doc_id, CH.lifecycle_status == Lifecycle.ACTIVE)
        .order_by(CH.chunk_index)
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
            .where(CH.chunk_id == bindparam("b_chunk_id"))
            .values({k: bindparam(k) for k in kept[0] if k != "b_chunk_id"}),
            kept,
        )
    if added:
        conn.execute(insert(schema.chunks), added)
    for part in batches(removed):
        conn.execute(
            update(schema.chunks)
            .where(CH.chunk_id.in_(part))
            .values(lifecycle_status=Lifecycle.REMOVED, updated_at=now)
        )
    conn.execute(
        update(schema.documents)
        .where(DOC.doc_id == doc_id)
        .values(chunk_count=len(drafts), file_hash=file_hash, content_hash=content_hash, updated_at=now)
    )
    return ChunkDiff(
        kept=tuple(k["b_chunk_id"] for k in kept), added=tuple(a["chunk_id"] for a in added), removed=tuple(removed)
    )
