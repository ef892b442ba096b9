"""``ragindex watch``: a resident sync of files and folders, driven by file events.

Events come from ``watchfiles`` (inotify on Linux, FSEvents on macOS, a poller elsewhere). A path that
changes is synced once it has been quiet for ``debounce`` seconds *and* its size and mtime did not move
since it was last looked at (:class:`ChangeBatcher`), so a file still being written is not indexed half
written. Each batch of due paths is one :meth:`Engine.ingest
<ragindex.engine.Engine.ingest>`: the files that exist are synced with the usual incremental rules (an
unchanged file is skipped by its hash, only new chunks are embedded), and the paths that are gone (deleted,
renamed away, a vanished folder) are passed as ``vanished``, so their documents are removed under the
mass-deletion guard of the watched folder that held them. Each outcome is reported as a :class:`Change`.

On start the watcher is running *before* the first sync of the watched paths, so nothing saved meanwhile is
missed. A watched folder that vanishes is handled as the deletion of its files (the guard decides); when it
comes back it is watched and synced again.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragindex.errors import ConfigurationError, InputError, Interrupted, MassDeleteError, RagindexError
from ragindex.results import json_fields

if TYPE_CHECKING:
    from ragindex.engine import Engine
    from ragindex.pipeline.report import IngestReport

log = logging.getLogger(__name__)

Stat = tuple[int, int, bool] | None  # (size, mtime_ns, is_dir); None: the path does not exist
Batch = set[tuple[Any, str]]  # watchfiles' (Change, path) pairs


def stat_of(path: Path) -> Stat:
    """The size, mtime and kind of ``path`` (None when it does not exist)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, os.path.isdir(path))


@dataclass(frozen=True, slots=True)
class Change:
    """One synced change, as ``ragindex watch`` prints it.

    Attributes:
        action: ``added``, ``changed``, ``rechunked``, ``retried``, ``moved``, ``removed``, ``unchanged``,
            ``skipped`` (empty, or no text), ``failed`` (the file's error) or ``refused`` (the mass-deletion
            guard kept the documents).
        path: The file (the folder, for ``refused``).
        source: The path a ``moved`` file came from.
        chunks: The file's chunks now (None for a removal).
        embedded: Vectors the encoder computed for the batch this change was synced in.
        latency_s: Seconds from the first event of the change to the end of its sync (it is searchable then).
        error: Why it failed or was refused.
        at: Wall-clock time of the end of the sync.
    """

    action: str
    path: str
    source: str | None = None
    chunks: int | None = None
    embedded: int | None = None
    latency_s: float = 0.0
    error: str | None = None
    at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """The JSON line of ``ragindex watch --json``."""
        return {
            **json_fields(self, rename={"action": "event", "latency_s": "latency_ms", "at": "time"}),
            "latency_ms": round(self.latency_s * 1000, 1),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.at)),
        }


@dataclass
class _Pending:
    first: float
    last: float
    stat: Stat


class ChangeBatcher:
    """Debounces file events: a path is due once quiet for ``quiet`` s with its size and mtime unchanged.

    Args:
        quiet: Seconds without an event, and between two equal stats, before a path is synced.
        clock: Monotonic seconds (a test passes a fake clock).
        stat: Reads a path's :data:`Stat` (a test passes a fake).
    """

    def __init__(
        self, quiet: float, *, clock: Callable[[], float] = time.monotonic, stat: Callable[[Path], Stat] = stat_of
    ) -> None:
        self.quiet = quiet
        self.clock = clock
        self.stat = stat
        self._pending: dict[Path, _Pending] = {}

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, path: Path) -> None:
        """An event on ``path``: (re)start its quiet period."""
        now = self.clock()
        held = self._pending.get(path)
        self._pending[path] = _Pending(held.first if held else now, now, self.stat(path))

    def due(self) -> dict[Path, float]:
        """The paths to sync now, each with the time of its first event; they leave the batcher.

        A path whose size or mtime moved since it was last looked at (a writer that is still writing without
        a new event reaching us yet) waits for another quiet period.
        """
        now = self.clock()
        out: dict[Path, float] = {}
        for path, held in list(self._pending.items()):
            if now - held.last < self.quiet:
                continue
            current = self.stat(path)
            if current != held.stat:
                held.stat, held.last = current, now
                continue
            out[path] = held.first
            del self._pending[path]
        return out


