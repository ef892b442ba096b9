"""Distributed ingest over a real broker: Dramatiq with Redis or RabbitMQ.

Two sides share the messages defined here:

* the service (or any system that sends parse tasks) records a job row in the truth store and
  enqueues ``ragindex_ingest(job_id, user_id, set_id, paths)`` on ``queue_name``
  (:class:`IngestQueue`);
* ``ragindex worker`` processes (:func:`run_worker`) consume that queue, each with its own
  :class:`~ragindex.engine.Engine` over the shared truth store and the shared Qdrant cluster, run
  the ingest, move the job row ``running`` -> ``succeeded``/``failed`` and publish one
  ``document_result`` event per document (:mod:`ragindex.service.document_events`), then the job's
  ``parse_result`` event (:mod:`ragindex.service.events`), each as a message whose actor is the event's
  name on ``result_queue`` and, when configured, to the webhook (:class:`EventPublisher`);
* each worker also runs the periodic reconciler (:mod:`ragindex.pipeline.reconcile`); the database lock
  lets one process at a time act.

The messages are ordinary Dramatiq messages (JSON: ``queue_name``, ``actor_name``, ``args``,
``kwargs``, ``message_id``...): any Dramatiq program can send tasks or consume results, and on
RabbitMQ they are plain persistent AMQP messages on durable queues of those names.

Redelivery is harmless: a job whose row is already ``succeeded`` or ``failed`` is acknowledged
without running again (its event is published again, so a worker that died between the row and
the event still notifies); a ``running`` job is run again (a worker died mid-job), and ingest is
idempotent by content hash, with chunk claims in the truth store keeping two workers from
indexing the same chunk. The broker redelivers the job of a worker that died without counting a retry
(``max_retries`` counts exceptions only), so the job row counts its starts: a ``running`` job that has
used up ``RAGINDEX_JOB_MAX_STARTS`` starts is failed with that reason and acknowledged instead of killing
one worker after another.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ragindex._optional import require
from ragindex.errors import BackendError, ConfigurationError, NotFoundError
from ragindex.service.cancel import CancelCheck, JobCancelled, finish_cancelled
from ragindex.service.document_events import DOCUMENT_EVENT, job_document_events
from ragindex.service.events import Webhook, parse_result
from ragindex.service.job_state import FINISHED, JobState, crash_looped, give_up, outcome
from ragindex.service.record_jobs import discard_batch, run_job
from ragindex.service.settings import ServiceSettings

if TYPE_CHECKING:
    from dramatiq import Broker, Message

    from ragindex.config.settings import Settings
    from ragindex.engine import Engine
    from ragindex.service.store import JobRow, JobStore
    from ragindex.store.protocol import TruthStore

log = logging.getLogger(__name__)

INGEST_ACTOR = "ragindex_ingest"
RESULT_ACTOR = "parse_result"
DOCUMENT_ACTOR = DOCUMENT_EVENT


def build_broker(url: str) -> Broker:
    """A Dramatiq broker for ``redis://``, ``rediss://`` or ``amqp://``, ``amqps://`` URLs."""
    scheme = urlsplit(url).scheme.lower()
    if scheme in ("redis", "rediss", "unix"):
        require("workers", "a Redis broker (RAGINDEX_QUEUE_URL)", "dramatiq", "redis")
        from dramatiq.brokers.redis import RedisBroker

        return RedisBroker(url=url)  # type: ignore[no-untyped-call]
    if scheme in ("amqp", "amqps"):
        require("workers", "a RabbitMQ broker (RAGINDEX_QUEUE_URL)", "dramatiq", "pika")
        from dramatiq.brokers.rabbitmq import RabbitmqBroker

        return RabbitmqBroker(url=url)
    raise ConfigurationError(f"RAGINDEX_QUEUE_URL: unsupported broker {scheme or url!r} (use redis:// or amqp://)")


def ingest_message(queue_name: str, *, job_id: str, user_id: int, set_id: int, paths: Sequence[str]) -> Message[Any]:
    """The broker message of one ingest job."""
    from dramatiq import Message

    kwargs = {"job_id": job_id, "user_id": user_id, "set_id": set_id, "paths": [str(p) for p in paths]}
    return Message(queue_name=queue_name, actor_name=INGEST_ACTOR, args=(), kwargs=kwargs, options={})


def result_message(queue_name: str, event: dict[str, Any]) -> Message[Any]:
    """The broker message of one event (its only argument); the actor is the event's name.

    ``parse_result`` (a job) or ``document_result`` (a document): a Dramatiq consumer declares one actor each.
    """
    from dramatiq import Message

    actor = str(event.get("event") or RESULT_ACTOR)
    return Message(queue_name=queue_name, actor_name=actor, args=(event,), kwargs={}, options={})


