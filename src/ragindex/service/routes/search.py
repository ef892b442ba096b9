"""``POST /v1/search``: ``SearchResult.to_dict()`` (``ragindex search --json``) with each ``source`` made relative.

A search that left out a failed source (``on_source_error="degrade"``) names it under ``degraded`` and is counted
in ``ragindex_search_degraded_total{source}``.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter, Request, Response

from ragindex.errors import InputError, ValidationError
from ragindex.filters import FilterError
from ragindex.service.deps import CallerDep, StateDep
from ragindex.service.openapi import error_responses
from ragindex.service.schemas import SearchOut, SearchRequest
from ragindex.service.search_path import FAILED_IN_POOL, record_outcome
from ragindex.service.search_pool import SearchPool, engine_call

router = APIRouter(prefix="/v1", tags=["search"])

_NO_RERANKER = {
    "error": "RerankerUnavailableError",
    "message": "rerank was requested but no reranker model is available: RAGINDEX_RERANK_MODEL="
    "'BAAI/bge-reranker-v2-m3' is neither a local directory nor in the Hugging Face cache. Set "
    "RAGINDEX_RERANK_MODEL to a local cross-encoder directory (or a cached model name), or search without rerank.",
    "context": {"field": "rerank", "setting": "RAGINDEX_RERANK_MODEL", "model": "BAAI/bge-reranker-v2-m3"},
}


_BAD_FILTER = {
    "error": "ValidationError",
    "message": "filter: filter at year: unknown field 'year'; this set's fields are lang (string), size (number)",
    "context": {"field": "filter", "path": "year"},
}


@router.post(
    "/search",
    response_model=SearchOut,
    response_model_exclude_unset=True,  # optional keys (warnings, context, merged) only when the engine sets them
    responses=error_responses(
        400, 401, 409, 413, 422, 502, 503, more={422: {"rerank_unavailable": _NO_RERANKER, "bad_filter": _BAD_FILTER}}
    ),
)
async def search(body: SearchRequest, state: StateDep, caller: CallerDep, request: Request) -> Response:
    """Search one set of the key's tenant; every hit is backfilled from the truth store.

    ``rerank: true`` on a deployment whose reranker model is not available answers 422 naming
    ``RAGINDEX_RERANK_MODEL`` (``context.setting``), before any search work.
    """
    call = engine_call(body, caller.user_id, rerank_supported=state.rerank_supported)
    pool = state.extra.get("search_pool")
    # RAGINDEX_SEARCH_PROCESSES: the search runs in a search process (unless it just failed in one, on the fast path)
    if isinstance(pool, SearchPool) and not request.scope.get(FAILED_IN_POOL):
        outcome = await pool.search(call)
        if outcome is not None:
            answer, degraded, observed = outcome
            record_outcome(state, degraded, observed)
            return Response(answer, media_type="application/json")
    try:  # here, or again after it failed in a search process: this raises its error
        result = await state.aengine.search(**call)
    except FilterError as exc:
        raise filter_error(exc) from exc
    state.metrics.search_done(result.degraded)
    return json_answer(state.sources.answer(result, user_id=caller.user_id))


def json_answer(answer: dict[str, Any]) -> Response:
    """``answer`` serialised once, by orjson: the response model documents it (OpenAPI) but does not re-validate it.

    Validating and re-encoding a search answer through the response model cost ~2 ms of GIL-held Python a search
    (docs/service.md, "The read path"); tests/service/test_search_answer.py checks that this answer is the one the
    model gives.
    """
    return Response(orjson.dumps(answer, option=orjson.OPT_NON_STR_KEYS), media_type="application/json")


def filter_error(exc: InputError, field: str = "filter") -> ValidationError:
    """A FilterError (a 400-class input error) as the 422 of the ``filter`` field, its message and path kept."""
    context = {k: v for k, v in exc.context.items() if k != "field"}
    error = ValidationError(field, exc.message, **context)
    error.__cause__ = exc
    return error
