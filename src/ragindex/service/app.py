"""``create_app(settings)``: the FastAPI app; its lifespan owns the engine, the index, job and reconciler threads."""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ragindex._optional import missing_extra

try:
    from fastapi import APIRouter, FastAPI
    from starlette.concurrency import run_in_threadpool
except ImportError as exc:  # imported by a library user without the extra
    raise missing_extra("service", "the HTTP service (ragindex.service)", exc) from exc

from ragindex import factory
from ragindex.about import package_version
from ragindex.aio import AsyncEngine
from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.pipeline.reconcile import ReconcileLoop
from ragindex.pipeline.sync import IngestReport
from ragindex.service import docs, openapi
from ragindex.service.deps import ServiceState
from ragindex.service.errors import install_handlers
from ragindex.service.executor import ServiceEngine, set_torch_threads
from ragindex.service.hygiene import RequestGate
from ragindex.service.jobs import JobRunner
from ragindex.service.metrics import Metrics, MetricsMiddleware
from ragindex.service.page import router as page_router
from ragindex.service.queue import EventPublisher, IngestQueue
from ragindex.service.readiness import DenseWarmUp
from ragindex.service.reconcile import start_reconciler
from ragindex.service.routes import admin, chunks, dify, documents, health, jobs, records, search
from ragindex.service.search_path import SEARCH_PATH, SearchFastPath
from ragindex.service.search_pool import SearchPool
from ragindex.service.settings import ServiceSettings
from ragindex.service.sources import SourcePaths
from ragindex.service.store import JobRow, SqlServiceStore
from ragindex.service.uploads import BodyLimitMiddleware

log = logging.getLogger(__name__)

DESCRIPTION = """Documents to a hybrid search index, per tenant.

Every `/v1` route needs `Authorization: Bearer <key>` (`ragindex keys create --user-id N`); the key
binds the request to its tenant, and another tenant's objects answer 404. Uploads are ingested by a
background job: poll `GET /v1/jobs/{job_id}`. Records (`/v1/sets/{set_id}/records`) are documents named
by your key and sent as JSON, searchable when a synchronous upsert answers. Search answers are `ragindex search
--json`'s shape, with each hit's `source` relative to its upload folder or ingest root.

Every error is `{"error", "message", "context"?}`; the status follows the error class (400, 401, 403,
404, 405, 409, 413, 415, 422, 502, 503), and each route lists the ones it answers. Request bodies are strict (a
value only as its own JSON type), and this document describes this deployment: what it refuses, the schema refuses.
`/metrics` needs an admin key unless `RAGINDEX_METRICS_PUBLIC=true`.
"""

TAGS = [
    {"name": "search", "description": "Hybrid, dense, BM25 or sparse search of one set."},
    {"name": "documents", "description": "Uploads (an ingest job each), listings, one document, deleting one."},
    {
        "name": "records",
        "description": "Documents named by the caller's key, sent as JSON: one (PUT), a batch (POST), read, delete.",
    },
    {"name": "jobs", "description": "Ingest jobs of the key's tenant: progress, per-document runs, cancelling."},
    {"name": "chunks", "description": "One chunk: read, edit (re-embedded only if its text changed), delete."},
    {"name": "admin", "description": "Who the key is, the version; status, verify, repair, optimise (admin keys)."},
    {"name": "health", "description": "Probes and Prometheus metrics."},
    {"name": "dify", "description": "Dify's External Knowledge API (`POST /retrieval`): register the service in Dify."},
]


def _start(settings: Settings, service: ServiceSettings, given: ServiceEngine | None = None) -> ServiceState:
    engine = given or ServiceEngine(
        settings, query_batch_max=service.query_batch_max, query_torch_threads=service.query_torch_threads
    )
    store = None
    try:
        store = SqlServiceStore(settings.resolved_database_url)
        _ = engine.index  # take ownership of the shards now: a second owner fails at start, not on a request
        # the model loads on its own thread: the port answers meanwhile (/healthz), /readyz waits for it
        warm_up = DenseWarmUp(engine, enabled=service.warm_up)
        warm_up.start()
        metrics_ref: list[Metrics] = []
        # a broker configured: upload jobs go to `ragindex worker` processes and none runs here
        ingest_queue = IngestQueue.from_settings(service) if service.queue_url else None
        events = EventPublisher.from_settings(service, ingest_queue.broker if ingest_queue is not None else None)

        def job_done(job: JobRow, report: IngestReport | None) -> None:
            if metrics_ref:
                metrics_ref[0].job_done(job, report)
            if events.active:
                try:
                    events.publish_job(engine.store, job)
                except Exception:  # the job's outcome is recorded; a broker outage must not stop the job thread
                    log.exception("the events of job %s were not published", job.job_id)

        runner = JobRunner(
            engine,
            store,
            workers=service.job_workers,
            max_starts=service.job_max_starts,
            torch_threads=service.job_torch_threads,
            on_done=job_done,
            dispatch=ingest_queue.enqueue if ingest_queue is not None else None,
        )
        loops: list[ReconcileLoop] = []
        metrics = Metrics(
            engine.store,
            engine.kinds,
            lambda: (runner.depth, runner.current is not None),
            reconcile=engine.store,
            reconcile_passes=lambda: loops[0].counts if loops else None,
            scores=engine.store,
            max_shift=settings.drift_max_shift,
        )
        metrics_ref.append(metrics)
        blob_root = (service.blob_dir or settings.data_dir / "blobs").expanduser().resolve()
        blob_root.mkdir(parents=True, exist_ok=True)
        state = ServiceState(
            settings=engine.settings,
            service=service,
            engine=engine,
            aengine=AsyncEngine(engine=engine),  # the routes' calls: on its pool, never on the event loop
            store=store,
            jobs=runner,
            metrics=metrics,
            blob_root=blob_root,
            suffixes=frozenset(factory.build_loaders(settings).supported_suffixes),
            rerank_supported="rerank" in inspect.signature(Engine.search).parameters,
            sources=SourcePaths(blob_root, service.source_roots, data_dir=settings.data_dir),
        )
        if service.search_process_count:
            pool = SearchPool(
                engine.settings,
                engine.index,
                processes=service.search_process_count,
                batch_max=service.search_batch_max,
                paths=(blob_root, list(service.source_roots), settings.data_dir),
            )
            state.extra["search_pool"] = pool
            threading.Thread(target=pool.warm_up, name="ragindex-search-warm-up", daemon=True).start()
        state.extra["events"] = events
        state.extra["warm_up"] = warm_up
        state.extra["owns_engine"] = given is None
        if ingest_queue is not None:
            state.extra["queue"] = ingest_queue
        else:
            runner.start()
        # torch stays unloaded until a job needs it: a pass limits the thread's torch threads once it is loaded
        loop = start_reconciler(
            engine, events, before_pass=lambda: set_torch_threads(service.job_torch_threads, load=False)
        )
        if loop is not None:
            loops.append(loop)
            state.extra["reconcile"] = loop
    except BaseException:
        if given is None:
            engine.close()
        if store is not None:
            store.close()
        raise
    return state


