"""``ragindex backup DIR`` / ``ragindex restore DIR``: a consistent copy of a live deployment, and bringing it back.

On the embedded default the backup is SQLite's online backup of the truth store (the database as of the moment the
copy began; ``serve`` and ``watch`` keep writing). The truth store holds the embedding cache, so the index is not
copied: a restore drops the index copies and rebuilds them from the cached vectors (nothing is embedded). On
MySQL/MariaDB or PostgreSQL the backup is an export archive of everything (use the server's own backups as well).
``backup.json`` is written last: a directory without it is an unfinished backup.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragindex.about import package_version, schema_version
from ragindex.clock import utcnow
from ragindex.errors import ArchiveError, DestinationExistsError, SetConflictError
from ragindex.store.records import TransferScope
from ragindex.store.sql.backup import install_database, online_backup, sqlite_counts, sqlite_path
from ragindex.transfer.export import export_archive

if TYPE_CHECKING:
    from ragindex.config.settings import Settings
    from ragindex.engine import Engine

MANIFEST = "backup.json"
DATABASE = "ragindex.db"
ARCHIVE = "export.ragindex"
_BLOCK = 1024 * 1024


@dataclass
class BackupReport:
    """Where a backup went, what it holds and what it cost."""

    path: Path
    kind: str  # sqlite | export
    bytes: int
    counts: dict[str, int]
    duration_ms: float
    manifest: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``ragindex backup --json`` and of the admin route."""
        return {
            "path": str(self.path),
            "kind": self.kind,
            "bytes": self.bytes,
            "counts": self.counts,
            "duration_ms": round(self.duration_ms, 1),
        }


@dataclass
class RestoreReport:
    """What a restore brought back and what the index rebuild did."""

    path: Path
    kind: str
    counts: dict[str, int]
    indexed: dict[str, int]
    embedded: int
    verify_ok: bool
    duration_ms: float

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``ragindex restore --json``."""
        return {
            "ok": self.verify_ok,
            "path": str(self.path),
            "kind": self.kind,
            "counts": self.counts,
            "indexed": self.indexed,
            "embedded": self.embedded,
            "verify_ok": self.verify_ok,
            "duration_ms": round(self.duration_ms, 1),
        }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _empty_target(dest: Path) -> None:
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise DestinationExistsError(f"{dest} exists and is not empty: give a new directory for the backup")
    dest.mkdir(parents=True, exist_ok=True)


def backup(engine: Engine, dest: Path) -> BackupReport:
    """Write a consistent backup of ``engine``'s deployment into the new (or empty) directory ``dest``.

    Needs no index lock: it runs beside (or inside) the process that serves.
    """
    started = time.perf_counter()
    _empty_target(dest)
    url = engine.settings.resolved_database_url
    common = {
        "format": "ragindex-backup",
        "format_version": 1,
        "ragindex_version": package_version(),
        "schema_version": schema_version(),
        "created_at": utcnow().isoformat(),
        "dense_model": engine.settings.dense_model,
    }
    if sqlite_path(url) is not None:
        online_backup(url, dest / DATABASE)
        counts = sqlite_counts(dest / DATABASE)
        manifest = {**common, "kind": "sqlite", "file": DATABASE, "sha256": _sha256(dest / DATABASE), "counts": counts}
        size = (dest / DATABASE).stat().st_size
    else:
        exported = export_archive(engine.store, dest / ARCHIVE, TransferScope(), source={"dialect": url.split(":")[0]})
        counts = {"documents": exported.counts["documents"], "chunks": exported.chunks}
        counts["vectors"] = exported.counts["embedding_cache"]
        manifest = {**common, "kind": "export", "file": ARCHIVE, "archive_id": exported.archive_id, "counts": counts}
        size = exported.bytes
    partial = dest / (MANIFEST + ".partial")
    partial.write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
    partial.replace(dest / MANIFEST)
    return BackupReport(
        path=dest,
        kind=str(manifest["kind"]),
        bytes=size,
        counts=counts,
        duration_ms=(time.perf_counter() - started) * 1000,
        manifest=manifest,
    )


def read_backup(source: Path) -> dict[str, Any]:
    """The manifest of the backup in ``source``; ArchiveError naming the problem otherwise."""
    try:
        manifest = json.loads((source / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ArchiveError(
            f"{source} has no {MANIFEST}: not a ragindex backup, or an unfinished one; take another with "
            "`ragindex backup DIR`"
        ) from None
    except ValueError as exc:
        raise ArchiveError(f"{source / MANIFEST} is not valid JSON ({exc})") from exc
    if manifest.get("format") != "ragindex-backup" or manifest.get("format_version") != 1:
        raise ArchiveError(f"{source} holds a backup format this ragindex does not read ({manifest.get('format')})")
    return dict(manifest)


def restore(settings: Settings, source: Path, *, replace: bool = False) -> RestoreReport:
    """Bring the backup in ``source`` back into the deployment ``settings`` name, and rebuild its index copies.

    A SQLite backup replaces the truth store file (the data dir must not be in use: its index lock is taken first,
    and a truth store with documents needs ``replace``); the index copies are dropped and rebuilt from the cached
    vectors. An export backup is imported (:class:`~ragindex.transfer.importer.Importer`).
    """
    from ragindex.engine import Engine
    from ragindex.transfer.importer import Importer

    started = time.perf_counter()
    manifest = read_backup(source)
    file = source / str(manifest["file"])
    if manifest["kind"] == "export":
        with Engine(settings) as engine:
            imported = Importer(engine, file, replace=replace).run()
        return RestoreReport(
            path=source,
            kind="export",
            counts=dict(manifest["counts"]),
            indexed=imported.indexed,
            embedded=imported.embedded,
            verify_ok=imported.verify_ok,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
    if not file.is_file() or _sha256(file) != manifest["sha256"]:
        raise ArchiveError(f"{file}: checksum mismatch or missing (the backup was damaged); nothing was restored")
    with Engine(settings) as engine:
        engine.owner.lock()  # nobody else may use the data dir while its truth store is replaced
        present = engine.store.list_documents()
        if present and not replace:
            raise SetConflictError(
                f"the truth store at {settings.resolved_database_url} holds {len(present)} documents; nothing was "
                "restored. Pass --replace to replace it with the backup, or restore into another data dir"
            )
        for meta in engine.store.list_index_meta():
            engine.index.drop_collection(meta.collection, settings.bucket_count)
        engine.store.close()
        install_database(file, settings.resolved_database_url)
    database = sqlite_path(settings.resolved_database_url)
    assert database is not None  # install_database refused any other URL
    cached = sqlite_counts(database)["vectors"]
    with Engine(settings) as engine:
        repaired = engine.repair()  # every copy is missing: rebuilt from the cached vectors
        indexer_counts = dict(repaired.indexed)
        verified = engine.verify().ok
    embedded = sqlite_counts(database)["vectors"] - cached  # every vector computed is cached: none, normally
    return RestoreReport(
        path=source,
        kind="sqlite",
        counts=dict(manifest["counts"]),
        indexed={str(k): v for k, v in indexer_counts.items()},
        embedded=embedded,
        verify_ok=verified,
        duration_ms=(time.perf_counter() - started) * 1000,
    )
