"""What the HTTP answers say a document came from: a path relative to its upload folder or ingest root.

The truth store keeps absolute paths (``/var/lib/ragindex/blobs/7/1/notes.md``, ``/srv/docs/faq.jsonl#12``);
a client has no use for the server's layout and must not learn it. An upload shows as its path inside the
set's upload folder (``notes.md``), a file ingested on the server (``ragindex ingest``, ``watch``) as its path
inside the deepest of ``RAGINDEX_SOURCE_ROOTS`` that holds it (``guides/setup.md``), and anything else as its
file name. A record of a records file keeps its ``#<record id>``.

The same goes for free text: an error message, a job's error, a report's notes carry the path of the file they are
about (``/var/lib/ragindex/blobs/7/1/big.txt gives 40 chunks, over the limit``). :meth:`SourcePaths.text` takes
the upload folders and source roots out of such text (``big.txt gives 40 chunks, ...``) and names the data
directory ``<data_dir>``; :meth:`SourcePaths.scrub` does it to every error and message of an answer.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragindex.records import RECORD_URI_PREFIX
from ragindex.types import SearchResult

TEXT_KEYS = frozenset({"error", "message", "notes", "last_error", "reason"})
"""Keys of an answer whose text is scrubbed (with everything under them)."""
CONTEXT_PATH_KEYS = frozenset({"path", "file", "source", "uri", "source_uri", "file_uri"})
"""Keys of an error's ``context`` that hold a path: shown as :meth:`SourcePaths.public` would."""