class EventPublisher:
    """Sends events to a broker's result queue and POSTs them to the webhook; either may be absent.

    Args:
        broker: The broker (None: events go to the webhook only).
        result_queue: The queue the events go to on that broker.
        webhook: The webhook (None: none).
        owns_broker: Close the broker in :meth:`close` (it was opened for the events alone).
    """

    def __init__(
        self, broker: Broker | None, result_queue: str, webhook: Webhook | None, *, owns_broker: bool = False
    ) -> None:
        self.broker = broker
        self.result_queue = result_queue
        self.webhook = webhook
        self.owns_broker = owns_broker

    @classmethod
    def from_settings(cls, service: ServiceSettings, broker: Broker | None = None) -> EventPublisher:
        """The events of ``RAGINDEX_EVENTS_URL`` (default ``RAGINDEX_QUEUE_URL``), ``RAGINDEX_RESULT_QUEUE``, webhook.

        ``broker``: an open connection to ``RAGINDEX_QUEUE_URL`` to reuse (a worker's) when no events URL is set.
        """
        owns = False
        if service.events_url:
            broker, owns = build_broker(service.events_url), True
        elif broker is None and service.queue_url:
            broker, owns = build_broker(service.queue_url), True
        webhook = (
            Webhook(service.webhook_url, timeout=service.webhook_timeout, attempts=service.webhook_attempts)
            if service.webhook_url
            else None
        )
        return cls(broker, service.result_queue, webhook, owns_broker=owns)

    @property
    def active(self) -> bool:
        """Whether events go anywhere."""
        return self.broker is not None or self.webhook is not None

    def publish(self, event: dict[str, Any]) -> None:
        """Send one event to the result queue (a broker error raises) and then to the webhook (never raises)."""
        if self.broker is not None:
            self.broker.enqueue(result_message(self.result_queue, event))
        if self.webhook is not None:
            self.webhook.send(event)

    def publish_job(self, store: TruthStore, job: JobRow) -> None:
        """A finished job's ``document_result`` events, then its ``parse_result`` event."""
        for event in job_document_events(
            store, job_id=job.job_id, user_id=job.user_id, set_id=job.set_id, files=job.files, report=job.report
        ):
            self.publish(event)
        self.publish(parse_result(job))

    def close(self) -> None:
        """Close the webhook client, and the broker when it was opened for the events."""
        if self.webhook is not None:
            self.webhook.close()
        if self.owns_broker and self.broker is not None:
            self.broker.close()


class IngestQueue:
    """The sending side: enqueue ingest jobs whose rows are already recorded.

    Args:
        broker: The broker (see :func:`build_broker`).
        queue_name: The queue the workers consume.
    """

    def __init__(self, broker: Broker, queue_name: str) -> None:
        self.broker = broker
        self.queue_name = queue_name

    @classmethod
    def from_settings(cls, service: ServiceSettings) -> IngestQueue:
        """The queue of ``RAGINDEX_QUEUE_URL`` / ``RAGINDEX_QUEUE_NAME``."""
        if not service.queue_url:
            raise ConfigurationError("RAGINDEX_QUEUE_URL is not set")
        return cls(build_broker(service.queue_url), service.queue_name)

    def enqueue(self, job_id: str, user_id: int, set_id: int, paths: Sequence[str | Path]) -> None:
        """Send one ingest job; BackendError when the broker cannot be reached."""
        message = ingest_message(
            self.queue_name, job_id=job_id, user_id=user_id, set_id=set_id, paths=list(map(str, paths))
        )
        try:
            self.broker.enqueue(message)
        except Exception as exc:  # redis / pika errors: the broker is the backend here
            raise BackendError(f"could not enqueue job {job_id} on {self.queue_name}: {exc}") from exc
        log.info("job %s enqueued on %s", job_id, self.queue_name)

    def close(self) -> None:
        """Close the broker connections."""
        self.broker.close()


def submit_ingest(
    store: JobStore, queue: IngestQueue, *, job_id: str, user_id: int, set_id: int, paths: Sequence[str | Path]
) -> str:
    """Record a queued job row, then enqueue it (a broker failure marks the row failed and raises)."""
    store.create_job(
        job_id, user_id=user_id, set_id=set_id, kind="ingest", status=JobState.QUEUED, files=[str(p) for p in paths]
    )
    try:
        queue.enqueue(job_id, user_id, set_id, paths)
    except BackendError as exc:
        store.set_job_status(job_id, JobState.FAILED, finished=True, error=exc.message)
        raise
    return job_id


