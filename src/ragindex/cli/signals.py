"""SIGINT and SIGTERM as a clean stop of a CLI command.

The console script installs :data:`stops` before it runs a command. A signal then raises
:class:`Interrupted` in the main thread, which the command's ``engine_for`` answers by closing the
engine (releasing what it holds) and ``guarded`` by one line on stderr and exit code 130 or 143.

Where a command has safe points (``ingest`` and ``reindex --into`` report progress after each file
and each batch, when no claim is held), the first signal only asks for a stop and the command raises
at its next safe point; a second signal stops at once. Once a stop is under way further signals are
ignored, so the clean-up that releases claims is not itself interrupted.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from ragindex.errors import EXIT_SIGINT, EXIT_SIGTERM

_EXIT_CODES = {signal.SIGINT: EXIT_SIGINT, signal.SIGTERM: EXIT_SIGTERM}


class Interrupted(BaseException):
    """A stop asked by SIGINT or SIGTERM.

    A ``BaseException`` like ``KeyboardInterrupt``, so that ``except Exception`` in the pipeline
    (which turns a failed batch into FAILED chunks and goes on) does not swallow it.

    Args:
        signum: The signal that asked for the stop.

    Attributes:
        exit_code: 130 for SIGINT, 143 for SIGTERM (128 + the signal number).
        message: The one line the CLI prints on stderr.
    """

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.name = signal.Signals(signum).name
        self.exit_code = _EXIT_CODES.get(signal.Signals(signum), 128 + signum)
        how = "Ctrl-C, SIGINT" if signum == signal.SIGINT else self.name
        self.message = (
            f"interrupted ({how}): stopped cleanly, the work done so far is kept; run the same command again to finish"
        )
        super().__init__(self.message)


class StopSignals:
    """Turns SIGINT and SIGTERM into :class:`Interrupted`, at a safe point where the command has one."""

    def __init__(self) -> None:
        self.pending: int | None = None
        self._safe_sections = 0
        self._stopping = False
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        """Handle SIGINT and SIGTERM in this process (the main thread: signal handlers run there)."""
        for signum in _EXIT_CODES:
            self._previous[signum] = signal.signal(signum, self._on_signal)

    def restore(self) -> None:
        """Give SIGINT and SIGTERM back to the handlers from before :meth:`install`.

        For the servers (``serve``, ``encoder-server``): uvicorn shuts down gracefully on either
        signal, exits 0, and then re-raises the signal to the handler it found.
        """
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if self._stopping:
            return
        if self._safe_sections and self.pending is None:
            self.pending = signum
            again = "press Ctrl-C again" if signum == signal.SIGINT else "send SIGTERM again"
            # os.write: the handler may run in the middle of a rich console write
            os.write(2, f"stopping after the current file or batch ({again} to stop at once)\n".encode())
            return
        self._stop(signum)

    def _stop(self, signum: int) -> None:
        self._stopping = True
        raise Interrupted(signum)

    @contextmanager
    def safe_points(self) -> Iterator[None]:
        """Within this block a signal waits for the next :meth:`checkpoint` (a second one does not wait).

        A signal that arrives after the last checkpoint does not undo the finished work: leaving the
        block normally forgets it and the command ends as it would have.
        """
        self._safe_sections += 1
        try:
            yield
        finally:
            self._safe_sections -= 1
            if not self._safe_sections:
                self.pending = None

    def checkpoint(self) -> None:
        """A safe point: stop here if a signal asked for it."""
        if self.pending is not None and not self._stopping:
            self._stop(self.pending)


stops = StopSignals()
