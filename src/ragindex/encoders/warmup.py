"""Load the dense model while an ingest is still parsing: model load overlaps chunking.

Files are parsed in a child process (:class:`~ragindex.loaders.isolated.IsolatedParser`), so the
ingest's own process mostly waits during chunking. Importing torch and loading the model take
seconds (the ONNX Runtime session a fraction of one), and they used to start only once the last
file was chunked. :class:`EncoderWarmup` starts them on a daemon thread as soon as the ingest has
staged a chunk to embed: torch and sentence-transformers are imported there (the model itself is built by
the first encode, in the encoding thread, which keeps torch's per-thread limit where it was), and ONNX
Runtime's session is built there. The encode waits for a session build under way (the light encoder's
lock), never building it twice.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ragindex.encoders.protocol import DenseEncoder, DocumentRouter

log = logging.getLogger(__name__)


class EncoderWarmup:
    """Warms the runtime an ingest will encode with, on a daemon thread, once the ingest knows it will embed.

    A :class:`~ragindex.encoders.protocol.DocumentRouter` is warmed for the number of chunks staged so
    far: ONNX Runtime for a few chunks, torch once the count passes the router's bulk boundary (each at
    most once, so a growing ingest may warm both). Any other encoder is warmed once. Warming only logs a
    failure (at debug level): the encode itself raises it, with its context.

    Args:
        encoder: Builds (or returns) the dense encoder; building it must load nothing (the engine's does not).
    """

    def __init__(self, encoder: Callable[[], DenseEncoder]) -> None:
        self._encoder = encoder
        self._warmed: set[bool] = set()  # runtimes warmed: bulk (True) or small-ingest (False)
        self.threads: list[threading.Thread] = []  # an ingest never joins them: an encode waits for a build under way

    def expect(self, chunks: int) -> None:
        """The ingest has staged ``chunks`` new chunks so far: warm the runtime that many chunks would use."""
        if chunks <= 0:
            return
        encoder = self._encoder()
        bulk = encoder.bulk(chunks) if isinstance(encoder, DocumentRouter) else True
        if bulk in self._warmed:
            return
        self._warmed.add(bulk)
        thread = threading.Thread(target=self._warm, args=(encoder, chunks), name="ragindex-warmup", daemon=True)
        self.threads.append(thread)
        thread.start()

    @staticmethod
    def _warm(encoder: DenseEncoder, chunks: int) -> None:
        try:
            target = encoder.for_documents(chunks) if isinstance(encoder, DocumentRouter) else encoder
            prepare = getattr(target, "prepare_runtime", None)
            if callable(prepare):  # torch: imports only (the encoding thread builds the model, see its docstring)
                prepare()
            else:  # ONNX Runtime builds its session here; a remote encoder learns its dimension
                _ = target.dimension
        except Exception as exc:  # the encode raises it again where it can be reported
            log.debug("warming the dense encoder failed: %s", exc)
