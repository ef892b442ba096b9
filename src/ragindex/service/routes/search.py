"""``POST /v1/search``: the answer is exactly ``SearchResult.to_dict()`` (``ragindex search --json``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ragindex.errors import ValidationError
from ragindex.service.deps import CallerDep, StateDep
from ragindex.service.schemas import SearchRequest

router = APIRouter(prefix="/v1", tags=["search"])


@router.post("/search")
async def search(body: SearchRequest, state: StateDep, caller: CallerDep) -> dict[str, Any]:
    """Search one set of the key's tenant; every hit is backfilled from the truth store."""
    options: dict[str, Any] = {}
    if body.rerank is not None:
        if not state.rerank_supported:
            raise ValidationError("rerank", "rerank not available")
        options["rerank"] = body.rerank
    result = await state.aengine.search(
        body.query,
        user_id=caller.user_id,
        set_id=body.set_id,
        doc_ids=body.doc_ids,
        mode=body.mode or "hybrid",
        top_k=body.top_k,
        score_threshold=body.score_threshold,
        fusion=body.fusion,
        expand=body.expand,
        context_chars=body.context_chars,
        group_by=body.group_by,
        **options,
    )
    return result.to_dict()
