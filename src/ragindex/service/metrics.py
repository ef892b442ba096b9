"""Prometheus metrics of one app (its own registry, so several apps can live in one process).

* ``ragindex_http_request_duration_seconds{route,method,status}``: latency histogram by route template.
* ``ragindex_ingest_chunks_embedded_total``, ``ragindex_ingest_documents_total{outcome}``,
  ``ragindex_jobs_total{status}``: ingest throughput.
* ``ragindex_search_degraded_total{source}``: searches that answered without a failed source
  (``on_source_error="degrade"``), by the source left out.
* ``ragindex_chunks{kind,status}``: ACTIVE chunks per vector kind and status, read from the
  truth store on every scrape; ``ragindex_jobs_queued`` and ``ragindex_job_running``.
* The reconciler, read from the truth store on every scrape, so they count the passes of every process
  (the service's and the workers'): ``ragindex_reconcile_actions_total{action="retry|release|purge|finish"}``,
  ``ragindex_reconcile_retry_failures_total``, ``ragindex_reconcile_passes_total``,
  ``ragindex_reconcile_last_pass_timestamp_seconds`` and ``ragindex_reconcile_last_pass_duration_seconds``; and
  this process's own passes, ``ragindex_reconcile_process_passes_total{outcome="done|skipped|error"}``.
* The score-drift watch, read from the truth store on every scrape (every process's searches):
  ``ragindex_search_score{source,fingerprint,metric="top1|top10",quantile="0.1|0.5|0.9"}`` of the last closed window
  (the open one before any closed), ``ragindex_search_score_shift{source,fingerprint}`` (relative change of its median
  top-1 score against the reference window), ``ragindex_search_score_drift{source,fingerprint}`` (1 beyond
  ``RAGINDEX_DRIFT_MAX_SHIFT``) and ``ragindex_search_score_searches{source,fingerprint}`` (searches in that window).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ragindex.pipeline.reconcile import ACTIONS
from ragindex.pipeline.sync import IngestReport
from ragindex.retrieval.drift import score_report
from ragindex.service.asgi import HttpMiddleware
from ragindex.service.store import JobRow
from ragindex.store.protocol import ChunkStore, ReconcileStore, ScoreStatsStore

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


class _ReconcileCollector(Collector):
    """The reconciler's totals (every process's, from the truth store) and this process's passes."""

    def __init__(self, store: ReconcileStore, passes: Callable[[], Mapping[str, int] | None]) -> None:
        self.store = store
        self.passes = passes

    def collect(self) -> Iterator[Metric]:
        actions = CounterMetricFamily(
            "ragindex_reconcile_actions", "Reconciler actions by every process (chunks or documents)", labels=["action"]
        )
        try:
            totals = self.store.reconcile_totals()
        except Exception:  # a scrape must not fail because the store is briefly unavailable
            log.warning("reconciler totals unavailable for /metrics", exc_info=True)
            totals = None
        for action in ACTIONS:
            actions.add_metric([action], totals.actions.get(action, 0) if totals else 0)
        yield actions
        yield CounterMetricFamily(
            "ragindex_reconcile_retry_failures",
            "Chunks a reconciler retry failed again",
            value=totals.retry_failed if totals else 0,
        )
        yield CounterMetricFamily(
            "ragindex_reconcile_passes", "Reconciler passes by every process", value=totals.passes if totals else 0
        )
        if totals is not None and totals.last_pass_at is not None:
            yield GaugeMetricFamily(
                "ragindex_reconcile_last_pass_timestamp_seconds",
                "Unix time of the last reconciler pass (any process)",
                value=totals.last_pass_at.replace(tzinfo=UTC).timestamp(),
            )
            yield GaugeMetricFamily(
                "ragindex_reconcile_last_pass_duration_seconds",
                "Duration of the last reconciler pass",
                value=(totals.last_pass_ms or 0.0) / 1000,
            )
        local = self.passes()
        if local is not None:
            passes = CounterMetricFamily(
                "ragindex_reconcile_process_passes",
                "This process's reconciler passes: done (it held the lock), skipped (another process did), error",
                labels=["outcome"],
            )
            for outcome, n in sorted(local.items()):
                passes.add_metric([outcome], n)
            yield passes