class JobHandler:
    """Runs the ingest jobs of one worker process with its own engine and publishes their events.

    Args:
        engine: The worker's engine (shared truth store + shared Qdrant).
        store: Where jobs are recorded (the service's own store, in the shared database).
        broker: Where the result events go.
        service: Queue, webhook and time-limit settings.
    """

    def __init__(self, engine: Engine, broker: Broker, service: ServiceSettings, store: JobStore) -> None:
        self.engine = engine
        self.store = store
        self.broker = broker
        self.events = EventPublisher.from_settings(service, broker)
        self.max_starts = service.job_max_starts

    def __call__(self, job_id: str, user_id: int, set_id: int, paths: list[str]) -> None:
        """Handle one delivery of a job (the Dramatiq actor)."""
        try:
            job = self.store.get_job(job_id)
        except NotFoundError:
            # a task sent by another system without a job row: record it now
            self.store.create_job(
                job_id, user_id=user_id, set_id=set_id, kind="ingest", status=JobState.QUEUED, files=list(paths)
            )
            job = self.store.get_job(job_id)
        if job.status == JobState.CANCELLING:  # its worker died while stopping it
            finish_cancelled(self.store, self.engine.store, job_id, self.engine.kinds)
            job = self.store.get_job(job_id)
        if crash_looped(job, self.max_starts):  # redelivered after each of its workers died under it
            log.error("job %s: its worker ended under it %d times; failed, not run again", job_id, job.starts)
            give_up(self.store, self.engine.store, job, self.engine.kinds, self.max_starts)
            job = self.store.get_job(job_id)
        if job.status in FINISHED:
            log.info("job %s was already %s: acknowledged, not run again", job_id, job.status)
            self.events.publish_job(self.engine.store, job)
            return
        self._run(job_id, job.user_id, job.set_id, list(job.files) or list(paths))
        self.events.publish_job(self.engine.store, self.store.get_job(job_id))

    def _run(self, job_id: str, user_id: int, set_id: int, files: list[str]) -> None:
        from dramatiq.middleware.time_limit import TimeLimitExceeded

        active = [JobState.RUNNING, JobState.CANCELLING]
        # a redelivered job may be RUNNING (its worker died); one cancelled since it was read does not start
        if not self.store.set_job_status(
            job_id, JobState.RUNNING, started=True, expected=[JobState.QUEUED, JobState.RUNNING]
        ):
            return
        started = time.perf_counter()
        try:
            job = self.store.get_job(job_id)
            report = run_job(
                self.engine,
                kind=job.kind,
                files=files,
                user_id=user_id,
                set_id=set_id,
                job_id=job_id,
                progress=CancelCheck(self.store, job_id),
            )
        except JobCancelled:
            log.info("job %s cancelled", job_id)
            finish_cancelled(self.store, self.engine.store, job_id, self.engine.kinds)
        except (Exception, TimeLimitExceeded) as exc:
            message = getattr(exc, "message", None) or str(exc) or "time limit exceeded"
            log.warning("job %s failed: %s: %s", job_id, type(exc).__name__, message)
            failure = f"{type(exc).__name__}: {message}"
            self.store.set_job_status(job_id, JobState.FAILED, finished=True, error=failure, expected=active)
        else:
            status, error = outcome(report)
            report_dict = report.to_dict()
            self.store.set_job_status(job_id, status, finished=True, report=report_dict, error=error, expected=active)
        finished = self.store.get_job(job_id)
        if finished.status in FINISHED:
            discard_batch(finished.kind, files)
        log.info("job %s done in %.1f s", job_id, time.perf_counter() - started)

    def publish(self, event: dict[str, Any]) -> None:
        """Send the event to the result queue (raises when the broker is down: the job is redelivered) and webhook."""
        self.events.publish(event)

    def close(self) -> None:
        """Close the webhook client (and an events-only broker)."""
        self.events.close()


def run_worker(
    settings: Settings,
    service: ServiceSettings,
    *,
    queue_name: str | None = None,
    threads: int = 1,
    stop: threading.Event,
) -> None:
    """Consume ingest jobs until ``stop`` is set, then finish the running job (up to ``job_shutdown_seconds``).

    Builds one broker connection and one engine for this process; the engine opens its index at
    once, so a misconfiguration fails here and not on the first job.
    """
    from dramatiq import Actor, Worker

    from ragindex.engine import Engine
    from ragindex.service.reconcile import start_reconciler
    from ragindex.service.store import SqlServiceStore

    if not service.queue_url:
        raise ConfigurationError("`ragindex worker` needs RAGINDEX_QUEUE_URL (redis://... or amqp://...)")
    queue_name = queue_name or service.queue_name
    broker = build_broker(service.queue_url)
    engine = Engine(settings)
    jobs = SqlServiceStore(settings.resolved_database_url)
    handler: JobHandler | None = None
    reconcile = None
    try:
        _ = engine.index, engine.dense, engine.chunker  # open the index now; threads share these objects
        handler = JobHandler(engine, broker, service, jobs)
        reconcile = start_reconciler(engine, handler.events)
        Actor(
            handler,
            broker=broker,
            actor_name=INGEST_ACTOR,
            queue_name=queue_name,
            priority=0,
            options={
                "max_retries": service.job_max_retries,
                "time_limit": int(service.job_time_limit_seconds * 1000),
                "min_backoff": 5_000,
                "max_backoff": 300_000,
            },
        )
        worker = Worker(broker, queues={queue_name}, worker_threads=threads)
        worker.queue_prefetch = threads  # hold no job another worker process could start now
        worker.start()
        log.info("worker consuming %s (%d thread(s)), results on %s", queue_name, threads, service.result_queue)
        stop.wait()
        log.info("worker stopping: finishing the running job")
        worker.stop(timeout=int(service.job_shutdown_seconds * 1000))
    finally:
        if reconcile is not None and not reconcile.stop(service.job_shutdown_seconds):
            log.warning("the reconciler's pass is still running at shutdown")
        if handler is not None:
            handler.close()
        broker.close()
        jobs.close()
        engine.close()
