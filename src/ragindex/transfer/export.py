"""``ragindex export``: one set, one tenant or everything, into a portable archive, from one snapshot."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragindex.about import package_version
from ragindex.clock import utcnow
from ragindex.store.protocol import TruthStore
from ragindex.store.records import TransferScope
from ragindex.store.sql.transfer import TRANSFER_TABLES, SetDigester, columns_of
from ragindex.transfer.archive import FORMAT, FORMAT_VERSION, ArchiveWriter

# the columns each set's digest reads from a streamed row: (user_id, set_id, key, content_hash)
_DIGEST_COLUMNS = {
    "documents": ("user_id", "set_id", "source_key", "content_hash"),
    "chunks": ("user_id", "set_id", "chunk_id", "content_hash"),
}


_TEXT_TABLES = ("documents", "parsed_documents", "parsed_parts", "chunks")


@dataclass
class ExportReport:
    """What an export wrote: where, which scope, how many rows of each table, and how long it took."""

    path: Path
    archive_id: str
    scope: TransferScope
    counts: dict[str, int]
    sets: list[dict[str, Any]]
    fingerprints: list[str]
    bytes: int
    duration_ms: float
    manifest: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def chunks(self) -> int:
        """ACTIVE chunks and sections written."""
        return self.counts.get("chunks", 0)

    def to_dict(self) -> dict[str, Any]:
        """The JSON printed by ``ragindex export --json``."""
        return {
            "path": str(self.path),
            "archive_id": self.archive_id,
            "scope": {"user_id": self.scope.user_id, "set_id": self.scope.set_id},
            "counts": self.counts,
            "sets": self.sets,
            "fingerprints": self.fingerprints,
            "bytes": self.bytes,
            "duration_ms": round(self.duration_ms, 1),
        }


class _Digests:
    """Per-set digests of the rows as they stream past (the import compares a target set with them)."""

    def __init__(self) -> None:
        self.by_set: dict[tuple[int, int], SetDigester] = {}

    def tap(self, table: str, rows: Iterable[Sequence[Any]]) -> Iterator[Sequence[Any]]:
        if table not in _DIGEST_COLUMNS:
            yield from rows
            return
        columns = columns_of(table)
        u, s, k, h = (columns.index(c) for c in _DIGEST_COLUMNS[table])
        add = "document" if table == "documents" else "chunk"
        for row in rows:
            digester = self.by_set.get((row[u], row[s]))
            if digester is None:
                digester = self.by_set[(int(row[u]), int(row[s]))] = SetDigester()
            getattr(digester, add)(str(row[k]), str(row[h]))
            yield row

    def to_list(self) -> list[dict[str, Any]]:
        out = []
        for (user_id, set_id), digester in sorted(self.by_set.items()):
            result = digester.result()
            out.append(
                {
                    "user_id": user_id,
                    "set_id": set_id,
                    "documents": result.documents,
                    "chunks": result.chunks,
                    "digest": result.digest,
                }
            )
        return out


def export_archive(
    store: TruthStore,
    path: Path,
    scope: TransferScope,
    *,
    source: dict[str, Any] | None = None,
    compress: bool = False,
) -> ExportReport:
    """Write the rows of ``scope`` and the cached vectors of the active models to an archive at ``path``.

    Every table is read in one snapshot (a consistent point in time while other processes write); memory stays
    bounded whatever the size (rows stream into parts of bounded size). The index copies are not exported: an import
    rebuilds them from the vectors.

    Args:
        store: The truth store to read.
        path: The archive to write (replaced if it exists, only once complete).
        scope: One set, one tenant, or everything.
        source: What the manifest records about the deployment (dialect, index backend).
        compress: gzip the parts of text (about a third of the size; slower). Vectors are never compressed.
    """
    started = time.perf_counter()
    writer = ArchiveWriter(path, gzip_tables=_TEXT_TABLES if compress else ())
    digests = _Digests()
    counts: dict[str, int] = {}
    try:
        with store.snapshot(scope) as snap:
            fingerprints = snap.fingerprints()
            keys = snap.model_keys(fingerprints)
            for table in TRANSFER_TABLES:
                counts[table] = writer.write_table(table, digests.tap(table, snap.rows(table, keys)))
        archive_id = str(uuid.uuid4())
        manifest: dict[str, Any] = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "archive_id": archive_id,
            "ragindex_version": package_version(),
            "created_at": utcnow().isoformat(),
            "scope": {"user_id": scope.user_id, "set_id": scope.set_id},
            "source": source or {},
            "fingerprints": fingerprints,
            "model_keys": keys,
            "counts": counts,
            "sets": digests.to_list(),
            "tables": {t: {"columns": columns_of(t)} for t in TRANSFER_TABLES},
        }
        writer.finish(manifest)
    except BaseException:
        writer.abort()
        raise
    return ExportReport(
        path=path,
        archive_id=archive_id,
        scope=scope,
        counts=counts,
        sets=manifest["sets"],
        fingerprints=fingerprints,
        bytes=path.stat().st_size,
        duration_ms=(time.perf_counter() - started) * 1000,
        manifest=manifest,
    )