class Watcher:
    """Keeps (user_id, set_id) in sync with ``paths`` until stopped.

    Args:
        engine: The engine (it owns the embedded index for the watcher's lifetime).
        paths: Files and folders to watch (they must exist when the watcher starts).
        user_id: Tenant.
        set_id: Document set.
        debounce: Quiet seconds before a changed path is synced (see :class:`ChangeBatcher`).
        keep_missing: Never remove documents (deletions and moves away are ignored).
        allow_mass_delete: Let a batch remove more than ``RAGINDEX_MAX_REMOVE_FRACTION`` of a watched folder.
        on_change: Called with each synced :class:`Change`.
        stop: Set to end :meth:`run` (at its next tick, within ``tick`` s).
        checkpoint: Called at every tick and ingest progress event (the CLI's safe point for a signal).
        exclude: Directories never synced (the service's blob dir); the data dir is always excluded.
        tick: Seconds between looks at the debounce timers when no event arrives.
    """

    def __init__(
        self,
        engine: Engine,
        paths: Sequence[str | Path],
        *,
        user_id: int = 1,
        set_id: int = 1,
        debounce: float = 0.3,
        keep_missing: bool = False,
        allow_mass_delete: bool = False,
        on_change: Callable[[Change], None] = lambda _change: None,
        stop: threading.Event | None = None,
        checkpoint: Callable[[], None] = lambda: None,
        exclude: Sequence[Path] = (),
        tick: float = 0.1,
    ) -> None:
        from ragindex import factory

        if not paths:
            raise InputError("name the files or folders to watch")
        for raw in paths:
            if not str(raw).strip():
                raise InputError("an empty path was given; name the files or folders to watch (`.` for this folder)")
            if not Path(raw).expanduser().exists():
                raise InputError(f"path does not exist: {raw}", path=str(raw))
        self.engine = engine
        self.roots = [Path(p).expanduser().resolve() for p in paths]
        self.folders = [p for p in self.roots if p.is_dir()]
        self.files = [p for p in self.roots if p not in self.folders]
        self.user_id = user_id
        self.set_id = set_id
        self.keep_missing = keep_missing
        self.allow_mass_delete = allow_mass_delete
        self.on_change = on_change
        self.stop = stop or threading.Event()
        self.checkpoint = checkpoint
        self.tick = tick
        self.batcher = ChangeBatcher(debounce)
        self._supports = factory.build_loaders(engine.settings).supports
        own = [engine.settings.data_dir, *([engine.settings.qdrant_path] if engine.settings.qdrant_path else [])]
        self._skip = [p.expanduser().resolve() for p in (*own, *exclude)]

    # ------------------------------------------------------------------ which events count
    def wanted(self, path: Path, *, added: bool = True) -> bool:
        """Whether an event on ``path`` concerns a watched document (not a hidden entry, nor ragindex's own files).

        A file counts when it is a watched file or a supported file under a watched folder; a folder counts when it
        appears (``added``: moved in, or a watched folder that came back) or disappears.
        """
        if any(path == s or path.is_relative_to(s) for s in self._skip):
            return False
        if path in self.files:
            return True
        root = next((f for f in self.folders if path == f or path.is_relative_to(f)), None)
        if root is None:
            return False
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            return False
        if not path.exists():  # gone: a file, or a folder with files in it
            return True
        if path.is_dir():
            return added
        return path != root and self._supports(path)

    # ------------------------------------------------------------------ the loop
    def run(self, ready: Callable[[IngestReport], None] = lambda _report: None) -> None:
        """Watch, sync the watched paths once (then call ``ready``), and sync each due batch until :attr:`stop`.

        When a watched folder vanishes, comes back or is replaced, a new watcher is started on what exists; the old
        one's queued events are taken before it ends, and a folder that came back is synced as a folder.
        """
        synced = False
        events: Generator[Batch, None, None] | None = None
        last: dict[Path, tuple[int, int]] | None = None  # the folders the previous watcher covered
        while not self.stop.is_set():
            watched = self._identities()
            if not watched:  # every watched path is gone: wait for one to come back
                self._retire(events)
                events, last = None, {}
                self._wait_for(lambda: bool(self._identities()))
                continue
            fresh = self._events(list(watched))
            first = next(fresh, set())  # the watcher runs from here: a change made during the first sync is seen
            self._retire(events)
            events = fresh
            if last is not None:
                self._resync_replaced(last, watched)
            if not synced:
                ready(self._first_sync())
                synced = True
            for batch in itertools.chain([first], events):
                self.checkpoint()
                lost = self._take(batch, watched)
                due = self.batcher.due()
                if due:
                    self._sync(due)
                if lost or self._identities() != watched:  # a watched folder vanished, came back or was replaced
                    last = {p: i for p, i in watched.items() if p not in lost}
                    break

    def _take(self, batch: Batch, watched: dict[Path, tuple[int, int]]) -> set[Path]:
        """Queue the wanted paths of ``batch``; return the watched folders it deleted (their watch is gone)."""
        lost = set()
        for change, raw in batch:
            path = Path(raw)
            if path in watched and change.name == "deleted":
                lost.add(path)
            if self.wanted(path, added=change.name == "added"):
                self.batcher.add(path)
        return lost

    def _retire(self, events: Generator[Batch, None, None] | None) -> None:
        """Take what an old watcher still holds (it ran until the new one started), then end it."""
        if events is None:
            return
        self._take(next(events, set()), {})
        events.close()

    def _identities(self) -> dict[Path, tuple[int, int]]:
        """The (device, inode) of each folder to watch that exists (a folder replaced by another has a new one)."""
        out: dict[Path, tuple[int, int]] = {}
        for path in self._targets():
            try:
                st = path.stat()
            except OSError:
                continue
            out[path] = (st.st_dev, st.st_ino)
        return out

    def _resync_replaced(self, before: dict[Path, tuple[int, int]], now: dict[Path, tuple[int, int]]) -> None:
        """Queue a sync of each watched path whose folder came back or was replaced: its new files had no event.

        A folder deleted and made again can get its old inode number back: ``before`` then lacks it (its deletion
        was seen), so it is synced all the same.
        """
        for folder in self.folders:
            if folder in now and before.get(folder) != now[folder]:
                self.batcher.add(folder)
        for file in self.files:
            if file.parent in now and before.get(file.parent) != now[file.parent]:
                self.batcher.add(file)

    def _targets(self) -> list[Path]:
        """What to give watchfiles: the watched folders that exist, and the folders of watched files.

        A file is watched through its folder, so that an editor saving by rename (a new inode) stays watched.
        """
        found = [f for f in self.folders if f.is_dir()]
        found += [p.parent for p in self.files if p.parent.is_dir() and p.parent not in found]
        return found

    def _events(self, targets: Sequence[Path]) -> Generator[Batch, None, None]:
        """Batches of (change, path) from watchfiles, and an empty batch every ``tick`` s without events."""
        import watchfiles

        try:
            for batch in watchfiles.watch(
                *targets,
                watch_filter=None,
                debounce=int(max(self.batcher.quiet, self.tick) * 1000),
                step=50,
                stop_event=self.stop,
                rust_timeout=int(self.tick * 1000),
                yield_on_timeout=True,
                raise_interrupt=False,
            ):
                yield batch
                if self.stop.is_set():
                    return
        except FileNotFoundError:  # a watched folder vanished as the watcher started: run() looks again
            return
        except OSError as exc:
            raise ConfigurationError(
                f"cannot watch {', '.join(map(str, targets))}: {exc} (on Linux, raise the inotify limits: "
                "sysctl fs.inotify.max_user_watches / max_user_instances)"
            ) from exc

    def _wait_for(self, condition: Callable[[], bool]) -> None:
        """Wait until ``condition`` holds, syncing what falls due meanwhile (the deletion of a vanished folder)."""
        while not self.stop.is_set() and not condition():
            self.checkpoint()
            due = self.batcher.due()
            if due:
                self._sync(due)
            self.stop.wait(self.tick)

    def _first_sync(self) -> IngestReport:
        """Sync the watched paths as ``ingest`` would: what changed while nobody watched is caught up."""
        return self.engine.ingest(
            self.roots,
            user_id=self.user_id,
            set_id=self.set_id,
            keep_missing=self.keep_missing,
            allow_mass_delete=self.allow_mass_delete,
            progress=lambda _event, _data: self.checkpoint(),
        )

    # ------------------------------------------------------------------ one batch
    def _sync(self, due: dict[Path, float]) -> None:
        present = [p for p in due if p.exists()]
        gone = [p for p in due if p not in present]
        before = {  # what a gone path or a synced folder held: a document of it that leaves search is reported
            d.file_uri: d
            for p in (*gone, *(p for p in present if p.is_dir()))
            for d in self.engine.store.find_documents_under(self.user_id, self.set_id, str(p))
        }
        try:
            report = self._ingest(present, gone)
        except MassDeleteError as exc:  # the guard kept the documents of the gone files: sync the others alone
            self.on_change(Change("refused", str(exc.context.get("path", "")), error=exc.message))
            if not gone or not present:
                return
            self._sync({p: due[p] for p in present})
            return
        except Interrupted:
            raise
        except RagindexError as exc:  # the next change (or the next start) tries again
            log.warning("sync of %d changed paths failed: %s", len(due), exc.message)
            for path, first in due.items():
                self.on_change(Change("failed", str(path), latency_s=time.monotonic() - first, error=exc.message))
            return
        self._report(report, due, before)

    def _ingest(self, present: list[Path], gone: list[Path]) -> IngestReport:
        return self.engine.ingest(
            present,
            user_id=self.user_id,
            set_id=self.set_id,
            keep_missing=self.keep_missing,
            allow_mass_delete=self.allow_mass_delete,
            per_file=True,
            vanished=gone,
            vanished_within=self.folders,
            progress=lambda _event, _data: self.checkpoint(),
        )

    def _report(self, report: IngestReport, due: dict[Path, float], before: dict[str, Any]) -> None:
        now = time.monotonic()
        store = self.engine.store
        files = report.files or []
        embedded = report.chunks.get("embedded", 0)
        removed = {  # documents of gone paths that left search (none with keep_missing)
            uri: d for uri, d in before.items() if not store.documents_of_file(self.user_id, self.set_id, uri)
        }
        for entry in files:
            path = Path(entry["path"])
            docs = store.documents_of_file(self.user_id, self.set_id, entry["path"])
            action = _action(entry)
            if action == "unchanged" and path not in due:  # a file of a due folder (one that came back): no news
                continue
            source = None
            if action == "added" and docs:
                source = next((uri for uri, d in removed.items() if d.file_hash == docs[0].file_hash), None)
                if source is not None:
                    action = "moved"
                    del removed[source]
            self.on_change(
                Change(
                    action,
                    str(path),
                    chunks=sum(d.chunk_count for d in docs),
                    embedded=embedded,
                    latency_s=now - _first_event(path, due, now),
                    source=source,
                    error=entry.get("error"),
                )
            )
        for uri in sorted(removed):
            self.on_change(Change("removed", uri, latency_s=now - _first_event(Path(uri), due, now)))


def _action(entry: dict[str, Any]) -> str:
    status = entry["status"]
    if status != "succeeded":
        return str(status)
    documents: dict[str, int] = entry["documents"]
    return next((k for k in ("added", "changed", "rechunked", "retried") if documents.get(k)), "changed")


def _first_event(path: Path, due: dict[Path, float], default: float) -> float:
    """The first event of ``path`` or of the due folder it lies in."""
    for candidate in (path, *path.parents):
        if candidate in due:
            return due[candidate]
    return default
