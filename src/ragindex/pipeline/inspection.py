"""Inspection of documents: pages of a tenant's documents, and one document with its stages and chunks.

``ragindex docs list|show`` and ``GET /v1/documents[/{id}]`` print what these return; ``to_dict()`` is the
stable machine shape both share. A document's stages are those of its latest pipeline run (loading, chunking,
dense, bm25, sparse: status, duration, error); its chunk counts and chunk list are read live from the truth store,
so a run that failed and was repaired later shows the failed run next to chunks that are now SUCCESS.

``ragindex docs show ID --parsed`` and ``GET /v1/documents/{id}/parsed`` read a document's parsed artifact (the
markdown its current version was chunked from, and its layout blocks) through :func:`read_parsed`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragindex.clock import iso
from ragindex.errors import NotFoundError, ValidationError
from ragindex.fields import pick
from ragindex.paging import DEFAULT_LIMIT, check_limit, decode_cursor, encode_cursor
from ragindex.store.protocol import TruthStore
from ragindex.store.records import ChunkRow, DocumentFilter, DocumentRow, ParsedDocument, RunRow
from ragindex.store.states import Lifecycle, RunStatus, Stage
from ragindex.types import VectorKind

STAGES: tuple[str, ...] = tuple(s.lower() for s in Stage)
"""Stage names as documents report them, in pipeline order."""
LISTED_STATUSES: tuple[str, ...] = (RunStatus.PROCESSING, RunStatus.SUCCESS, RunStatus.FAILED)
"""The processing statuses a document can have (the filter of a listing)."""
PREVIEW_CHARS = 120


def document_summary(doc: DocumentRow) -> dict[str, Any]:
    """One document as listings show it (its id, where it came from, its status and error)."""
    return {
        **pick(doc, "doc_id", "user_id", "set_id", "filename"),
        "source": doc.source_uri,
        **pick(doc, "status", "error", "chunk_count", "size", "parser"),
        "updated_at": iso(doc.updated_at),
    }


@dataclass(frozen=True, slots=True)
class DocumentPage:
    """One page of a document listing and the cursor of the next one (None on the last page)."""

    documents: tuple[DocumentRow, ...]
    next_cursor: str | None

    def to_dict(self) -> dict[str, Any]:
        """``{"documents": [...], "next_cursor": ...}``."""
        return {"documents": [document_summary(d) for d in self.documents], "next_cursor": self.next_cursor}


@dataclass(frozen=True, slots=True)
class StageView:
    """One stage of a document's latest run: status (None when not recorded), duration, the stage's error."""

    stage: str
    status: str | None
    duration_ms: float | None
    error: str | None

    def to_dict(self) -> dict[str, Any]:
        """The stage as JSON (duration rounded to 0.1 ms)."""
        duration = round(self.duration_ms, 1) if self.duration_ms is not None else None
        return {"stage": self.stage, "status": self.status, "duration_ms": duration, "error": self.error}


@dataclass(frozen=True, slots=True)
class DocumentDetail:
    """A document, its latest run and stages, its live chunk counts and (when asked) its chunks and sections."""

    document: DocumentRow
    run: RunRow | None
    stages: tuple[StageView, ...]
    counts: dict[str, dict[str, dict[str, int]]]
    chunks: tuple[ChunkRow, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON of ``ragindex docs show --json`` and ``GET /v1/documents/{id}``."""
        doc = self.document
        out: dict[str, Any] = {
            "document": {
                **document_summary(doc),
                "file": doc.file_uri,
                "file_hash": doc.file_hash,
                "content_hash": doc.content_hash,
                "metadata": dict(doc.metadata),
            },
            "run": _run_dict(self.run) if self.run is not None else None,
            "stages": [s.to_dict() for s in self.stages],
            "counts": self.counts,
            "chunks": [chunk_summary(c) for c in self.chunks] if self.chunks is not None else None,
        }
        return out


def _run_dict(run: RunRow) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "job_id": run.job_id,
        "status": run.status,
        "failed_stage": run.failed_stage.lower() if run.failed_stage else None,
        "error": run.error,
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at),
        "total_ms": round(run.total_ms, 1) if run.total_ms is not None else None,
    }


def chunk_summary(row: ChunkRow) -> dict[str, Any]:
    """A chunk or section as ``docs show --chunks`` lists it: position, per-kind status, attempts, last error."""
    return {
        **pick(row, "chunk_id", "unit"),
        "index": row.chunk_index,
        **pick(row, "section_id", "section", "page", "start_line", "end_line", "token_count"),
        "chars": len(row.content),
        "status": {kind: row.status_of(kind) for kind in VectorKind},
        **pick(row, "attempts", "last_error"),
        "preview": " ".join(row.content.split())[:PREVIEW_CHARS],
    }


