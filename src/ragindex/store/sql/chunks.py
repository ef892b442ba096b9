"""Chunks of the SQL truth store, write side: the content diff, removal, edits, enabling a vector kind."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, case, insert, select, update

from ragindex.clock import utcnow
from ragindex.errors import NotFoundError
from ragindex.hashing import sha256_text
from ragindex.store import schema
from ragindex.store.records import ChunkDiff, ChunkLayout, NewDocument, RowText, indexed_text
from ragindex.store.sql.core import CH, DOC, KINDS, SqlCore, batches, status_col
from ragindex.store.states import IndexStatus, Lifecycle
from ragindex.types import ChunkDraft, Unit


class SqlChunkWrites(SqlCore):
    """The write half of the chunks role (:class:`~ragindex.store.protocol.ChunkStore`)."""

    def replace_chunks(self, doc_id: int, doc: NewDocument, layout: ChunkLayout) -> ChunkDiff:
        """Make ``drafts`` the ACTIVE chunks of a document, diffing by content hash in one transaction.

        A draft whose content hash matches an existing ACTIVE chunk keeps that chunk_id and its index
        statuses (only its position is updated); new content gets a new chunk_id with PENDING statuses
        for each enabled kind (NULL for disabled kinds); existing chunks with no match become REMOVED.
        The document's file and content hashes (``doc``'s) are committed in the same transaction.
        """
        with self._tx() as conn:
            return replace_chunk_rows(conn, doc_id, doc, layout, utcnow())

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
        """Replace a chunk's content; if it changed, each of its kinds goes back to PENDING. Return changed."""
        with self._tx() as conn:
            query = select(CH.content_hash, CH.lifecycle_status, CH.context).where(CH.chunk_id == chunk_id)
            row = conn.execute(query).first()
            if row is None or row[1] != Lifecycle.ACTIVE:
                raise NotFoundError(f"chunk {chunk_id} not found", chunk_id=chunk_id)
            new_hash = sha256_text(indexed_text(content, row[2]))
            if row[0] == new_hash:
                return False
            conn.execute(
                update(schema.chunks)
                .where(CH.chunk_id == chunk_id)
                .values(
                    content=content,
                    content_hash=new_hash,
                    updated_at=utcnow(),
                    **_back_to_pending(kinds),
                )
            )
        return True

    def rewrite_rows(self, texts: Sequence[RowText], kinds: Iterable[str]) -> list[str] | None:
        """Give rows new content and context lines in one transaction, each only while its hash is as expected.

        A row whose indexed-text hash changes gets each of its own kinds among ``kinds`` (those not NULL) back to
        PENDING, with no claim and no attempts; a row whose hash stays is left as it is. Returns the ids whose hash
        changed; None, with nothing written, when a row's hash is no longer its ``expect_hash`` (a concurrent
        edit: read the rows again). Raises NotFoundError, with nothing written, for a row that is not ACTIVE.
        """
        wanted = list(kinds)
        changed: list[str] = []
        now = utcnow()
        try:
            with self._tx() as conn:
                for text in texts:
                    new_hash = text.content_hash
                    values: dict[str, Any] = {"content": text.content, "context": text.context}
                    if new_hash != text.expect_hash:
                        changed.append(text.chunk_id)
                        values.update(_back_to_pending(wanted), content_hash=new_hash, updated_at=now)
                    guard = (
                        CH.chunk_id == text.chunk_id,
                        CH.lifecycle_status == Lifecycle.ACTIVE,
                        CH.content_hash == text.expect_hash,
                    )
                    if conn.execute(update(schema.chunks).where(*guard).values(values)).rowcount != 1:
                        raise _Moved(text.chunk_id)  # rolls the transaction back
        except _Moved as moved:
            chunk_id = moved.args[0]
            with self._tx() as conn:
                lifecycle = conn.execute(select(CH.lifecycle_status).where(CH.chunk_id == chunk_id)).scalar()
            if lifecycle != Lifecycle.ACTIVE:
                raise NotFoundError(f"chunk {chunk_id} not found (or deleted)", chunk_id=chunk_id) from None
            return None
        return changed

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

    def enable_kinds(self, kinds: Iterable[str], *, unit: str | None = None) -> int:
        """Give every ACTIVE row (of ``unit``, when given) a PENDING copy of each kind it lacks (NULL status).

        A kind enabled after the first ingest gets its copies this way. Returns how many statuses moved; the next
        ingest or repair writes those copies.
        """
        moved = 0
        scope = [CH.lifecycle_status == Lifecycle.ACTIVE] + ([CH.unit == unit] if unit is not None else [])
        with self._tx() as conn:
            for kind in kinds:
                status = status_col(kind)
                moved += conn.execute(
                    update(schema.chunks).where(status.is_(None), *scope).values({status.key: IndexStatus.PENDING})
                ).rowcount
        return moved


