"""One Engine per data dir per process: a reference-counted registry that embedded entry points share.

An embedded index (Qdrant Edge under ``<data_dir>/index``) has one owner: its ``flock`` is per open file, so a
second :class:`~ragindex.Engine` on the same data dir fails with :class:`~ragindex.errors.IndexLockedError` even
inside the process that holds the first. Code that opens several entry points on one data dir (two LangChain
retrievers, a retriever and a vector store, a LlamaIndex router) asks this module instead:

>>> from ragindex.shared import shared_engine            # doctest: +SKIP
>>> with shared_engine(data_dir=".ragindex") as engine:  # doctest: +SKIP
...     engine.search("which moon is the largest", user_id=1, set_id=1)

Each :func:`shared_engine` call is one lease on the engine of its resolved data dir; the engine is built by the
first lease and closed when the last lease closes. Every lease of one data dir must bring equal settings (a second
lease with other settings is refused, naming the data dir: one process cannot serve one index two ways). The
LangChain and LlamaIndex integrations take their engine from here when given ``data_dir=`` or ``settings=``.

Different processes keep the one-owner rule: a second process still gets ``IndexLockedError`` naming the owner.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ragindex.closing import Closing
from ragindex.errors import ValidationError

if TYPE_CHECKING:
    from ragindex.config.settings import Settings
    from ragindex.engine import Engine

__all__ = ["SharedEngine", "shared_engine", "shared_count"]


@dataclass
class _Entry:
    engine: Engine
    settings: Settings
    leases: int = 0


_lock = threading.Lock()
_entries: dict[Path, _Entry] = {}


def _key(settings: Settings) -> Path:
    return Path(settings.data_dir).expanduser().resolve()


class SharedEngine(Closing):
    """One lease on the process's engine of a data dir; :meth:`close` gives it back (once; again is a no-op).

    ``engine`` is the shared :class:`~ragindex.Engine`: use it, never close it yourself (the last lease does).
    Use as a context manager (``with shared_engine(...) as engine``) or keep it and call :meth:`close`.
    """

    def __init__(self, key: Path, entry: _Entry) -> None:
        self._key = key
        self._entry: _Entry | None = entry
        self.engine: Engine = entry.engine

    @property
    def closed(self) -> bool:
        """Whether this lease was given back."""
        return self._entry is None

    def __enter__(self) -> Engine:  # type: ignore[override]
        return self.engine

    def close(self) -> None:
        """Give back this lease; the engine closes (its index lock released) when no lease is left."""
        with _lock:
            entry, self._entry = self._entry, None
            if entry is None:
                return
            entry.leases -= 1
            if entry.leases > 0:
                return
            if _entries.get(self._key) is entry:
                del _entries[self._key]
        entry.engine.close()  # outside the registry lock: closing may wait for a running search


def shared_engine(settings: Settings | None = None, *, data_dir: str | Path | None = None) -> SharedEngine:
    """A lease on this process's engine of ``settings.data_dir`` (or ``data_dir``), built by the first lease.

    Args:
        settings: The engine's settings (default: from the environment, with ``data_dir`` when given).
        data_dir: The data dir, when ``settings`` is not given.

    Raises:
        ValidationError: Both ``settings`` and ``data_dir``; or settings unlike those of the engine already
            shared for that data dir.
    """
    from ragindex.config.settings import Settings

    if settings is not None and data_dir is not None:
        raise ValidationError("data_dir", "give settings or data_dir, not both (settings.data_dir is the dir)")
    if settings is None:
        settings = Settings(data_dir=Path(data_dir).expanduser()) if data_dir is not None else Settings()
    key = _key(settings)
    with _lock:
        entry = _entries.get(key)
        if entry is not None and entry.settings != settings:
            raise ValidationError(
                "settings",
                f"this process already shares an Engine of the data dir {key} with other settings; one process "
                "serves one index one way: give every entry point of this data dir the same settings, or pass the "
                "same engine= to each",
            )
        if entry is None:
            from ragindex.engine import Engine

            entry = _Entry(Engine(settings), settings)
            _entries[key] = entry
        entry.leases += 1
        return SharedEngine(key, entry)


def shared_count(data_dir: str | Path) -> int:
    """How many leases this process holds on the shared engine of ``data_dir`` (0: none is open)."""
    with _lock:
        entry = _entries.get(Path(data_dir).expanduser().resolve())
        return entry.leases if entry is not None else 0
