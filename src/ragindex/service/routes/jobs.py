"""Job status: queued / running / succeeded / failed, per-document stage progress, the ingest report."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter
from fastapi import Path as PathParam

from ragindex.service.deps import CallerDep, StateDep

router = APIRouter(prefix="/v1", tags=["jobs"])


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


@router.get("/jobs/{job_id}")
def get_job(job_id: Annotated[str, PathParam(max_length=64)], state: StateDep, caller: CallerDep) -> dict[str, Any]:
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
    return {
        "job_id": job.job_id,
        "kind": job.kind,
        "status": job.status,
        "set_id": job.set_id,
        "files": [Path(f).name for f in job.files],
        "created_at": _iso(job.created_at),
        "started_at": _iso(job.started_at),
        "finished_at": _iso(job.finished_at),
        "error": job.error,
        "progress": state.jobs.progress(job_id),
        "runs": runs,
        "report": job.report,
    }
