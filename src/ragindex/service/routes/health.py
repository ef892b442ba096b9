"""Probes and metrics (no key needed): ``/healthz``, ``/readyz``, ``/metrics``."""

from __future__ import annotations

from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from fastapi import APIRouter, Depends, Response
from fastapi.responses import JSONResponse, PlainTextResponse

from ragindex.errors import RagindexError
from ragindex.service.deps import StateDep, metrics_access
from ragindex.service.openapi import METRICS_EXAMPLE, error_responses

router = APIRouter(tags=["health"])

READY_TIMEOUT_S = 2.0


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get(
    "/readyz",
    response_model=None,
    responses={
        200: {
            "content": {"application/json": {"example": {"status": "ready", "checks": {"store": "ok", "index": "ok"}}}}
        },
        503: {
            "description": "The store or the index does not answer.",
            "content": {
                "application/json": {"example": {"status": "unavailable", "checks": {"store": "ok", "index": "busy"}}}
            },
        },
    },
)
def readyz(state: StateDep) -> dict[str, Any] | JSONResponse:
    """The truth store answers a query and the index answers on its thread within 2 s (else 503)."""
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
