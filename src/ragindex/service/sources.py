"""What the HTTP answers say a document came from: a path relative to its upload folder or ingest root.

The truth store keeps absolute paths (``/var/lib/ragindex/blobs/7/1/notes.md``, ``/srv/docs/faq.jsonl#12``);
a client has no use for the server's layout and must not learn it. An upload shows as its path inside the
set's upload folder (``notes.md``), a file ingested on the server (``ragindex ingest``, ``watch``) as its path
inside the deepest of ``RAGINDEX_SOURCE_ROOTS`` that holds it (``guides/setup.md``), and anything else as its
file name. A record of a records file keeps its ``#<record id>``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any


class SourcePaths:
    """Turns stored source URIs into the relative form the API shows.

    Args:
        blob_root: The service's upload root (``<blob_root>/<user_id>/<set_id>/<file>``).
        roots: Folders documents were ingested from on the server; a file path stands for its folder.
    """

    def __init__(self, blob_root: Path, roots: Iterable[Path] = ()) -> None:
        self.blob_root = blob_root.expanduser().resolve()
        resolved = (r.expanduser().resolve() for r in roots)
        folders = {r.parent if r.is_file() else r for r in resolved}
        self.roots = sorted(folders, key=lambda p: len(p.parts), reverse=True)  # deepest first
        # every search answer rewrites its hits' sources, and pathlib costs ~0.1 ms each: remember recent ones
        self._relative = functools.lru_cache(maxsize=4096)(self._relative_path)

    def public(self, uri: str, *, user_id: int, set_id: int) -> str:
        """``uri`` relative to its set's upload folder or to a source root; else its file name (never absolute)."""
        path, hash_, fragment = uri.partition("#")
        if not path.startswith("/"):  # already relative (or not a path at all)
            return uri
        return self._relative(path, user_id, set_id) + hash_ + fragment

    def _relative_path(self, path: str, user_id: int, set_id: int) -> str:
        file = Path(path)
        for base in (self.blob_root / str(user_id) / str(set_id), *self.roots):
            if file.is_relative_to(base):
                return str(file.relative_to(base))
        return file.name

    def hits(self, result: dict[str, Any], *, user_id: int) -> dict[str, Any]:
        """A search answer (``SearchResult.to_dict()``) with every hit's ``source`` made public, in place."""
        for hit in result.get("hits", ()):
            hit["source"] = self.public(hit["source"], user_id=user_id, set_id=hit["set_id"])
        return result

    def documents(self, docs: Sequence[dict[str, Any]], *, keys: Sequence[str] = ("source",)) -> None:
        """Document summaries (``source``, and ``file`` of a detail) made public, in place."""
        for doc in docs:
            for key in keys:
                if isinstance(doc.get(key), str):
                    doc[key] = self.public(doc[key], user_id=doc["user_id"], set_id=doc["set_id"])

    def report(self, report: Mapping[str, Any] | None, *, user_id: int, set_id: int) -> dict[str, Any] | None:
        """A copy of a job's ingest report with the paths of its ``files`` and ``failures`` made public."""
        if report is None:
            return None
        out = dict(report)
        for name in ("files", "failures"):
            entries = report.get(name)
            if isinstance(entries, list):
                out[name] = [
                    {
                        k: self.public(v, user_id=user_id, set_id=set_id)
                        if k in ("path", "source") and isinstance(v, str)
                        else v
                        for k, v in entry.items()
                    }
                    if isinstance(entry, Mapping)
                    else entry
                    for entry in entries
                ]
        return out
