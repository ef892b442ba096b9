"""One chunk of the key's tenant: read it, edit its text and/or metadata, delete it."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from fastapi import Path as PathParam

from ragindex.errors import ValidationError
from ragindex.service.deps import CallerDep, ServiceState, StateDep
from ragindex.service.openapi import error_responses, example
from ragindex.service.schemas import ChunkOut, ChunkPatch
from ragindex.store.records import ChunkRow

router = APIRouter(prefix="/v1", tags=["chunks"])

ChunkId = Annotated[str, PathParam(min_length=1, max_length=64)]
_CHUNK = "0b7e8f0e-54a1-4c38-9d0e-2f5b8f4f6a11"
_PATCHED = {
    "chunk_id": _CHUNK,
    "content_changed": True,
    "reembedded": True,
    "metadata_updated": False,
    "statuses": {"dense": "SUCCESS", "bm25": "SUCCESS"},
    "embedded": 1,
    "reused": 0,
    "failed": {},
    "ok": True,
}
_DELETED = {
    "removed": 1,
    "purged": 1,
    "purge_failed": 0,
    "doc_ids": [],
    "chunk_ids": [_CHUNK],
    "errors": [],
    "next_action": None,
}


@router.get(
    "/chunks/{chunk_id}",
    response_model=ChunkOut,
    response_model_exclude_unset=True,
    responses=error_responses(401, 404, 422, 503),
)
async def get_chunk(chunk_id: ChunkId, state: StateDep, caller: CallerDep) -> dict[str, Any]:
    """An ACTIVE chunk with its per-kind index statuses (404 for another tenant's chunk)."""
    row = await _tenant_chunk(state, chunk_id, caller.user_id)
    return {
        "chunk_id": row.chunk_id,
        "doc_id": row.doc_id,
        "set_id": row.set_id,
        "chunk_index": row.chunk_index,
        "text": row.content,
        "metadata": dict(row.metadata),
        "page": row.page,
        "section": row.section,
        "start_line": row.start_line,
        "end_line": row.end_line,
        "token_count": row.token_count,
        "statuses": {k: row.status_of(k) for k in state.engine.kinds},
        "attempts": row.attempts,
        "last_error": row.last_error,
    }


@router.patch(
    "/chunks/{chunk_id}",
    responses={
        **example("The new statuses; `reembedded` when the text changed and its vectors were rewritten.", _PATCHED),
        **error_responses(400, 401, 404, 409, 413, 422, 503),
    },
)
async def patch_chunk(chunk_id: ChunkId, body: ChunkPatch, state: StateDep, caller: CallerDep) -> dict[str, Any]:
    """Replace the text (re-embedded in place only if it changed) and/or merge metadata."""
    if body.text is None and body.metadata is None:
        raise ValidationError("text", "give text, metadata, or both")
    await _tenant_chunk(state, chunk_id, caller.user_id)
    return (await state.aengine.update_chunk(chunk_id, content=body.text, metadata=body.metadata)).to_dict()


@router.delete(
    "/chunks/{chunk_id}",
    responses={**example("What was deleted and purged.", _DELETED), **error_responses(401, 404, 409, 422, 503)},
)
async def delete_chunk(chunk_id: ChunkId, state: StateDep, caller: CallerDep) -> dict[str, Any]:
    """Delete a chunk: gone from search at once, then purged from the index."""
    await _tenant_chunk(state, chunk_id, caller.user_id)
    return (await state.aengine.delete_chunks([chunk_id])).to_dict()


async def _tenant_chunk(state: ServiceState, chunk_id: str, user_id: int) -> ChunkRow:
    """The ACTIVE chunk of the tenant (NotFoundError, a 404, for another tenant's), read on the engine's pool."""
    return await state.aengine.run_sync(state.engine.store.get_tenant_chunk, chunk_id, user_id=user_id)
