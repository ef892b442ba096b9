"""The reconciler loop of ``ragindex serve`` and ``ragindex worker``, and the events of the documents it finishes."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ragindex.pipeline.reconcile import PassReport, ReconcileLoop
from ragindex.service.document_events import document_events

if TYPE_CHECKING:
    from ragindex.engine import Engine
    from ragindex.service.queue import EventPublisher

log = logging.getLogger(__name__)


def start_reconciler(
    engine: Engine, events: EventPublisher | None, *, before_pass: Callable[[], None] | None = None
) -> ReconcileLoop | None:
    """Start the engine's reconciler every ``RAGINDEX_RECONCILE_INTERVAL_SECONDS`` (None when that is 0).

    Each document a pass finishes (closed run, recovered FAILED document) is announced with a ``document_result``
    event (``trigger: reconcile``) through ``events``.
    """
    interval = engine.settings.reconcile_interval_seconds
    if interval <= 0:
        log.info("the reconciler is off (RAGINDEX_RECONCILE_INTERVAL_SECONDS=0)")
        return None

    def announce(report: PassReport) -> None:
        if events is None or not events.active or not report.finished:
            return
        docs = [engine.store.get_document(doc_id) for doc_id in report.finished]
        for event in document_events(engine.store, docs, trigger="reconcile"):
            events.publish(event)

    loop = ReconcileLoop(engine.reconciler(), interval, on_pass=announce, before_pass=before_pass)
    loop.start()
    log.info("reconciler started: a pass every %.0f s (one process at a time acts)", interval)
    return loop
