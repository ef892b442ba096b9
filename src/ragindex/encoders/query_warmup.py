"""Build the dense query encoder and its runtime on a daemon thread, while the rest of a one-shot search starts.

A one-shot ``ragindex search`` must import the engine, open the store and the index (~0.3 s of Python holding the
GIL) and build the query encoder's ONNX Runtime session (~0.2 s, mostly in C++ without the GIL). Started before the
engine's modules are imported, the session's build overlaps all of that instead of half of it. This module imports
nothing heavy itself (NumPy and ONNX Runtime are imported on the thread).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from ragindex.config.sources import parse_sources
from ragindex.types import VectorKind

if TYPE_CHECKING:
    from ragindex.config.settings import Settings
    from ragindex.encoders.protocol import DenseEncoder

log = logging.getLogger(__name__)


class QueryWarmUp:
    """A dense encoder built, then its query runtime built (``prepare_queries``), on a daemon thread started now.

    A failure only logs (at debug level): :meth:`encoder` builds the encoder again where its error can be reported,
    and the first query encode builds a runtime that failed here, raising its error with its context.

    Args:
        build: Builds the dense encoder (loading no model: the runtime is built by ``prepare_queries``).
    """

    def __init__(self, build: Callable[[], DenseEncoder]) -> None:
        self._build = build
        self._built = threading.Event()
        self.built: DenseEncoder | None = None  # set once the thread has built it
        self.thread = threading.Thread(target=self._run, name="ragindex-query-warm-up", daemon=True)
        self.thread.start()

    def encoder(self) -> DenseEncoder:
        """The encoder: waits for its build (not for its runtime's, which its first encode waits for)."""
        self._built.wait()
        return self.built if self.built is not None else self._build()

    def join(self, timeout: float | None = None) -> None:
        """Wait until the runtime is built (or its build failed)."""
        self.thread.join(timeout)

    def _run(self) -> None:
        try:
            self.built = self._build()
        except Exception as exc:
            log.debug("building the query encoder failed: %s", exc)
            return
        finally:
            self._built.set()
        try:
            prepare = getattr(self.built, "prepare_queries", None)
            if callable(prepare):
                prepare()
        except Exception as exc:
            log.debug("warming the query encoder failed: %s", exc)


def start_query_warm_up(settings: Settings) -> QueryWarmUp | None:
    """A :class:`QueryWarmUp` of the configured dense encoder; None when searches do not use dense.

    Dense is used unless ``RAGINDEX_RECALL_ENABLED_SOURCES`` leaves it out (a bad value is the search's to report).
    """
    enabled = settings.recall_enabled_sources
    try:
        if enabled is not None and VectorKind.DENSE not in parse_sources(enabled):
            return None
    except ValueError:
        return None
    from ragindex import factory

    return QueryWarmUp(lambda: factory.build_dense_encoder(settings))
