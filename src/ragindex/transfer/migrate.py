"""``ragindex migrate``: export everything from one deployment and import it into another, in one step."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragindex.errors import InputError
from ragindex.store.records import TransferScope
from ragindex.transfer.export import export_archive
from ragindex.transfer.importer import Importer, Progress

if TYPE_CHECKING:
    from ragindex.config.settings import Settings


@dataclass
class MigrateReport:
    """Counts per set before (the source's snapshot) and after (the target), and the import's report."""

    before: list[dict[str, Any]] = field(default_factory=list)
    after: list[dict[str, Any]] = field(default_factory=list)
    archive_bytes: int = 0
    export_ms: float = 0.0
    imported: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """The import verified clean and every set holds exactly what the source held."""
        return bool(self.imported.get("verify_ok")) and self.before == self.after

    def to_dict(self) -> dict[str, Any]:
        """The JSON printed by ``ragindex migrate --json``."""
        return {
            "ok": self.ok,
            "before": self.before,
            "after": self.after,
            "archive_bytes": self.archive_bytes,
            "export_ms": round(self.export_ms, 1),
            "embedded": self.imported.get("embedded", 0),
            "import": self.imported,
        }


def _index_location(settings: Settings) -> tuple[str, str]:
    if settings.index_backend == "edge":
        return ("edge", str(settings.index_dir.resolve()))
    return ("qdrant", str(settings.qdrant_url or Path(str(settings.qdrant_path)).resolve()))


def migrate(
    source: Settings,
    target: Settings,
    *,
    work_dir: Path | None = None,
    replace: bool = False,
    progress: Progress | None = None,
) -> MigrateReport:
    """Export every set of ``source`` to an archive in ``work_dir`` and import it into ``target``.

    The archive is a temporary file (deleted afterwards), so memory stays bounded; the source is only read (it may
    keep serving) and is left as it is.

    Raises:
        InputError: The target is the source (same truth store, or the same embedded index directory).
    """
    from ragindex.engine import Engine

    if source.resolved_database_url == target.resolved_database_url:
        raise InputError("--to-database names the truth store this deployment already uses; give another one")
    if _index_location(source) == _index_location(target):
        raise InputError(
            "the target index is the source's own index; give --to-data-dir (Edge) or --to-qdrant-url/--to-qdrant-path"
        )
    folder = work_dir or source.data_dir
    folder.mkdir(parents=True, exist_ok=True)
    report = MigrateReport()
    with tempfile.TemporaryDirectory(prefix="ragindex-migrate-", dir=folder) as tmp:
        archive = Path(tmp) / "migrate.ragindex"
        with Engine(source) as engine:
            exported = export_archive(
                engine.store,
                archive,
                TransferScope(),
                source={
                    "dialect": source.resolved_database_url.split(":", 1)[0],
                    "index_backend": source.index_backend,
                },
            )
        report.before = [
            {k: s[k] for k in ("user_id", "set_id", "documents", "chunks", "digest")} for s in exported.sets
        ]
        report.archive_bytes = exported.bytes
        report.export_ms = exported.duration_ms
        with Engine(target) as engine:
            imported = Importer(engine, archive, replace=replace, progress=progress).run()
            report.imported = imported.to_dict()
            for entry in report.before:
                digest = engine.store.set_digest(entry["user_id"], entry["set_id"])
                report.after.append(
                    {
                        "user_id": entry["user_id"],
                        "set_id": entry["set_id"],
                        "documents": digest.documents,
                        "chunks": digest.chunks,
                        "digest": digest.digest,
                    }
                )
    return report
