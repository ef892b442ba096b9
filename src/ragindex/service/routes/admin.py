"""Admin endpoints (admin keys only): status, verify, repair, optimise; who-am-I and the version for any key."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ragindex.about import version_info
from ragindex.service.deps import AdminDep, CallerDep, StateDep
from ragindex.service.job_state import JobState
from ragindex.service.openapi import error_responses, example
from ragindex.service.schema import SERVICE_MIGRATIONS
from ragindex.service.schemas import BackupRequest, KeyInfo, RepairRequest, VersionOut

router = APIRouter(prefix="/v1", tags=["admin"])

_STATUS = {
    "sets": [
        {
            "user_id": 1,
            "set_id": 1,
            "documents": {"ACTIVE": {"SUCCESS": 12}},
            "chunks": {"dense": {"ACTIVE": {"SUCCESS": 93}}, "bm25": {"ACTIVE": {"SUCCESS": 93}}, "sparse": {}},
        }
    ],
    "collections": [{"collection": "ragindex", "state": "ACTIVE", "dense": "st:all-MiniLM-L6-v2|384|cos|norm"}],
    "jobs": {"queued": 0, "running": None},
}
_VERIFY = {
    "ok": True,
    "collection": "ragindex",
    "buckets": [
        {
            "bucket": 0,
            "ok": True,
            "expected_points": 93,
            "index_points": 93,
            "missing": {},
            "missing_count": {},
            "orphans": [],
            "orphan_count": 0,
            "unfinished": {},
        }
    ],
}
_REPAIR = {"ok": True, "dry_run": True, "collection": "ragindex", "found": {}, "pending": {}, "notes": []}


@router.get("/me", response_model=KeyInfo, responses=error_responses(401, 503))
def whoami(caller: CallerDep) -> KeyInfo:
    """The calling key's id, tenant and role."""
    return KeyInfo(key_id=caller.key_id, user_id=caller.user_id, admin=caller.admin)


@router.get(
    "/version", response_model=VersionOut, response_model_exclude_unset=True, responses=error_responses(401, 503)
)
async def version(state: StateDep, _caller: CallerDep) -> dict[str, Any]:
    """The ragindex version, the truth-store schema the code needs and the one the database has, the dense model.

    Any key may ask (``ragindex --version`` prints the same without a database).
    """
    return version_info(state.engine, other_steps=[name for name, _ in SERVICE_MIGRATIONS])


@router.get(
    "/status",
    responses={**example("Documents and chunks per status per set.", _STATUS), **error_responses(401, 403, 503)},
)
async def status(state: StateDep, _admin: AdminDep) -> dict[str, Any]:
    """Documents and chunks per status per set, the collections, and the job queue."""
    out = (await state.aengine.status()).to_dict()
    out["jobs"] = {JobState.QUEUED: state.jobs.depth, JobState.RUNNING: state.jobs.current}  # count, job id
    return out


@router.post(
    "/verify",
    responses={
        **example("Per bucket: expected and present points.", _VERIFY),
        **error_responses(401, 403, 409, 503),
    },
)
async def verify(state: StateDep, _admin: AdminDep) -> dict[str, Any]:
    """Compare the truth store with the index (read-only; holds the index thread while it scans)."""
    return (await state.aengine.verify()).to_dict()


@router.post(
    "/repair",
    responses={
        **example("`ragindex repair --json`'s report (abridged here).", _REPAIR),
        **error_responses(400, 401, 403, 409, 413, 422, 503),
    },
)
async def repair(state: StateDep, _admin: AdminDep, body: RepairRequest | None = None) -> dict[str, Any]:
    """Converge the index copies to the truth store (``{"dry_run": true}`` only reports)."""
    return (await state.aengine.repair(dry_run=body.dry_run if body else False)).to_dict()


@router.post(
    "/backup",
    responses={
        **example(
            "`ragindex backup --json`'s report.",
            {"path": "/data/backups/nightly", "kind": "sqlite", "bytes": 1048576, "counts": {"documents": 12}},
        ),
        **error_responses(400, 401, 403, 409, 422, 503),
    },
)
async def backup(state: StateDep, _admin: AdminDep, body: BackupRequest | None = None) -> dict[str, Any]:
    """A consistent backup of the live deployment under ``<data dir>/backups/`` (searches and writes go on).

    On SQLite the truth store's online backup (the index is rebuilt from its cached vectors by ``ragindex restore``),
    on a database server an export archive.
    """
    from ragindex.clock import utcnow
    from ragindex.transfer.backup import backup as take_backup

    name = body.name if body is not None and body.name else utcnow().strftime("%Y%m%dT%H%M%S.%fZ")
    dest = state.engine.settings.data_dir / "backups" / name
    return (await state.aengine.run_sync(take_backup, state.engine, dest)).to_dict()


@router.post(
    "/optimize",
    responses={
        **example("The buckets optimised.", {"optimized": {"ragindex_b0": True}}),
        **error_responses(401, 403, 503),
    },
)
async def optimize(state: StateDep, _admin: AdminDep) -> dict[str, Any]:
    """Build the HNSW graphs of every bucket in use. On Edge this freezes the whole process: quiet hours only."""
    return {"optimized": await state.aengine.run_sync(state.engine.optimize_all)}
