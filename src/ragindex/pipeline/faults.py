"""Named failpoints at every boundary of the pipeline, for the fault-injection suite.

A failpoint does nothing unless it is armed, either in-process (:func:`arm`) or for a
subprocess through ``RAGINDEX_FAILPOINTS="dense.after_encode=raise,purge.before_truth=kill"``.
``raise`` raises :class:`InjectedFault`; ``kill`` sends SIGKILL to the current process,
which is how the suite proves that a crash at that instruction loses nothing; ``crash`` raises
:class:`InjectedCrash`, an exception outside the ragindex hierarchy, as a bug would; ``stop`` sends
SIGSTOP (the process freezes there until a SIGCONT, like a paused VM, and then goes on); ``sigint`` and
``sigterm`` send that signal to the process itself (Ctrl-C or a service manager's stop, at that instruction).
"""

from __future__ import annotations

import os
import signal
import threading

from ragindex.errors import RagindexError

POINTS = (
    "dense.after_claim",
    "dense.after_encode",
    "dense.after_index_write",
    "dense.before_mark_success",
    "bm25.after_claim",
    "bm25.after_encode",
    "bm25.after_index_write",
    "bm25.before_mark_success",
    "sparse.after_claim",
    "sparse.after_encode",
    "sparse.after_index_write",
    "sparse.before_mark_success",
    "chunking.after_truth_write",
    "relabel.after_truth_write",
    "purge.after_index_delete",
    "purge.before_index_delete",
    "import.after_check",
    "import.after_catalogue",
    "import.after_documents",
    "import.after_parsed",
    "import.after_chunks",
    "import.after_vectors",
    "import.after_index",
    "import.after_verify",
)

_armed: dict[str, str] = {}
_SIGNALS = {"sigint": signal.SIGINT, "sigterm": signal.SIGTERM}


class InjectedFault(RagindexError):
    """Raised by an armed failpoint (tests only)."""


class InjectedCrash(RuntimeError):
    """Raised by a failpoint armed with ``crash``: an unexpected error, not a :class:`RagindexError` (tests only)."""


def _from_env() -> dict[str, str]:
    spec = os.environ.get("RAGINDEX_FAILPOINTS", "")
    out: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        name, _, action = item.partition("=")
        out[name] = action or "raise"
    return out


STOP_GUARD = threading.Lock()
"""Held by ``stop`` from just before its SIGSTOP until the process resumes, and by the lease's renewal (a short
transaction on the owner's row), so a stop never freezes that transaction with the row locked. A repair run while
the process is stopped would wait on that lock for as long as the process stays stopped; the failpoint is there to
prove that a paused process's lapsed lease is taken over, not that a frozen database session is (the server's
``idle_in_transaction_session_timeout`` is the remedy for that)."""


def arm(name: str, action: str = "raise") -> None:
    """Arm failpoint ``name`` in this process with an action: raise, crash, kill, stop, sigint or sigterm."""
    if name not in POINTS:
        raise ValueError(f"unknown failpoint {name!r}; valid: {', '.join(POINTS)}")
    _armed[name] = action


def disarm_all() -> None:
    """Disarm every in-process failpoint."""
    _armed.clear()


def hit(name: str) -> None:
    """Pass failpoint ``name``: a no-op unless armed."""
    action = _armed.get(name)
    if action is None and "RAGINDEX_FAILPOINTS" in os.environ:
        action = _from_env().get(name)
    if action is None:
        return
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if action == "crash":
        raise InjectedCrash(f"injected crash at {name}")
    if action == "stop":
        with STOP_GUARD:
            os.kill(os.getpid(), signal.SIGSTOP)
        return
    if action in _SIGNALS:  # the process's own handler decides (the CLI stops at its next safe point)
        os.kill(os.getpid(), _SIGNALS[action])
        return
    raise InjectedFault(f"injected fault at {name}", failpoint=name)
