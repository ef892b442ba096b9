"""One owner process for an embedded index: an exclusive ``flock`` on its directory, then ``owner.json``.

Qdrant Edge (and qdrant-client's local path) can be opened by one process at a time. The lock is taken
before anything else (before ``owner.json`` is written, before a shard is opened, and by the Engine before
anything is staged in the truth store), so the process that holds it is the only writer, and a second
process fails fast with the real owner's pid, command and start time instead of overwriting its record.
The kernel drops the lock when the holder dies, however it dies.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import sys
import threading
import time
from pathlib import Path

from ragindex.errors import IndexLockedError

log = logging.getLogger(__name__)

POLL_S = 0.05
"""How often a process waiting for the index lock tries again."""

LOCK_FILE = "owner.lock"
OWNER_FILE = "owner.json"


def command_line() -> str:
    """This process's command as a person would type it (``ragindex serve --port 8000``), cut to 300 characters."""
    argv = list(sys.argv) or ["python"]
    argv[0] = Path(argv[0]).name
    return " ".join(argv)[:300]


class IndexOwnership:
    """The exclusive, process-level lock on an embedded index directory and the record of its holder.

    Args:
        root: The index directory (``<data_dir>/index`` for Qdrant Edge, the qdrant-client local path).
        wait_s: How long :meth:`acquire` waits for another process to let go (``RAGINDEX_INDEX_LOCK_WAIT``); 0
            fails at once.
    """

    def __init__(self, root: Path, *, wait_s: float = 0.0) -> None:
        self.root = root
        self.wait_s = wait_s
        self._fd: int | None = None
        self._mutex = threading.Lock()

    @property
    def held(self) -> bool:
        """Whether this object holds the lock now."""
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock (once; again is a no-op), then record this process in ``owner.json``.

        Another process's lock is waited for up to ``wait_s`` seconds (a one-shot search holds it for well under a
        second), polled every :data:`POLL_S`; a lock of this same process is never waited for.

        Raises:
            IndexLockedError: Another process holds it; the message names that process and what to do.
        """
        with self._mutex:
            if self._fd is not None:
                return
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.root / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            deadline = time.monotonic() + self.wait_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if time.monotonic() >= deadline or self._held_here():
                        os.close(fd)
                        raise IndexLockedError(self.locked_message(), path=str(self.root)) from exc
                    time.sleep(POLL_S)
            self._fd = fd
            record = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "command": command_line(),
                "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            tmp = self.root / f".{OWNER_FILE}.{os.getpid()}"
            tmp.write_text(json.dumps(record))
            tmp.replace(self.root / OWNER_FILE)

    def release(self) -> None:
        """Remove this process's ``owner.json`` and drop the lock (a no-op when not held)."""
        with self._mutex:
            if self._fd is None:
                return
            try:
                if self.owner().get("pid") == os.getpid():
                    (self.root / OWNER_FILE).unlink()
            except OSError as exc:
                log.warning("could not remove %s: %s", self.root / OWNER_FILE, exc)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def _held_here(self) -> bool:
        """Whether the holder's record names this process (another Engine of it: waiting would never end)."""
        info = self.owner()
        return info.get("pid") == os.getpid() and info.get("host") == socket.gethostname()

    def owner(self) -> dict[str, object]:
        """The holder's record (pid, host, command, since); empty when there is none or it cannot be read."""
        try:
            data = json.loads((self.root / OWNER_FILE).read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def locked_message(self) -> str:
        """Why this process cannot use the index, naming the process that holds it."""
        info = self.owner()
        if self._held_here():
            return (
                f"the embedded index at {self.root} is held by another Engine of this same process (pid "
                f"{info['pid']}); it allows one Engine per process and nothing was written. Share that one: pass it "
                "as engine= (retrievers, vector stores), or open every entry point of this data dir with "
                "ragindex.shared.shared_engine(settings) (the LangChain and LlamaIndex integrations do so when "
                "given data_dir= or settings=), and close the first Engine before opening another."
            )
        holder = ""
        if info.get("pid"):
            holder = f" by process {info['pid']} ({info.get('command', '?')!r}, since {info.get('since', '?')})"
        waited = f" (waited {self.wait_s:g} s)" if self.wait_s else ""
        return (
            f"the embedded index at {self.root} is in use{holder}; it allows one owner process and nothing was "
            f"written{waited}. Wait for that process or stop it, send requests to it (e.g. the running `ragindex "
            "serve` or `ragindex watch --serve`), "
            "or use a Qdrant server (RAGINDEX_INDEX_BACKEND=qdrant, RAGINDEX_QDRANT_URL) for several processes."
        )