class _Moved(Exception):
    """A row of :meth:`SqlChunkWrites.rewrite_rows` was not as expected (its id is the argument)."""


def _back_to_pending(kinds: Iterable[str]) -> dict[str, Any]:
    """The values that send a row's own kinds among ``kinds`` back to PENDING, unclaimed, with no attempts.

    A kind the row does not carry (NULL) stays NULL: a section carries no dense copy, a chunk no lexical one.
    """
    values: dict[str, Any] = {"attempts": 0, "last_error": None}
    for k in kinds:
        values[f"{k}_status"] = case((status_col(k).is_(None), None), else_=IndexStatus.PENDING)
        values[f"{k}_claim"] = None
    return values


def replace_chunk_rows(
    conn: Connection, doc_id: int, doc: NewDocument, layout: ChunkLayout, now: datetime, *, requeue: bool = False
) -> ChunkDiff:
    """The diff of :meth:`SqlChunkWrites.replace_chunks` inside the caller's transaction.

    Sections are diffed first (among the document's ACTIVE sections), so that each chunk row can point at its
    section's row; chunks are then diffed among its ACTIVE chunks. A row is matched by the hash of its indexed
    text (context + content), so a kept row's vectors are still right; new rows get ``layout.unit_kinds``.
    With ``requeue`` (the document's metadata changed) every kept row's copies go back to PENDING, so that the
    indexer rewrites their payloads (their vectors come from the embedding cache).
    """
    existing = conn.execute(
        select(CH.chunk_id, CH.content_hash, CH.unit)
        .where(CH.doc_id == doc_id, CH.lifecycle_status == Lifecycle.ACTIVE)
        .order_by(CH.chunk_index)
    ).all()
    by_hash: dict[tuple[str, str], list[str]] = defaultdict(list)
    for chunk_id, existing_hash, unit in existing:
        by_hash[(unit, existing_hash)].append(chunk_id)
    rows = _RowPlan(doc_id, doc, layout, now)
    section_ids: dict[int, str] = {}
    for draft in sorted(layout.drafts, key=lambda d: d.unit != Unit.SECTION):  # sections first, in their order
        section_id = section_ids.get(draft.section_index) if draft.section_index is not None else None
        chunk_id = rows.place(draft, by_hash, section_id)
        if draft.unit == Unit.SECTION:
            section_ids[draft.index] = chunk_id
    removed = [cid for ids in by_hash.values() for cid in ids]
    for unit, kept in rows.kept_by_unit().items():
        # a kept row takes its unit's kinds now (the layout may have changed: sections turned on or off): a kind
        # it gains becomes PENDING, a kind it loses NULL (its vector stays on the point until that is rewritten),
        # and every other status stays as it is, evaluated in the UPDATE itself (no lost concurrent transition)
        kinds = rows.kinds.get(unit, rows.enabled)
        statuses: dict[str, Any] = {
            status_col(k).key: (
                case((status_col(k).is_(None), IndexStatus.PENDING), else_=status_col(k)) if k in kinds else None
            )
            for k in KINDS
        }
        if requeue:  # a claim in flight is cancelled: its write of the old payload can no longer become SUCCESS
            statuses = {status_col(k).key: IndexStatus.PENDING if k in kinds else None for k in KINDS}
            statuses |= {f"{k}_claim": None for k in KINDS if k in kinds} | {"attempts": 0}
        conn.execute(
            update(schema.chunks)
            .where(CH.chunk_id == bindparam("b_chunk_id"))
            .values({**{k: bindparam(k) for k in kept[0] if k not in ("b_chunk_id", "b_unit")}, **statuses}),
            kept,
        )
    if rows.added:
        conn.execute(insert(schema.chunks), rows.added)
    for part in batches(removed):
        conn.execute(
            update(schema.chunks)
            .where(CH.chunk_id.in_(part))
            .values(lifecycle_status=Lifecycle.REMOVED, updated_at=now)
        )
    chunk_count = sum(1 for d in layout.drafts if d.unit != Unit.SECTION)
    conn.execute(
        update(schema.documents)
        .where(DOC.doc_id == doc_id)
        .values(chunk_count=chunk_count, file_hash=doc.file_hash, content_hash=doc.content_hash, updated_at=now)
    )
    return ChunkDiff(
        kept=tuple(k["b_chunk_id"] for k in rows.kept),
        added=tuple(a["chunk_id"] for a in rows.added),
        removed=tuple(removed),
        requeued=requeue and bool(rows.kept),
    )


