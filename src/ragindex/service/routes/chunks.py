"""One chunk of the key's tenant: read it, edit its text and/or metadata, delete it."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from fastapi import Path as PathParam

from ragindex.errors import ValidationError
from ragindex.service.deps import CallerDep, ServiceState, StateDep
from ragindex.service.schemas import ChunkPatch
from ragindex.store.records import ChunkRow

router = APIRouter(prefix="/v1", tags=["chunks"])

ChunkId = Annotated[str, PathParam(min_length=1, max_length=64)]


@router.get("/chunks/{chunk_id}")
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


@router.patch("/chunks/{chunk_id}")
async def patch_chunk(chunk_id: ChunkId, body: ChunkPatch, state: StateDep, caller: CallerDep) -> dict[str, Any]:
    """Replace the text (re-embedded in place only if it changed) and/or merge metadata."""
    if body.text is None and body.metadata is None:
        raise ValidationError("text", "give text, metadata, or both")
    await _tenant_chunk(state, chunk_id, caller.user_id)
    return (await state.aengine.update_chunk(chunk_id, content=body.text, metadata=body.metadata)).to_dict()


@router.delete("/chunks/{chunk_id}")
async def delete_chunk(chunk_id: ChunkId, state: StateDep, caller: CallerDep) -> dict[str, Any]:
    """Delete a chunk: gone from search at once, then purged from the index."""
    await _tenant_chunk(state, chunk_id, caller.user_id)
    return (await state.aengine.delete_chunks([chunk_id])).to_dict()


async def _tenant_chunk(state: ServiceState, chunk_id: str, user_id: int) -> ChunkRow:
    """The ACTIVE chunk of the tenant (NotFoundError, a 404, for another tenant's), read on the engine's pool."""
    return await state.aengine.run_sync(state.engine.store.get_tenant_chunk, chunk_id, user_id=user_id)
