"""What the client returns for each route.

Routes with a response schema in :mod:`ragindex.service.schemas` return that schema's model, so the two cannot
drift. A search returns the engine's own :class:`~ragindex.types.SearchResult` (its ``to_dict`` is the wire
format), so code written against :meth:`ragindex.Engine.search` works over HTTP too. The remaining routes answer
plain JSON objects; their models here keep any field they do not declare (``extra="allow"``, read with
``model_extra``), so a newer server's additions are kept rather than refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragindex.service.schemas import (
    ChunkOut,
    DocumentDetailOut,
    DocumentPageOut,
    DocumentSummary,
    JobAccepted,
    JobCancelOut,
    JobDetailOut,
    JobPageOut,
    JobRunOut,
    JobSummary,
    KeyInfo,
    ParsedDocumentOut,
)
from ragindex.types import BBox, Hit, MergedHit, SearchResult, SourceScore

__all__ = [
    "ChunkOut",
    "ChunkUpdate",
    "Deletion",
    "DocumentDetailOut",
    "DocumentPageOut",
    "DocumentSummary",
    "Health",
    "JobAccepted",
    "JobCancelOut",
    "JobDetail",
    "JobPageOut",
    "JobRun",
    "JobSummary",
    "KeyInfo",
    "OptimizeResult",
    "ParsedDocumentOut",
    "Readiness",
    "RepairReport",
    "SetDocuments",
    "SetInfo",
    "SetList",
    "StatusReport",
    "VerifyReport",
]


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


class Health(_Out):
    """``GET /healthz``: the process is up."""

    status: str


class Readiness(_Out):
    """``GET /readyz``: ``status`` is ``ready`` or ``unavailable`` (a 503 is returned, not raised)."""

    status: str
    checks: dict[str, str] = Field(
        default_factory=dict, description="store, index, dense -> ok, or the problem (dense: loading)."
    )

    @property
    def ready(self) -> bool:
        """Whether the store and the index answered and the dense model is loaded."""
        return self.status == "ready"


class SetInfo(_Out):
    """A set of the key's tenant that holds documents."""

    set_id: int
    documents: int
    statuses: dict[str, int] = Field(description="Documents per status (SUCCESS, FAILED, PROCESSING).")


class SetList(_Out):
    """``GET /v1/sets``."""

    sets: list[SetInfo]


class SetDocuments(_Out):
    """``GET /v1/sets/{set_id}/documents``: every document of the set."""

    set_id: int
    documents: list[DocumentSummary]


class ChunkUpdate(_Out):
    """``PATCH /v1/chunks/{chunk_id}``: what changed; ``reembedded`` says whether its copies were rewritten."""

    chunk_id: str
    content_changed: bool
    reembedded: bool
    metadata_updated: bool
    statuses: dict[str, str | None]
    failed: dict[str, str]
    ok: bool
    section_id: str | None = Field(None, description="The chunk's section, whose lexical copies hold its text too.")
    section_statuses: dict[str, str | None] = Field(
        default_factory=dict, description="Vector kind -> the status of the section's copy (empty without sections)."
    )


class Deletion(_Out):
    """``DELETE /v1/chunks/{id}`` and ``DELETE /v1/documents/{id}``: removed at once, then purged from the index."""

    removed: int
    purged: int
    purge_failed: int
    doc_ids: list[int]
    chunk_ids: list[str] = Field(description="A sample of the removed chunk ids.")
    errors: list[str]
    next_action: str | None = Field(description="`ragindex repair` when a purge failed, else null.")


JobRun = JobRunOut
"""The pipeline run of one document of a job (the service's schema)."""


class JobDetail(JobDetailOut):
    """``GET /v1/jobs/{job_id}``: the job, its live progress, each document's run, and the report when done."""

    @property
    def finished(self) -> bool:
        """Whether the job ended (succeeded, failed or cancelled)."""
        return self.status in ("succeeded", "failed", "cancelled")


class StatusReport(_Out):
    """``GET /v1/status`` (admin): documents and chunks per status per set, the collections, the job queue."""

    sets: list[dict[str, Any]]
    collections: list[dict[str, Any]]
    jobs: dict[str, Any] = Field(description="queued: the queue's depth; running: the running job's id or null.")


class VerifyReport(_Out):
    """``POST /v1/verify`` (admin): the truth store compared with the index, per bucket."""

    ok: bool
    collection: str | None
    buckets: list[dict[str, Any]]


class RepairReport(_Out):
    """``POST /v1/repair`` (admin): what repair found and did (``ragindex repair --json``; every field is kept)."""

    ok: bool
    dry_run: bool
    collection: str | None


class OptimizeResult(_Out):
    """``POST /v1/optimize`` (admin): bucket -> whether its HNSW graph was built."""

    optimized: dict[str, bool]


def _scores(raw: Mapping[str, Any]) -> tuple[dict[str, SourceScore], dict[str, str]]:
    scores: dict[str, SourceScore] = {}
    skipped: dict[str, str] = {}
    for source, value in raw.items():
        if "skipped" in value:
            skipped[source] = str(value["skipped"])
        else:
            weight = value.get("weight")
            scores[source] = SourceScore(
                score=float(value["score"]), rank=int(value["rank"]), weight=None if weight is None else float(weight)
            )
    return scores, skipped


def _hit(raw: Mapping[str, Any]) -> Hit:
    scores, skipped = _scores(raw.get("scores") or {})
    merged = tuple(
        MergedHit(chunk_id=m["chunk_id"], rank=int(m["rank"]), score=float(m["score"]), scores=_scores(m["scores"])[0])
        for m in raw.get("merged") or ()
    )
    return Hit(
        rank=int(raw["rank"]),
        chunk_id=raw["chunk_id"],
        doc_id=int(raw["doc_id"]),
        set_id=int(raw["set_id"]),
        score=float(raw["score"]),
        source=raw["source"],
        filename=raw["filename"],
        text=raw["text"],
        page=raw.get("page"),
        section=raw.get("section"),
        start_line=raw.get("start_line"),
        end_line=raw.get("end_line"),
        scores=scores,
        metadata=dict(raw.get("metadata") or {}),
        skipped=skipped,
        context=raw.get("context"),
        merged=merged,
        chunk_type=raw.get("chunk_type") or "text",
        bbox=BBox.from_list(raw.get("bbox")),
    )


def search_result(raw: Mapping[str, Any]) -> SearchResult:
    """The :class:`SearchResult` of a ``POST /v1/search`` answer (the inverse of ``SearchResult.to_dict``).

    Fields this version does not know are ignored, so a newer server's additions do not break the client.
    """
    return SearchResult(
        hits=tuple(_hit(h) for h in raw["hits"]),
        latency_ms={k: float(v) for k, v in (raw.get("latency_ms") or {}).items()},
        mode=raw["mode"],
        warnings=tuple(raw.get("warnings") or ()),
        degraded={str(k): str(v) for k, v in (raw.get("degraded") or {}).items()},
    )
