"""Prometheus metrics of one app (its own registry, so several apps can live in one process).

* ``ragindex_http_request_duration_seconds{route,method,status}``: latency histogram by route template.
* ``ragindex_ingest_chunks_embedded_total``, ``ragindex_ingest_documents_total{outcome}``,
  ``ragindex_jobs_total{status}``: ingest throughput.
* ``ragindex_chunks{kind,status}``: ACTIVE chunks per vector kind and status, read from the
  truth store on every scrape; ``ragindex_jobs_queued`` and ``ragindex_job_running``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ragindex.pipeline.sync import IngestReport
from ragindex.service.store import JobRow
from ragindex.store.protocol import ChunkStore

log = logging.getLogger(__name__)

_BUCKETS = (0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class _StoreCollector(Collector):
    """Chunks per status and job queue gauges, computed at scrape time."""

    def __init__(self, store: ChunkStore, kinds: tuple[str, ...], jobs: Callable[[], tuple[int, bool]]) -> None:
        self.store = store
        self.kinds = kinds
        self.jobs = jobs

    def collect(self) -> Iterator[GaugeMetricFamily]:
        chunks = GaugeMetricFamily(
            "ragindex_chunks", "ACTIVE chunks per vector kind and status", labels=["kind", "status"]
        )
        try:
            for kind in self.kinds:
                for status, n in sorted(self.store.chunk_count_by_status(kind).items()):
                    chunks.add_metric([kind, status], n)
        except Exception:  # a scrape must not fail because the store is briefly unavailable
            log.warning("chunk counts unavailable for /metrics", exc_info=True)
        yield chunks
        queued, running = self.jobs()
        yield GaugeMetricFamily("ragindex_jobs_queued", "Jobs waiting for the job thread", value=queued)
        yield GaugeMetricFamily("ragindex_job_running", "1 while an ingest job runs", value=1 if running else 0)


class Metrics:
    """The app's metrics.

    Args:
        store: Truth store read at scrape time.
        kinds: Enabled vector kinds.
        jobs: Returns (queued jobs, whether a job runs).
    """

    def __init__(self, store: ChunkStore, kinds: tuple[str, ...], jobs: Callable[[], tuple[int, bool]]) -> None:
        self.registry = CollectorRegistry()
        self.latency = Histogram(
            "ragindex_http_request_duration_seconds",
            "HTTP request latency by route template, method and status",
            ["route", "method", "status"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.chunks_embedded = Counter(
            "ragindex_ingest_chunks_embedded", "Chunk vectors computed by the dense encoder", registry=self.registry
        )
        self.documents = Counter(
            "ragindex_ingest_documents", "Documents ingested, by outcome", ["outcome"], registry=self.registry
        )
        self.jobs = Counter("ragindex_jobs", "Finished jobs by status", ["status"], registry=self.registry)
        self.registry.register(_StoreCollector(store, kinds, jobs))

    def observe(self, route: str, method: str, status: int, started: float) -> None:
        """Record one request."""
        self.latency.labels(route, method, str(status)).observe(time.perf_counter() - started)

    def job_done(self, job: JobRow, report: IngestReport | None) -> None:
        """Count a finished job and what its ingest did."""
        self.jobs.labels(job.status).inc()
        if report is None:
            return
        self.chunks_embedded.inc(report.chunks.get("embedded", 0))
        for outcome, n in report.documents.items():
            if n:
                self.documents.labels(outcome).inc(n)

    def render(self) -> bytes:
        """The exposition text."""
        return generate_latest(self.registry)


class MetricsMiddleware:
    """Pure ASGI middleware timing every HTTP request by its route template (not its raw path)."""

    def __init__(self, app: Any, metrics: Callable[[], Metrics | None]) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Handle one ASGI call."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_status(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            metrics = self.metrics()
            if metrics is not None:
                route = scope.get("route")
                template = getattr(route, "path", None) or "unmatched"
                metrics.observe(template, scope.get("method", ""), status, started)