class SourcePaths:
    """Turns stored source URIs into the relative form the API shows.

    Args:
        blob_root: The service's upload root (``<blob_root>/<user_id>/<set_id>/<file>``).
        roots: Folders documents were ingested from on the server; a file path stands for its folder.
        data_dir: The data directory, named ``<data_dir>`` in free text (an index or store error).
    """

    def __init__(self, blob_root: Path, roots: Iterable[Path] = (), *, data_dir: Path | None = None) -> None:
        self.blob_root = blob_root.expanduser().resolve()
        resolved = (r.expanduser().resolve() for r in roots)
        folders = {r.parent if r.is_file() else r for r in resolved}
        self.roots = sorted(folders, key=lambda p: len(p.parts), reverse=True)  # deepest first
        self._in_text = _text_pattern(self.blob_root, self.roots, data_dir)
        # every search answer rewrites its hits' sources, and pathlib costs ~0.1 ms each: remember recent ones
        self._relative = functools.lru_cache(maxsize=4096)(self._relative_path)

    def public(self, uri: str, *, user_id: int, set_id: int) -> str:
        """``uri`` relative to its set's upload folder or to a source root; else its file name (never absolute)."""
        path, hash_, fragment = uri.partition("#")
        if not path.startswith("/"):  # already relative (or not a path at all)
            return uri
        return self._relative(path, user_id, set_id) + hash_ + fragment

    def key(self, source_uri: str, file_uri: str | None, *, user_id: int, set_id: int) -> str:
        """A document's ``key`` as the API shows it: a record's own key verbatim, a file's :meth:`public` path.

        (A record's ``file_uri`` is ``record:<key>``: its key is the caller's, even one that starts with ``/``.)
        """
        if file_uri is not None and file_uri.startswith(RECORD_URI_PREFIX):
            return source_uri
        return self.public(source_uri, user_id=user_id, set_id=set_id)

    def metadata(self, metadata: Mapping[str, Any], *, user_id: int, set_id: int) -> dict[str, Any]:
        """A copy of a document's metadata whose derived ``source`` (a file's server path) is shown public."""
        out = dict(metadata)
        if isinstance(out.get("source"), str) and out["source"].startswith("/"):
            out["source"] = self.public(out["source"], user_id=user_id, set_id=set_id)
        return out

    def _relative_path(self, path: str, user_id: int, set_id: int) -> str:
        file = Path(path)
        for base in (self.blob_root / str(user_id) / str(set_id), *self.roots):
            if file.is_relative_to(base):
                return str(file.relative_to(base))
        return file.name

    def text(self, message: str) -> str:
        """``message`` without server paths (its upload folders and source roots taken out, the rest named).

        A path under a set's upload folder or a source root becomes relative to it (``big.txt``,
        ``guides/setup.md``); the upload root and the data directory are named ``<uploads>`` and ``<data_dir>``.
        """
        if "/" not in message:
            return message
        return self._in_text.sub(self._replace, message)

    @staticmethod
    def _replace(match: re.Match[str]) -> str:
        name = match.lastgroup
        return "" if name is None or name == "folder" else f"<{name}>"

    def scrub(self, value: Any, *, _mode: str = "") -> Any:
        """A JSON-like answer with server paths taken out of its errors and messages (:meth:`text`), in place.

        Strings under the keys of :data:`TEXT_KEYS` (at any depth) are scrubbed; the path keys of an error's
        ``context`` (:data:`CONTEXT_PATH_KEYS`) are shown relative, or by their file name. Other values (a chunk's
        text, a document's metadata) are left as they are.
        """
        if isinstance(value, str):
            if _mode == "path":
                public = self.text(value)
                return public.rsplit("/", 1)[-1] if public.startswith("/") else public
            return self.text(value) if _mode == "text" else value
        if isinstance(value, dict):
            for key, item in value.items():
                if _mode == "text" or key in TEXT_KEYS:
                    mode = "text"
                elif _mode == "context" and key in CONTEXT_PATH_KEYS:
                    mode = "path"
                else:
                    mode = "context" if key == "context" else ""
                value[key] = self.scrub(item, _mode=mode)
        elif isinstance(value, list):
            value[:] = [self.scrub(item, _mode=_mode) for item in value]
        return value

    def answer(self, result: SearchResult, *, user_id: int) -> dict[str, Any]:
        """``result.to_dict()`` with every hit's ``key`` and public ``source`` (:meth:`hits`).

        A hit knows whether its document is a record (read with it at backfill), so a record's key that looks like a
        path is shown as given without another read.
        """
        records = {hit.source: RECORD_URI_PREFIX + hit.source for hit in result.hits if hit.record}
        return self.hits(result.to_dict(), user_id=user_id, records=records)

    def hits(self, result: dict[str, Any], *, user_id: int, records: Mapping[str, str] | None = None) -> dict[str, Any]:
        """A search answer (``SearchResult.to_dict()``): every hit's ``key`` and public ``source``, in place.

        Args:
            result: The answer.
            user_id: The tenant.
            records: The file URIs of hits whose source starts with ``/`` (source -> file URI): a record's key may
                look like a path, and only its file URI (``record:<key>``) tells it from a file.
        """
        for hit in result.get("hits", ()):
            source = hit["source"]
            hit["key"] = self.key(source, (records or {}).get(source), user_id=user_id, set_id=hit["set_id"])
            hit["source"] = hit["key"]
            if isinstance(hit.get("metadata"), Mapping):  # a file's derived `source` field is its server path
                hit["metadata"] = self.metadata(hit["metadata"], user_id=user_id, set_id=hit["set_id"])
        return result

    def documents(
        self,
        docs: Sequence[dict[str, Any]],
        *,
        keys: Sequence[str] = ("source",),
        file_uris: Mapping[int, str] | None = None,
    ) -> None:
        """Document summaries (``source``, ``file`` of a detail, ``error``) made public and given ``key``, in place.

        ``file_uris`` (doc_id -> file URI) tells records (``record:<key>``) from files; a summary of a document not in
        it is a file's unless its ``file`` says otherwise.
        """
        for doc in docs:
            file_uri = (file_uris or {}).get(doc.get("doc_id", -1), doc.get("file"))
            if isinstance(doc.get("source"), str):
                doc["key"] = self.key(doc["source"], file_uri, user_id=doc["user_id"], set_id=doc["set_id"])
            for key in keys:
                if key == "source" and "key" in doc:
                    doc[key] = doc["key"]
                elif isinstance(doc.get(key), str):
                    doc[key] = self.public(doc[key], user_id=doc["user_id"], set_id=doc["set_id"])
            if isinstance(doc.get("error"), str):
                doc["error"] = self.text(doc["error"])
            if isinstance(doc.get("metadata"), Mapping):  # a file's derived `source` field is its server path
                doc["metadata"] = self.metadata(doc["metadata"], user_id=doc["user_id"], set_id=doc["set_id"])

    def report(self, report: Mapping[str, Any] | None, *, user_id: int, set_id: int) -> dict[str, Any] | None:
        """A copy of a job's ingest report: the paths of its ``files`` and ``failures`` public, its texts scrubbed."""
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
        if isinstance(out.get("notes"), list):
            out["notes"] = list(out["notes"])
        scrubbed: dict[str, Any] = self.scrub(out)
        return scrubbed


def _text_pattern(blob_root: Path, roots: Sequence[Path], data_dir: Path | None) -> re.Pattern[str]:
    """One regular expression over the server folders of :class:`SourcePaths`, the most specific first.

    A set's upload folder and a source root (with the slash after them) match as ``folder`` and are removed; the
    upload root itself matches as ``uploads``, the data directory as ``data_dir``. A folder matches only where a
    path component ends (``/srv/docs`` is not taken out of ``/srv/docs2/x``).
    """

    def spelled(path: Path) -> str:
        names = {str(path), str(path.resolve())}
        return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))

    folders = [rf"(?:{spelled(blob_root)})/\d+/\d+/", *(rf"(?:{spelled(root)})/" for root in roots)]
    end = r"(?=/|[^\w.\-]|$)"
    parts = [f"(?P<folder>{'|'.join(folders)})", rf"(?P<uploads>(?:{spelled(blob_root)}){end})"]
    if data_dir is not None:
        parts.append(rf"(?P<data_dir>(?:{spelled(data_dir.expanduser())}){end})")
    return re.compile("|".join(parts))
