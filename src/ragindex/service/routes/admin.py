"""Admin endpoints (admin keys only): status, verify, repair, optimise, and who-am-I for any key."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ragindex.service.deps import AdminDep, CallerDep, StateDep
from ragindex.service.job_state import JobState
from ragindex.service.schemas import KeyInfo, RepairRequest

router = APIRouter(prefix="/v1", tags=["admin"])


@router.get("/me", response_model=KeyInfo)
def whoami(caller: CallerDep) -> KeyInfo:
    """The calling key's id, tenant and role."""
    return KeyInfo(key_id=caller.key_id, user_id=caller.user_id, admin=caller.admin)


@router.get("/status")
async def status(state: StateDep, _admin: AdminDep) -> dict[str, Any]:
    """Documents and chunks per status per set, the collections, and the job queue."""
    out = (await state.aengine.status()).to_dict()
    out["jobs"] = {JobState.QUEUED: state.jobs.depth, JobState.RUNNING: state.jobs.current}  # count, job id
    return out


@router.post("/verify")
async def verify(state: StateDep, _admin: AdminDep) -> dict[str, Any]:
    """Compare the truth store with the index (read-only; holds the index thread while it scans)."""
    return (await state.aengine.verify()).to_dict()


@router.post("/repair")
async def repair(state: StateDep, _admin: AdminDep, body: RepairRequest | None = None) -> dict[str, Any]:
    """Converge the index copies to the truth store (``{"dry_run": true}`` only reports)."""
    return (await state.aengine.repair(dry_run=body.dry_run if body else False)).to_dict()


@router.post("/optimize")
async def optimize(state: StateDep, _admin: AdminDep) -> dict[str, Any]:
    """Build the HNSW graphs of every bucket in use. On Edge this freezes the whole process: quiet hours only."""
    return {"optimized": await state.aengine.run_sync(state.engine.optimize_all)}