def list_documents(
    store: TruthStore,
    *,
    user_id: int | None = None,
    set_id: int | None = None,
    status: str | None = None,
    cursor: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> DocumentPage:
    """A page of ACTIVE documents in doc_id order (of a tenant, set and processing status when given).

    Raises:
        ValidationError: A limit out of range, a status that is not PROCESSING, SUCCESS or FAILED, a bad cursor.
    """
    check_limit(limit)
    if status is not None and status not in LISTED_STATUSES:
        raise ValidationError("status", f"must be one of {', '.join(LISTED_STATUSES)}; got {status!r}")
    after = 0
    if cursor:
        (after,) = _int_key(decode_cursor("documents", cursor))
    rows = store.document_page(DocumentFilter(user_id, set_id, status), after=after, limit=limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    return DocumentPage(tuple(rows), encode_cursor("documents", [rows[-1].doc_id]) if more else None)


def _int_key(key: list[Any]) -> tuple[int]:
    if len(key) != 1 or not isinstance(key[0], int) or isinstance(key[0], bool):
        raise ValidationError("cursor", "not a cursor of the documents listing; pass the next_cursor of its last page")
    return (key[0],)


def describe_document(
    store: TruthStore, doc_id: int, *, user_id: int | None = None, chunks: bool = False
) -> DocumentDetail:
    """A document (of ``user_id`` when given) with its latest run's stages, its chunk counts and optionally its rows.

    Raises:
        NotFoundError: No such document, another tenant's, or one that was deleted.
    """
    doc = _active_document(store, doc_id, user_id)
    latest = store.runs(doc_id=doc_id, limit=1)
    run = latest[0] if latest else None
    rows = None
    if chunks:  # chunks, then sections, each in document order
        rows = tuple(sorted(store.chunks_of_document(doc_id, unit=None), key=lambda r: (r.unit, r.chunk_index)))
    return DocumentDetail(doc, run, _stages(doc, run), store.document_chunk_counts(doc_id), rows)


def _stages(doc: DocumentRow, run: RunRow | None) -> tuple[StageView, ...]:
    if run is None:
        # recorded before runs of failed loads existed: a FAILED document without a content hash failed to load
        load_failed = doc.status == RunStatus.FAILED and not doc.content_hash
        unknown = tuple(StageView(s, None, None, None) for s in STAGES[1:])
        return (
            StageView(STAGES[0], RunStatus.FAILED, None, doc.error)
            if load_failed
            else StageView(STAGES[0], None, None, None),
            *unknown,
        )
    failed = run.failed_stage.lower() if run.failed_stage else None
    return tuple(
        StageView(s, RunStatus.FAILED, run.durations_ms.get(s), run.error)
        if s == failed  # the stage a run failed at is FAILED, whether or not the writer set its column too
        else StageView(s, run.stages.get(s), run.durations_ms.get(s), None)
        for s in STAGES
    )


def _active_document(store: TruthStore, doc_id: int, user_id: int | None) -> DocumentRow:
    doc = store.get_document(doc_id, user_id=user_id)
    if doc.lifecycle_status != Lifecycle.ACTIVE:
        raise NotFoundError(f"document {doc_id} not found (it was deleted)", doc_id=doc_id)
    return doc


def read_parsed(store: TruthStore, doc_id: int, *, user_id: int | None = None) -> ParsedDocument:
    """The parsed artifact of an ACTIVE document (of ``user_id`` when given).

    Raises:
        NotFoundError: No such document, another tenant's, a deleted one; or one without an artifact (it never
            loaded, or was ingested before artifacts were kept), with ``reason="no_parsed_artifact"`` and the fix.
    """
    doc = _active_document(store, doc_id, user_id)
    parsed = store.parsed_document(doc_id)
    if parsed is not None:
        return parsed
    if doc.status == RunStatus.FAILED and not doc.content_hash:
        why = f"it failed to load ({doc.error})" if doc.error else "it failed to load"
        fix = "fix the file; the next ingest parses it again"
    else:
        why = "it was ingested before ragindex kept parsed documents"
        fix = "re-ingest it with `ragindex ingest --full`, or it appears when its file changes"
    raise NotFoundError(
        f"document {doc_id} has no parsed artifact: {why}; {fix}", doc_id=doc_id, reason="no_parsed_artifact"
    )


def parsed_dict(parsed: ParsedDocument) -> dict[str, Any]:
    """The stable JSON of a parsed artifact (``docs show --parsed --json``, ``GET /v1/documents/{id}/parsed``)."""
    return {
        "doc_id": parsed.doc_id,
        "parser": parsed.parser,
        "content_hash": parsed.content_hash,
        "chars": parsed.chars,
        "page_count": parsed.page_count,
        "metadata": dict(parsed.metadata),
        "created_at": iso(parsed.created_at),
        "text": parsed.text,
        "blocks": [
            {
                "kind": str(b.kind),
                "start": b.start,
                "end": b.end,
                "page": b.page,
                "bbox": b.bbox.to_list() if b.bbox is not None else None,
                "confidence": b.confidence,
            }
            for b in parsed.blocks
        ],
        "pages": [{"page": p.page, "start": p.start} for p in parsed.pages],
    }