class _RowPlan:
    """The rows a document's drafts become: kept rows (by indexed-text hash) get their new position."""

    def __init__(self, doc_id: int, doc: NewDocument, layout: ChunkLayout, now: datetime) -> None:
        self.base = {"doc_id": doc_id, "user_id": doc.user_id, "set_id": doc.set_id, "bucket_id": layout.bucket_id}
        self.now = now
        self.kinds = {unit: set(kinds) for unit, kinds in (layout.unit_kinds or {}).items()}
        self.enabled = set(layout.kinds)
        self.kept: list[dict[str, Any]] = []
        self.added: list[dict[str, Any]] = []

    def kept_by_unit(self) -> dict[str, list[dict[str, Any]]]:
        """The kept rows' updates, by unit."""
        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in self.kept:
            out[row["b_unit"]].append(row)
        return out

    def place(self, draft: ChunkDraft, by_hash: dict[tuple[str, str], list[str]], section_id: str | None) -> str:
        """Keep the row with this draft's unit and hash, or plan a new one; return its chunk_id."""
        row_hash = sha256_text(indexed_text(draft.text, draft.context))
        position = {
            "chunk_index": draft.index,
            "start_line": draft.start_line,
            "end_line": draft.end_line,
            "page": draft.page,
            "section": draft.section,
            "token_count": draft.token_count,
            "section_id": section_id,
            "chunk_type": draft.chunk_type,
            "metadata": dict(draft.metadata),  # layout facts (bbox, ocr) move with the chunk like its page does
            "updated_at": self.now,
        }
        matches = by_hash.get((draft.unit, row_hash))
        if matches:
            chunk_id = matches.pop(0)
            self.kept.append({"b_chunk_id": chunk_id, "b_unit": draft.unit, **position})
            return chunk_id
        chunk_id = str(uuid.uuid4())
        kinds = self.kinds.get(draft.unit, self.enabled)
        self.added.append(
            {
                "chunk_id": chunk_id,
                **self.base,
                "unit": draft.unit,
                "context": draft.context,
                "content": draft.text,
                "content_hash": row_hash,
                "lifecycle_status": Lifecycle.ACTIVE,
                "attempts": 0,
                "created_at": self.now,
                **{f"{k}_status": (IndexStatus.PENDING if k in kinds else None) for k in KINDS},
                **position,
            }
        )
        return chunk_id
