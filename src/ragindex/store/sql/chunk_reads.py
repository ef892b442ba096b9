"""Chunks of the SQL truth store, read side: backfill (no ghosts), verification views, counts."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select

from ragindex.errors import NotFoundError
from ragindex.store import schema, search_reads
from ragindex.store.records import ChunkRow, ChunkText, ChunkView, SectionText
from ragindex.store.sql.core import CH, DOC, KINDS, SqlCore, batches, given, status_col
from ragindex.store.sql.rows import chunk_row
from ragindex.store.states import IndexStatus, Lifecycle
from ragindex.types import Unit


class SqlChunkReads(SqlCore):
    """The read half of the chunks role (:class:`~ragindex.store.protocol.ChunkStore`)."""

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[ChunkRow]:
        """Chunks by id, in any lifecycle, in the order of ``chunk_ids`` (missing ids are skipped)."""
        found: dict[str, ChunkRow] = {}
        with self._tx() as conn:
            for part in batches(list(chunk_ids)):
                for r in conn.execute(select(schema.chunks).where(CH.chunk_id.in_(part))):
                    found[r.chunk_id] = chunk_row(r._mapping)
        return [found[c] for c in chunk_ids if c in found]

    def backfill(self, chunk_ids: Sequence[str]) -> dict[str, ChunkView]:
        """ACTIVE chunks (joined with their document) by id; REMOVED or unknown ids are absent (no ghosts).

        Each view keeps the row as read and builds its :class:`ChunkRow` (decoding the chunk's JSON metadata) on
        first use only: a search builds the rows of the hits it returns, not of every candidate; a document's
        metadata is decoded at most once per call (:class:`~ragindex.store.records.JsonObject`).
        """
        with self._errors():
            return search_reads.backfill(self._search_sql, chunk_ids)

    def chunk_sections(self, chunk_ids: Sequence[str]) -> dict[str, tuple[str, int]]:
        """chunk_id -> (section_id, chunk_index) of the ACTIVE chunks among ``chunk_ids`` that have a section.

        What fusion needs to map a lexical source's sections to the chunks dense found (two narrow columns of
        at most ``candidates`` rows, through the primary key), instead of reading every section's chunks.
        """
        with self._errors():
            return search_reads.chunk_sections(self._search_sql, chunk_ids)

    def get_tenant_chunk(self, chunk_id: str, *, user_id: int) -> ChunkRow:
        """An ACTIVE chunk of ``user_id``; NotFoundError for unknown, deleted or another tenant's ids alike."""
        with self._tx() as conn:
            row = conn.execute(
                select(schema.chunks).where(
                    CH.chunk_id == chunk_id, CH.user_id == user_id, CH.lifecycle_status == Lifecycle.ACTIVE
                )
            ).first()
        if row is None:
            raise NotFoundError(f"chunk {chunk_id} not found", chunk_id=chunk_id)
        return chunk_row(row._mapping)

    def chunks_of_document(
        self, doc_id: int, *, include_removed: bool = False, unit: str | None = Unit.CHUNK
    ) -> list[ChunkRow]:
        """A document's chunks in order (its sections with ``unit="section"``, every row with ``unit=None``)."""
        cond = [CH.doc_id == doc_id, *given((CH.unit, unit))]
        if not include_removed:
            cond.append(CH.lifecycle_status == Lifecycle.ACTIVE)
        with self._tx() as conn:
            return [
                chunk_row(r._mapping) for r in conn.execute(select(schema.chunks).where(*cond).order_by(CH.chunk_index))
            ]

    def document_chunk_counts(self, doc_id: int) -> dict[str, dict[str, dict[str, int]]]:
        """Per unit, vector kind and status: how many ACTIVE rows of a document (kinds a unit lacks are absent)."""
        out: dict[str, dict[str, dict[str, int]]] = {}
        with self._tx() as conn:
            for kind in KINDS:
                groups = (CH.unit, status_col(kind))
                query = (
                    select(*groups, func.count())
                    .where(CH.doc_id == doc_id, CH.lifecycle_status == Lifecycle.ACTIVE, status_col(kind).is_not(None))
                    .group_by(*groups)
                )
                for unit, status, n in conn.execute(query):
                    out.setdefault(str(unit), {}).setdefault(kind, {})[str(status)] = int(n)
        return out

    def section_chunks(self, section_ids: Sequence[str]) -> dict[str, list[ChunkText]]:
        """section_id -> its ACTIVE chunks in document order (sections without live chunks are absent)."""
        with self._errors():
            return search_reads.section_chunks(self._search_sql, section_ids)

    def live_sections(self, section_ids: Sequence[str]) -> set[str]:
        """The ids among ``section_ids`` that have an ACTIVE chunk."""
        with self._errors():
            return search_reads.live_sections(self._search_sql, section_ids)

    def section_texts(self, doc_ids: Sequence[int]) -> list[SectionText]:
        """The ACTIVE sections of these documents, each with its ACTIVE chunks' texts, in document order.

        One read of the documents' rows (through their doc_id index), so a pass over every document reads each
        row once.
        """
        columns = (CH.chunk_id, CH.unit, CH.section_id, CH.bucket_id, CH.content)
        sections: dict[str, tuple[int, str]] = {}
        members: dict[str, list[str]] = {}
        with self._tx() as conn:
            for part in batches(list(doc_ids)):
                query = (
                    select(*columns)
                    .where(CH.doc_id.in_(part), CH.lifecycle_status == Lifecycle.ACTIVE)
                    .order_by(CH.doc_id, CH.chunk_index)
                )
                for chunk_id, unit, section_id, bucket_id, content in conn.execute(query):
                    if unit == Unit.SECTION:
                        sections[chunk_id] = (bucket_id, content)
                    elif section_id is not None:
                        members.setdefault(section_id, []).append(content)
        return [SectionText(sid, bucket, text, tuple(members.get(sid, ()))) for sid, (bucket, text) in sections.items()]

    def expected_points(self, bucket_id: int) -> dict[str, dict[str, str | None]]:
        """chunk_id -> {kind: status} of every ACTIVE chunk routed to ``bucket_id``."""
        columns = [status_col(k) for k in KINDS]
        with self._tx() as conn:
            rows = conn.execute(
                select(CH.chunk_id, *columns).where(CH.bucket_id == bucket_id, CH.lifecycle_status == Lifecycle.ACTIVE)
            ).all()
        return {r[0]: dict(zip(KINDS, r[1:], strict=True)) for r in rows}

    def lifecycle_of(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        """chunk_id -> lifecycle status (ids unknown to the store are absent)."""
        out: dict[str, str] = {}
        with self._tx() as conn:
            for part in batches(list(chunk_ids)):
                query = select(CH.chunk_id, CH.lifecycle_status).where(CH.chunk_id.in_(part))
                out.update({r[0]: r[1] for r in conn.execute(query)})
        return out

    def all_active_chunk_ids(self) -> list[str]:
        """Ids of every ACTIVE chunk (verification)."""
        with self._tx() as conn:
            return [r[0] for r in conn.execute(select(CH.chunk_id).where(CH.lifecycle_status == Lifecycle.ACTIVE))]

    def chunk_ids_updated_since(self, since: datetime) -> list[str]:
        """Ids of ACTIVE chunks whose row changed at or after ``since`` (naive UTC): a reindex's catch-up pass."""
        query = select(CH.chunk_id).where(CH.lifecycle_status == Lifecycle.ACTIVE, CH.updated_at >= since)
        with self._tx() as conn:
            return [r[0] for r in conn.execute(query)]

    def buckets_in_use(self) -> list[int]:
        """Bucket ids that hold any chunk."""
        with self._tx() as conn:
            return sorted(r[0] for r in conn.execute(select(CH.bucket_id).distinct()))

    def chunk_count_by_status(self, kind: str) -> dict[str, int]:
        """ACTIVE chunk counts per status of ``kind`` (metrics, tests)."""
        status = status_col(kind)
        with self._tx() as conn:
            rows = conn.execute(
                select(status, func.count()).where(CH.lifecycle_status == Lifecycle.ACTIVE).group_by(status)
            ).all()
        return {str(s): int(n) for s, n in rows if s is not None}

    def chunks_needing_work(self, kinds: Iterable[str]) -> int:
        """How many ACTIVE chunks have any of ``kinds`` not yet SUCCESS."""
        cond = [and_(status_col(k).is_not(None), status_col(k) != IndexStatus.SUCCESS) for k in kinds]
        with self._tx() as conn:
            query = select(func.count()).where(CH.lifecycle_status == Lifecycle.ACTIVE, or_(*cond))
            return int(conn.execute(query).scalar_one())

    def status_counts(self) -> dict[str, Any]:
        """Documents and chunks per status, per (user_id, set_id)."""
        sets: dict[tuple[int, int], dict[str, Any]] = {}

        def entry(user_id: int, set_id: int) -> dict[str, Any]:
            return sets.setdefault(
                (user_id, set_id),
                {"user_id": user_id, "set_id": set_id, "documents": {}, "chunks": {k: {} for k in KINDS}},
            )

        def add(counts: dict[str, int], lifecycle: str, status: str, n: int) -> None:
            label = status if lifecycle == Lifecycle.ACTIVE else Lifecycle.REMOVED
            counts[label] = counts.get(label, 0) + n

        with self._tx() as conn:
            doc_groups = (DOC.user_id, DOC.set_id, DOC.lifecycle_status, DOC.status)
            for user_id, set_id, lifecycle, status, n in conn.execute(
                select(*doc_groups, func.count()).group_by(*doc_groups)
            ):
                add(entry(user_id, set_id)["documents"], lifecycle, status, n)
            for kind in KINDS:
                chunk_groups = (CH.user_id, CH.set_id, CH.lifecycle_status, status_col(kind))
                for user_id, set_id, lifecycle, value, n in conn.execute(
                    select(*chunk_groups, func.count()).group_by(*chunk_groups)
                ):
                    if value is not None:
                        add(entry(user_id, set_id)["chunks"][kind], lifecycle, value, n)
        return {"sets": [sets[k] for k in sorted(sets)]}
