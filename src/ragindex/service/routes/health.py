"""Probes and metrics: ``/healthz`` (liveness) and ``/readyz`` (readiness), open; ``/metrics`` (an admin key).

``/healthz`` answers as soon as the port is bound: the process is up. ``/readyz`` is 200 only once the truth store
answers a query, the index answers on its thread within 2 s, and the dense model is loaded (the start-up warm-up,
:mod:`ragindex.service.readiness`); else 503 with the check that is not ``ok``. While the service starts (the store,
the index) its port is not bound yet: both probes get a refused connection.
"""

from __future__ import annotations

from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from fastapi import APIRouter, Depends, Response
from fastapi.responses import JSONResponse, PlainTextResponse

from ragindex.errors import RagindexError
from ragindex.service.deps import StateDep, metrics_access
from ragindex.service.openapi import METRICS_EXAMPLE, error_responses
from ragindex.service.readiness import DenseWarmUp
from ragindex.service.search_pool import SearchPool

router = APIRouter(tags=["health"])

READY_TIMEOUT_S = 2.0


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """Liveness: the process is up and serving (even while the model loads)."""
    return {"status": "ok"}


@router.get(
    "/readyz",
    response_model=None,
    responses={
        200: {
            "content": {
                "application/json": {
                    "example": {"status": "ready", "checks": {"store": "ok", "index": "ok", "dense": "ok"}}
                }
            }
        },
        503: {
            "description": "The store or the index does not answer, or the dense model is still loading.",
            "content": {
                "application/json": {
                    "example": {"status": "unavailable", "checks": {"store": "ok", "index": "ok", "dense": "loading"}}
                }
            },
        },
    },
)
def readyz(state: StateDep) -> dict[str, Any] | JSONResponse:
    """Readiness: the truth store answers, the index answers on its thread within 2 s, the dense model is loaded."""
    engine = state.engine
    checks: dict[str, str] = {}
    try:
        collection = engine.read_collection()
        buckets = engine.store.buckets_in_use()
        checks["store"] = "ok"
    except RagindexError as exc:
        return JSONResponse({"status": "unavailable", "checks": {"store": exc.message}}, status_code=503)
    try:
        index = engine.index
        if collection is not None and buckets:
            engine.index_thread.submit(index.count, collection, buckets[0]).result(timeout=READY_TIMEOUT_S)
        checks["index"] = "ok"
    except FutureTimeout:
        return JSONResponse({"status": "unavailable", "checks": {**checks, "index": "busy"}}, status_code=503)
    except RagindexError as exc:
        return JSONResponse({"status": "unavailable", "checks": {**checks, "index": exc.message}}, status_code=503)
    warm_up = state.extra.get("warm_up")
    if isinstance(warm_up, DenseWarmUp):
        ready, checks["dense"] = warm_up.check()
        if not ready:
            return JSONResponse({"status": "unavailable", "checks": checks}, status_code=503)
    pool = state.extra.get("search_pool")
    if isinstance(pool, SearchPool):
        checks["search_processes"] = pool.status()
        if checks["search_processes"] == "starting":  # failed: searches run in this process, so ready
            return JSONResponse({"status": "unavailable", "checks": checks}, status_code=503)
    return {"status": "ready", "checks": checks}


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    dependencies=[Depends(metrics_access)],
    responses={
        200: {"description": "Prometheus text exposition.", "content": {"text/plain": {"example": METRICS_EXAMPLE}}},
        **error_responses(401, 403, 503),
    },
)
def metrics(state: StateDep) -> Response:
    """Prometheus exposition; needs an admin key unless ``RAGINDEX_METRICS_PUBLIC=true``."""
    return Response(state.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")
