"""The dense model's warm-up at start-up, and what ``/readyz`` says about it.

The service binds its port as soon as it owns the store and the index; the dense model (the light ONNX query
encoder, or the remote encoder's first answer) loads on a thread of its own meanwhile. So ``/healthz`` (liveness)
answers at once, and ``/readyz`` (readiness) is 503 with ``"dense": "loading"`` until a search will not wait for a
model load. A failed warm-up (a remote encoder that does not answer yet) is reported by ``/readyz`` and tried again
by its next probe, at most one attempt at a time.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from ragindex.errors import RagindexError
from ragindex.gc_freeze import freeze_heap

if TYPE_CHECKING:
    from ragindex.engine import Engine

log = logging.getLogger(__name__)

COLD = "not loaded: RAGINDEX_WARM_UP=false, the first search loads it"


class DenseWarmUp:
    """Loads the dense model on a daemon thread (``ragindex-warm-up``) and tells whether it is ready.

    Args:
        engine: The service's engine (its ``dense`` encoder is the one the searches use).
        enabled: ``RAGINDEX_WARM_UP``; False: nothing is loaded ahead, and :meth:`check` reports ready.
    """

    def __init__(self, engine: Engine, *, enabled: bool = True) -> None:
        self.engine = engine
        self.enabled = enabled
        self.error: str | None = None
        self.done = False
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start loading (no-op when disabled, loaded, or loading)."""
        if not self.enabled:
            return
        with self._lock:
            if self.done or (self._thread is not None and self._thread.is_alive()):
                return
            self._thread = threading.Thread(target=self._run, name="ragindex-warm-up", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            self.engine.dense.encode_queries(["warm up"])
        except RagindexError as exc:
            self.error = exc.message
            log.warning("dense encoder warm-up failed (the next /readyz probe tries again): %s", exc.message)
        except Exception as exc:  # a bug or a broken model: reported by /readyz, logged with its traceback
            self.error = f"{type(exc).__name__}: {exc}"
            log.exception("dense encoder warm-up failed")
        else:
            self.error = None
            freeze_heap()  # the model and the app are built: full collections no longer walk them
            self.done = True

    def check(self) -> tuple[bool, str]:
        """Whether searches are ready, and the ``dense`` line of ``/readyz`` (``ok``, ``loading`` or the error).

        After a failed attempt it starts the next one and reports the failure.
        """
        if not self.enabled:
            return True, COLD
        if self.done:
            return True, "ok"
        with self._lock:
            loading = self._thread is not None and self._thread.is_alive()
        if loading:
            return False, "loading"
        error = self.error or "loading"
        self.start()
        return False, error
