"""Jobs of the key's tenant: the list (newest first), one job with its progress, runs and report, and cancelling."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from fastapi import Path as PathParam

from ragindex.clock import iso
from ragindex.errors import ValidationError
from ragindex.fields import pick
from ragindex.paging import DEFAULT_LIMIT, MAX_LIMIT, decode_cursor, encode_cursor
from ragindex.service.cancel import request_cancel
from ragindex.service.deps import JSON_INTEGER, CallerDep, Cursor, StateDep, cursor_query
from ragindex.service.job_state import JobState
from ragindex.service.openapi import error_responses
from ragindex.service.record_jobs import RECORDS_JOB
from ragindex.service.schemas import JobCancelOut, JobDetailOut, JobPageOut, JobStatus
from ragindex.service.store import JobRow

router = APIRouter(prefix="/v1", tags=["jobs"])
JobIdPath = Annotated[str, PathParam(max_length=64)]


def job_summary(job: JobRow) -> dict[str, Any]:
    """A job's own fields (what ``GET /v1/jobs`` lists)."""
    return {
        **pick(job, "job_id", "kind", "status", "set_id"),
        "files": [] if job.kind == RECORDS_JOB else [Path(f).name for f in job.files],  # a batch file is no upload
        "created_at": iso(job.created_at),
        "started_at": iso(job.started_at),
        "finished_at": iso(job.finished_at),
        "error": job.error,
    }


@router.get("/jobs", response_model=JobPageOut, responses=error_responses(401, 422, 503))
def list_jobs(
    state: StateDep,
    caller: CallerDep,
    status: Annotated[JobStatus | None, Query(description="Only jobs in this state.")] = None,
    cursor: Annotated[Cursor, cursor_query("jobs")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Most jobs per page."), JSON_INTEGER] = DEFAULT_LIMIT,
) -> JobPageOut:
    """The key's tenant's jobs, newest first, a page at a time."""
    before = _job_key(cursor) if cursor else None
    rows = state.store.list_jobs(user_id=caller.user_id, status=status, before=before, limit=limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = encode_cursor("jobs", [rows[-1].created_at.isoformat(), rows[-1].job_id]) if more else None
    jobs = state.sources.scrub([job_summary(j) for j in rows])  # errors name files, never server paths
    return JobPageOut.model_validate({"jobs": jobs, "next_cursor": next_cursor})


def _job_key(cursor: str) -> tuple[datetime, str]:
    key = decode_cursor("jobs", cursor)
    try:
        created, job_id = key
        return datetime.fromisoformat(created), str(job_id)
    except (TypeError, ValueError) as exc:
        raise ValidationError(
            "cursor", "not a cursor of the jobs listing; pass the next_cursor of its last page"
        ) from exc


@router.get(
    "/jobs/{job_id}",
    response_model=JobDetailOut,
    response_model_exclude_unset=True,
    responses=error_responses(401, 404, 422, 503),
)
def get_job(job_id: JobIdPath, state: StateDep, caller: CallerDep) -> dict[str, Any]:
    """A job of the key's tenant: status, live progress, each document's pipeline run, and the report when done."""
    job = state.store.get_job(job_id, user_id=caller.user_id)
    runs = [
        {
            "doc_id": r.doc_id,
            "status": r.status,
            "stages": dict(r.stages),
            "durations_ms": {k: round(v, 1) if v is not None else None for k, v in r.durations_ms.items()},
            "failed_stage": r.failed_stage,
            "recover_from_stage": r.recover_from_stage,
            "chunk_count": r.chunk_count,
            "error": r.error,
        }
        for r in reversed(state.engine.store.runs(job_id=job_id))
    ]
    detail = {**job_summary(job), "progress": state.jobs.progress(job_id), "runs": runs}
    scrubbed: dict[str, Any] = state.sources.scrub(detail)  # errors name files, never server paths
    return {**scrubbed, "report": state.sources.report(job.report, user_id=job.user_id, set_id=job.set_id)}


@router.delete(
    "/jobs/{job_id}",
    response_model=JobCancelOut,
    responses={
        202: {"model": JobCancelOut, "description": "Running: it stops at its next file or batch boundary."},
        **error_responses(401, 404, 409, 422, 503),
    },
)
def cancel_job(job_id: JobIdPath, state: StateDep, caller: CallerDep, response: Response) -> JobCancelOut:
    """Cancel a queued job (200, `cancelled`) or a running one (202, `cancelling`; poll it until `cancelled`).

    A cancelled ingest keeps what it committed: documents whose copies were all written stay searchable, the
    others are FAILED with the reason and their unfinished chunks wait for the set's next ingest or a repair.
    """
    job = request_cancel(state.store, job_id, user_id=caller.user_id)
    response.status_code = 202 if job.status == JobState.CANCELLING else 200
    return JobCancelOut(job_id=job.job_id, status=JobState(job.status))
