"""Probes and metrics (no key needed): ``/healthz``, ``/readyz``, ``/metrics``."""

from __future__ import annotations

from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from ragindex.errors import RagindexError
from ragindex.service.deps import StateDep

router = APIRouter(tags=["health"])

READY_TIMEOUT_S = 2.0


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz", response_model=None)
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


@router.get("/metrics", include_in_schema=False)
def metrics(state: StateDep) -> Response:
    """Prometheus exposition."""
    return Response(state.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")
