"""Stop requests that a running operation honours at its safe points (before each file, before each batch).

A stop never interrupts a write half way: the operation checks at a boundary where it holds no claim, raises
:class:`~ragindex.errors.Interrupted` there, and whatever it committed stays (see :mod:`ragindex.pipeline.cancel`
for what a stopped ingest leaves and how the next ingest or ``repair`` finishes it).

Two kinds of request reach the same checks. :meth:`StopSignal.set` stops every operation of an engine (SIGINT,
SIGTERM, ``Engine.request_stop``). :func:`operation_stop` binds an event to the operation running in the current
thread (context), so setting it stops that one operation only: :class:`~ragindex.aio.AsyncEngine` uses it when the
task awaiting an ingest is cancelled, while the other calls sharing the engine go on.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

_operation: ContextVar[threading.Event | None] = ContextVar("ragindex_operation_stop", default=None)


class StopFlag(Protocol):
    """What a stop check reads (a :class:`threading.Event` is one)."""

    def is_set(self) -> bool:
        """Whether the running operation must stop at its next safe point."""
        ...


class StopSignal:
    """An engine's stop flag: set for all its operations, or set for the one operation of the current context."""

    def __init__(self) -> None:
        self._all = threading.Event()

    def set(self) -> None:
        """Stop every operation of the engine at its next safe point (safe in a signal handler)."""
        self._all.set()

    def is_set(self) -> bool:
        """Whether the engine was stopped, or the operation of the current context was (see :func:`operation_stop`)."""
        if self._all.is_set():
            return True
        mine = _operation.get()
        return mine is not None and mine.is_set()


@contextmanager
def operation_stop(event: threading.Event) -> Iterator[None]:
    """Within the block, ``event`` stops the operation running in this context (besides the engine's own stop)."""
    token = _operation.set(event)
    try:
        yield
    finally:
        _operation.reset(token)