def _stop(state: ServiceState) -> None:
    loop = state.extra.get("reconcile")
    if isinstance(loop, ReconcileLoop) and not loop.stop(state.service.job_shutdown_seconds):
        log.warning("the reconciler's pass is still running at shutdown")
    if not state.jobs.stop(state.service.job_shutdown_seconds):
        log.warning("a job is still running at shutdown; it is re-queued when the service starts again")
    pool = state.extra.get("search_pool")
    if isinstance(pool, SearchPool):
        pool.close()
    if state.extra.get("owns_engine", True):
        state.engine.close()
    state.store.close()
    events = state.extra.get("events")
    if isinstance(events, EventPublisher):
        events.close()
    ingest_queue = state.extra.get("queue")
    if isinstance(ingest_queue, IngestQueue):
        ingest_queue.close()


def create_app(
    settings: Settings | None = None, service: ServiceSettings | None = None, *, engine: ServiceEngine | None = None
) -> FastAPI:
    """The HTTP app over one :class:`ServiceEngine` (built at start-up, closed at shutdown).

    Args:
        settings: Engine settings (default: from the environment; ``engine.settings`` when an engine is given).
        service: Service settings (default: from the environment).
        engine: An engine the caller built and will close (``ragindex watch --serve`` shares its engine with
            the service); default: the app builds its own at start-up and closes it at shutdown.
    """
    settings = engine.settings if engine is not None else settings or Settings()
    service = service or ServiceSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state = await run_in_threadpool(_start, settings, service, engine)
        app.state.service = state
        try:
            yield
        finally:
            try:
                await state.aengine.aclose()  # the routes' calls still running end first (it leaves the engine open)
            finally:
                await run_in_threadpool(_stop, state)

    if service.api_docs:
        docs.check_assets()
    app = FastAPI(
        title="ragindex",
        version=package_version(),
        description=DESCRIPTION,
        lifespan=lifespan,
        openapi_tags=TAGS,
        license_info={"name": "Apache-2.0", "identifier": "Apache-2.0"},
        docs_url=None,  # FastAPI's own pages load Swagger UI and ReDoc from a CDN: ragindex.service.docs serves them
        redoc_url=None,
        openapi_url="/openapi.json" if service.api_docs else None,
    )
    install_handlers(app)
    openapi.install(app)  # /openapi.json of this deployment: what it refuses, the schema refuses
    for module in (documents, records, jobs, search, chunks, admin, health, dify):
        app.include_router(module.router)
    if service.api_docs:
        app.include_router(docs.router)
    app.include_router(page_router)  # GET / : the retrieval-testing page
    # innermost of ours: a search's body goes to a search process once the key and the body limit are checked
    app.add_middleware(SearchFastPath, state=lambda: _state_of(app), route=_route(search.router, SEARCH_PATH, "POST"))
    app.add_middleware(BodyLimitMiddleware, limit=service.max_upload_bytes)
    # the key and the uploads in flight are checked before a body is read (outside the body limit: 401 first)
    app.add_middleware(RequestGate, state=lambda: _state_of(app), max_uploads=service.max_concurrent_uploads)
    app.add_middleware(MetricsMiddleware, metrics=lambda: _metrics_of(app))
    return app


def _route(router: APIRouter, path: str, method: str) -> object:
    return next(r for r in router.routes if getattr(r, "path", None) == path and method in getattr(r, "methods", ()))


def _metrics_of(app: FastAPI) -> Metrics | None:
    state = _state_of(app)
    return state.metrics if state is not None else None


def _state_of(app: FastAPI) -> ServiceState | None:
    state: ServiceState | None = getattr(app.state, "service", None)
    return state
