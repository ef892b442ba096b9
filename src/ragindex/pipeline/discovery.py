"""What a sync reads and what it may remove: discovery of files, and the mass-deletion guard.

Discovery walks the given folders for files a loader handles, skipping hidden entries and never entering an
excluded directory (the data dir, the service's blob dir): the index's own files are never documents. The
guard refuses a sync that would remove too much of a folder (an unmounted disk or a wrong path looks like a
folder whose files were all deleted) before anything is written.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragindex.errors import InputError, MassDeleteError
from ragindex.store.protocol import DocumentStore
from ragindex.store.records import DocumentRow


def discover(
    paths: Sequence[Path], supports: Callable[[Path], bool], exclude: Iterable[Path] = ()
) -> tuple[list[Path], list[Path]]:
    """The files to consider (sorted per folder, each once) and the folders whose missing files count as removed.

    A file given by name is taken whatever its suffix (an unsupported one fails alone, with the list of
    supported suffixes); inside a folder only supported, non-hidden files are taken.

    Args:
        paths: Files and folders.
        supports: Whether a loader handles a file.
        exclude: Directories never walked into (they may still hold a file given by name).

    Raises:
        InputError: A path does not exist, or a folder lies inside an excluded directory.
    """
    skip = {p.expanduser().resolve() for p in exclude}
    files: list[Path] = []
    folders: list[Path] = []
    for raw in paths:
        path = raw.expanduser().resolve()
        if not path.exists():
            raise InputError(f"path does not exist: {raw}", path=str(raw))
        if not path.is_dir():
            files.append(path)
            continue
        inside = next((s for s in skip if path == s or path.is_relative_to(s)), None)
        if inside is not None:
            raise InputError(
                f"{raw} is inside {inside}, a directory of ragindex itself (its data dir or the service's blob "
                "dir); ingest the documents' own folder",
                path=str(raw),
            )
        folders.append(path)
        files += _walk(path, supports, skip)
    return list(dict.fromkeys(files)), folders


def _walk(folder: Path, supports: Callable[[Path], bool], skip: set[Path]) -> list[Path]:
    found: list[Path] = []
    # os.walk does not follow symlinked directories (like Path.rglob): a link loop cannot trap discovery
    for root, dirs, names in os.walk(folder):
        here = Path(root)
        dirs[:] = [d for d in dirs if not d.startswith(".") and here / d not in skip]
        found += (here / n for n in names if not n.startswith(".") and supports(here / n) and (here / n).is_file())
    return sorted(found)


@dataclass(frozen=True, slots=True)
class RemovalGuard:
    """Refuses to remove more than ``max_fraction`` of a folder's documents (folders of ``min_documents`` or more).

    Small folders are not guarded: removing a few documents by mistake costs a re-ingest of a few files
    (their vectors come back from the embedding cache), while refusing would make deleting the last files of
    a small folder impossible without a flag.
    """

    max_fraction: float = 0.5
    min_documents: int = 10

    def check(self, folder: Path, held: int, gone: int) -> None:
        """Raise :class:`MassDeleteError` when removing ``gone`` of the ``held`` documents of ``folder`` is too much."""
        if held < self.min_documents or gone <= self.max_fraction * held:
            return
        raise MassDeleteError(
            f"refusing to remove {gone} of the {held} documents under {folder} ({gone / held:.0%}, over "
            f"RAGINDEX_MAX_REMOVE_FRACTION={self.max_fraction:g}): their files are gone. If the folder is "
            "unmounted or the path is wrong, fix that; to remove them, run again with --allow-mass-delete "
            "(allow_mass_delete=True); to keep them, use --keep-missing. Nothing was changed.",
            path=str(folder),
            documents=held,
            removing=gone,
        )

    def check_tree(self, folder: Path, held: Sequence[DocumentRow], gone: set[int]) -> None:
        """:meth:`check` for ``folder`` and for every folder under it that holds some of ``held``.

        A subfolder is a folder of its own: emptying ``docs/manuals`` (12 of a tree's 25 documents) is refused
        although the tree as a whole keeps more than half of its documents.

        Args:
            folder: The synced (or watched) folder.
            held: Its ACTIVE documents (those under it).
            gone: The ids of those the sync would remove.

        Raises:
            MassDeleteError: The first folder, outermost first, that would lose too much.
        """
        counts: dict[Path, list[int]] = {}  # folder -> [held, gone]
        for doc in held:
            here = Path(doc.file_uri).parent
            while True:
                tally = counts.setdefault(here, [0, 0])
                tally[0] += 1
                tally[1] += doc.doc_id in gone
                if here == folder or here == here.parent or not here.is_relative_to(folder):
                    break
                here = here.parent
        for path in sorted(counts, key=lambda p: (len(p.parts), str(p))):
            self.check(path, *counts[path])


@dataclass(frozen=True, slots=True)
class Removals:
    """The documents of one set that a sync removes because their files are gone, under one :class:`RemovalGuard`.

    ``allow`` (``--allow-mass-delete``) lifts the guard.
    """

    store: DocumentStore
    user_id: int
    set_id: int
    guard: RemovalGuard
    allow: bool = False

    def planned(self, folders: Sequence[Path], seen: set[str]) -> list[DocumentRow]:
        """The ACTIVE documents under ``folders`` whose file was not discovered (``seen``): the sync removes them.

        Raises:
            MassDeleteError: For one folder, or one folder under it, they are too many (see
                :meth:`RemovalGuard.check_tree`), unless ``allow``.
        """
        gone: dict[int, DocumentRow] = {}
        for folder in folders:
            held = self._under(folder)
            missing = [d for d in held if d.file_uri not in seen]
            if not self.allow and missing:
                self.guard.check_tree(folder, held, {d.doc_id for d in missing})
            gone.update((d.doc_id, d) for d in missing)
        return list(gone.values())

    def vanished(self, gone: Sequence[Path], within: Sequence[Path]) -> list[DocumentRow]:
        """The ACTIVE documents of files at or under the ``gone`` paths that no longer exist (a watcher's deletions).

        A path that exists again (a file saved by rename, a folder that came back) removes nothing. The guard counts
        the removals per folder of ``within`` that holds them, as a sync of that folder would; a gone path outside
        them is its own scope (a watched file: one document, never guarded).

        Raises:
            MassDeleteError: For one folder they are too many (see :class:`RemovalGuard`), unless ``allow``.
        """
        found: dict[int, DocumentRow] = {}
        for path in gone:
            found.update((d.doc_id, d) for d in self._under(path))
        missing = {doc_id: d for doc_id, d in found.items() if not Path(d.file_uri).exists()}
        if not self.allow:
            for folder in within:
                held = self._under(folder)
                inside = {d.doc_id for d in held if d.doc_id in missing}
                if inside:
                    self.guard.check_tree(folder, held, inside)
        return list(missing.values())

    def _under(self, path: Path) -> list[DocumentRow]:
        return self.store.find_documents_under(self.user_id, self.set_id, str(path))