class _ScoreCollector(Collector):
    """The score-drift watch's windows (every process's searches), read at scrape time."""

    def __init__(self, store: ScoreStatsStore, max_shift: float) -> None:
        self.store = store
        self.max_shift = max_shift

    def collect(self) -> Iterator[Metric]:
        labels = ["source", "fingerprint"]
        scores = GaugeMetricFamily(
            "ragindex_search_score",
            "Search score quantiles of the last closed window (top1: best score; top10: the first ten)",
            labels=[*labels, "metric", "quantile"],
        )
        shifts = GaugeMetricFamily(
            "ragindex_search_score_shift",
            "Relative change of the median top-1 score of the last closed window against the reference window",
            labels=labels,
        )
        drift = GaugeMetricFamily(
            "ragindex_search_score_drift", "1 when the shift is beyond RAGINDEX_DRIFT_MAX_SHIFT", labels=labels
        )
        searches = GaugeMetricFamily(
            "ragindex_search_score_searches",
            "Searches counted in the window that ragindex_search_score shows",
            labels=labels,
        )
        try:
            report = score_report(self.store.score_windows(), self.max_shift)
        except Exception:  # a scrape must not fail because the store is briefly unavailable
            log.warning("search score windows unavailable for /metrics", exc_info=True)
            report = []
        for entry in report:
            key = [entry["source"], entry["fingerprint"]]
            window = entry["last_closed"] or entry["reference"] or entry["current"]
            searches.add_metric(key, window["queries"])
            for metric in ("top1", "top10"):
                for name, quantile in (("p10", "0.1"), ("p50", "0.5"), ("p90", "0.9")):
                    value = window[metric][name]
                    if value is not None:
                        scores.add_metric([*key, metric, quantile], value)
            if entry["shift"] is not None:
                shifts.add_metric(key, entry["shift"])
                drift.add_metric(key, 1 if entry["drift"] else 0)
        yield scores
        yield searches
        yield shifts
        yield drift


class Metrics:
    """The app's metrics.

    Args:
        store: Truth store read at scrape time.
        kinds: Enabled vector kinds.
        jobs: Returns (queued jobs, whether a job runs).
        reconcile: Where the reconciler's totals are read (None: no reconciler metrics).
        reconcile_passes: This process's passes by outcome (None while its reconciler does not run).
        scores: Where the score-drift watch's windows are read (None: no search score metrics).
        max_shift: ``RAGINDEX_DRIFT_MAX_SHIFT``.
    """

    def __init__(
        self,
        store: ChunkStore,
        kinds: tuple[str, ...],
        jobs: Callable[[], tuple[int, bool]],
        *,
        reconcile: ReconcileStore | None = None,
        reconcile_passes: Callable[[], Mapping[str, int] | None] = lambda: None,
        scores: ScoreStatsStore | None = None,
        max_shift: float = 0.2,
    ) -> None:
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
        self.degraded = Counter(
            "ragindex_search_degraded",
            "Searches answered without a source that failed (on_source_error=degrade), by that source",
            ["source"],
            registry=self.registry,
        )
        for kind in kinds:  # a series per source from the start, so that rate() and alerts see 0, not nothing
            self.degraded.labels(kind)
        self.registry.register(_StoreCollector(store, kinds, jobs))
        if reconcile is not None:
            self.registry.register(_ReconcileCollector(reconcile, reconcile_passes))
        if scores is not None:
            self.registry.register(_ScoreCollector(scores, max_shift))

    def observe(self, route: str, method: str, status: int, started: float) -> None:
        """Record one request."""
        self.latency.labels(route, method, str(status)).observe(time.perf_counter() - started)

    def search_done(self, degraded: Mapping[str, str]) -> None:
        """Count the sources a search left out because they failed."""
        for source in degraded:
            self.degraded.labels(source).inc()

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


class MetricsMiddleware(HttpMiddleware):
    """Pure ASGI middleware timing every HTTP request by its route template (not its raw path)."""

    def __init__(self, app: Any, metrics: Callable[[], Metrics | None]) -> None:
        super().__init__(app)
        self.metrics = metrics

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Time one HTTP request."""
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
