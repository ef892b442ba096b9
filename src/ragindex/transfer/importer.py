"""``ragindex import``: an export archive into the backends the settings name, with nothing embedded again.

Stages, each idempotent, with a failpoint after each (``import.after_<stage>``, see :mod:`ragindex.pipeline.faults`):

``check``       the archive's format version, every part's checksum, the dense model and BM25 settings against the
                configured ones, each set against what the target holds: nothing is written before all pass
``catalogue``   the sets recorded as IMPORTING (a rerun resumes them); with ``--replace``, their old documents
                removed; the archive's ACTIVE collection recorded if the target has none
``documents``   metadata field types, then documents matched by their source key (inserted, or updated)
``parsed``      the parsed artifacts
``chunks``      chunks and sections by id, every index copy PENDING (one already there with the same content is kept)
``vectors``     the cached vectors of the archive's models (and the score-drift windows of a whole-deployment export)
``index``       the index copies written from the cached vectors (the embedding cache answers every dense lookup)
``verify``      REMOVED rows purged, truth and index compared; documents exported mid-ingest (PROCESSING, their
                chunks complete) marked SUCCESS; the sets recorded as DONE

A crash anywhere leaves the sets IMPORTING; running the same import again finishes them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragindex.errors import FingerprintMismatchError, SetConflictError
from ragindex.pipeline import faults
from ragindex.store.records import IndexMeta
from ragindex.store.states import CollectionState, IndexStatus
from ragindex.transfer.archive import ArchiveReader

if TYPE_CHECKING:
    from ragindex.engine import Engine

log = logging.getLogger(__name__)

STAGES = ("check", "catalogue", "documents", "parsed", "chunks", "vectors", "index", "verify")
IMPORTING = "IMPORTING"
DONE = "DONE"
_ROW_BATCH = 1000
_INDEX_PAGE = 5000
_INDEX_BATCH = 256

Progress = Callable[[str, int], None]


@dataclass
class ImportReport:
    """What an import did: per set how it was taken, rows written per table, copies indexed, vectors embedded."""

    archive_id: str
    sets: list[dict[str, Any]] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    indexed: dict[str, int] = field(default_factory=dict)
    embedded: int = 0
    reused: int = 0
    verify_ok: bool = False
    stage_ms: dict[str, float] = field(default_factory=dict)
    duration_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The JSON printed by ``ragindex import --json``."""
        return {
            "ok": self.verify_ok,
            "archive_id": self.archive_id,
            "sets": self.sets,
            "rows": self.rows,
            "indexed": self.indexed,
            "embedded": self.embedded,
            "reused": self.reused,
            "verify_ok": self.verify_ok,
            "stage_ms": {k: round(v, 1) for k, v in self.stage_ms.items()},
            "duration_ms": round(self.duration_ms, 1),
        }


@dataclass
class _Plan:
    """What the check stage decided for each set of the archive."""

    resume: list[tuple[int, int]] = field(default_factory=list)
    fresh: list[tuple[int, int]] = field(default_factory=list)
    same: list[tuple[int, int]] = field(default_factory=list)
    replace: list[tuple[int, int]] = field(default_factory=list)

    @property
    def sets(self) -> list[tuple[int, int]]:
        return [*self.resume, *self.fresh, *self.same, *self.replace]

    def how(self, key: tuple[int, int]) -> str:
        for name in ("resume", "fresh", "same", "replace"):
            if key in getattr(self, name):
                return {"resume": "resumed", "fresh": "new", "same": "same content", "replace": "replaced"}[name]
        return "?"


def _archive_meta(manifest_rows: list[IndexMeta]) -> IndexMeta | None:
    active = [m for m in manifest_rows if m.state == CollectionState.ACTIVE]
    return active[0] if active else None


def _index_meta_rows(reader: ArchiveReader) -> list[IndexMeta]:
    from ragindex.store.sql.transfer import decoders

    columns = reader.columns("index_meta")
    decode = decoders("index_meta", columns)
    out = []
    for batch in reader.batches("index_meta", _ROW_BATCH):
        for row in batch:
            values = {c: (fn(v) if fn else v) for c, v, fn in zip(columns, row, decode, strict=True)}
            out.append(
                IndexMeta(
                    collection=values["collection"],
                    backend=values["backend"],
                    state=values["state"],
                    dense_fingerprint=values["dense_fingerprint"],
                    dense_dim=values.get("dense_dim"),
                    sparse_model=values.get("sparse_model"),
                    bm25_config=values.get("bm25_config"),
                    chunker_config=values.get("chunker_config"),
                )
            )
    return out


class Importer:
    """One import of the archive at ``path`` into ``engine``'s backends.

    Args:
        engine: The target deployment (its settings name the backends).
        path: The archive.
        replace: Replace the documents of a set that holds other content (otherwise refused).
        reembed: Accept an archive of another dense model: every chunk is embedded again with the configured one.
        progress: Called with (stage or vector kind, rows or copies done).
    """

    def __init__(
        self,
        engine: Engine,
        path: Path,
        *,
        replace: bool = False,
        reembed: bool = False,
        progress: Progress | None = None,
    ) -> None:
        self.engine = engine
        self.store = engine.store
        self.path = path
        self.replace = replace
        self.reembed = reembed
        self.progress = progress

    def run(self) -> ImportReport:
        """Check, then write every stage, index and verify; see the module docstring."""
        started = time.perf_counter()
        with ArchiveReader(self.path) as reader:
            manifest = reader.manifest
            report = ImportReport(archive_id=str(manifest["archive_id"]))
            t0 = time.perf_counter()
            metas = _index_meta_rows(reader)
            plan = self._check(reader, metas)
            report.stage_ms["check"] = (time.perf_counter() - t0) * 1000
            faults.hit("import.after_check")
            report.sets = [{**s, "how": plan.how((s["user_id"], s["set_id"]))} for s in manifest.get("sets", [])]
            self._timed(report, "catalogue", lambda: self._catalogue(report, plan, metas))
            doc_ids: dict[int, int] = {}
            self._timed(
                report, "documents", lambda: self._tables(reader, report, ("metadata_fields", "documents"), doc_ids)
            )
            self._timed(
                report, "parsed", lambda: self._tables(reader, report, ("parsed_documents", "parsed_parts"), doc_ids)
            )
            self._timed(report, "chunks", lambda: self._tables(reader, report, ("chunks",), doc_ids))
            self._timed(report, "vectors", lambda: self._vectors(reader, report, manifest, doc_ids))
        self._timed(report, "index", lambda: self._index(report))
        self._timed(report, "verify", lambda: self._verify(report, plan, list(doc_ids.values())))
        report.duration_ms = (time.perf_counter() - started) * 1000
        return report

    def _timed(self, report: ImportReport, stage: str, step: Callable[[], None]) -> None:
        t0 = time.perf_counter()
        step()
        report.stage_ms[stage] = (time.perf_counter() - t0) * 1000
        faults.hit(f"import.after_{stage}")

    # ------------------------------------------------------------------ check: nothing is written
    def _check(self, reader: ArchiveReader, metas: list[IndexMeta]) -> _Plan:
        reader.verify()
        archive_id = str(reader.manifest["archive_id"])
        configured = self.engine.dense.fingerprint
        archived = _archive_meta(metas)
        if archived is not None and not self.reembed:
            if archived.dense_fingerprint != configured:
                raise FingerprintMismatchError(
                    f"{self.path} holds vectors of {archived.dense_fingerprint!r} but the configured dense model is "
                    f"{configured!r}; nothing was imported. Set RAGINDEX_DENSE_MODEL (and its prompts) to the "
                    "archive's model, or pass --reembed to embed every chunk again with the configured one",
                    collection=archived.collection,
                )
            self.engine.collections.check(archived)  # the BM25 and sparse settings too
        self.engine.read_collection()  # the target's own collection must fit the configured models
        plan = _Plan()
        conflicts: list[str] = []
        for entry in reader.manifest.get("sets", []):
            key = (int(entry["user_id"]), int(entry["set_id"]))
            if self.store.import_state(archive_id, *key) is not None:
                plan.resume.append(key)
                continue
            here = self.store.set_digest(*key)
            if here.documents == 0 and here.chunks == 0:
                plan.fresh.append(key)
            elif here.digest == entry["digest"]:
                plan.same.append(key)
            elif self.replace:
                plan.replace.append(key)
            else:
                conflicts.append(
                    f"user {key[0]} set {key[1]} holds {here.documents} documents and {here.chunks} chunks "
                    f"(the archive's: {entry['documents']} and {entry['chunks']})"
                )
        if conflicts:
            raise SetConflictError(
                f"{'; '.join(conflicts)}: other content than the archive's; nothing was imported. Pass --replace to "
                "replace those sets with the archive's content, or import into an empty database"
            )
        return plan

    # ------------------------------------------------------------------ writes
    def _catalogue(self, report: ImportReport, plan: _Plan, metas: list[IndexMeta]) -> None:
        self.engine.owner.begin()  # the index lock and the claim lease, before the first write
        self.store.set_import_state(report.archive_id, plan.sets, IMPORTING)
        for user_id, set_id in plan.replace:
            old = [d.doc_id for d in self.store.list_documents(user_id=user_id, set_id=set_id)]
            removed = self.store.remove_documents(old)
            log.info("user %d set %d: %d documents (%d chunks) replaced", user_id, set_id, len(old), len(removed))
        if self.engine.read_collection() is not None:
            return
        archived = _archive_meta(metas)
        if archived is None or self.reembed:
            self.engine.write_collection()
            return
        self.store.put_index_meta(replace(archived, backend=self.engine.settings.index_backend))

    def _tables(
        self, reader: ArchiveReader, report: ImportReport, tables: tuple[str, ...], doc_ids: dict[int, int]
    ) -> None:
        for table in tables:
            columns = reader.columns(table)
            written = 0
            for batch in reader.batches(table, _ROW_BATCH):
                written += self.store.import_rows(table, columns, batch, doc_ids)
                if self.progress is not None:
                    self.progress(table, len(batch))
            report.rows[table] = written

    def _vectors(
        self, reader: ArchiveReader, report: ImportReport, manifest: dict[str, Any], doc_ids: dict[int, int]
    ) -> None:
        self._tables(reader, report, ("embedding_cache", "score_stats"), doc_ids)
        target_key = self.engine.dense.cache_key
        keys = [str(k) for k in manifest.get("model_keys", [])]
        if self.reembed or not keys or target_key in keys:
            return
        same_model = [k for k in keys if k.rsplit("|", 1)[0] == self.engine.dense.fingerprint]
        if not same_model:
            return
        # the same model under another precision: the archive's vectors serve as they are (nothing re-embedded)
        hashes: list[str] = []
        columns = reader.columns("embedding_cache")
        key_at, hash_at = columns.index("model_key"), columns.index("content_hash")
        copied = 0
        for batch in reader.batches("embedding_cache", _ROW_BATCH):
            hashes = [row[hash_at] for row in batch if row[key_at] == same_model[0]]
            copied += self.store.cache_alias(same_model[0], target_key, hashes)
        report.rows["embedding_cache_alias"] = copied

    def _index(self, report: ImportReport) -> None:
        indexer = self.engine._active_indexer()
        if indexer is None:
            return
        if not self.reembed:  # cache hits only: larger batches, fewer round trips per copy written
            indexer.batch_size = max(indexer.batch_size, _INDEX_BATCH)
        for kind in indexer.kinds:
            done = 0
            while True:
                rows = self.store.pending_chunks(kind, statuses=(IndexStatus.PENDING,), limit=_INDEX_PAGE)
                if not rows:
                    break
                result = indexer.run(kind, rows, progress=self.progress)
                done += len(result.indexed)
                if not result.indexed:
                    break  # every row failed or was taken elsewhere: repair's business, verify reports it
            report.indexed[str(kind)] = done
        report.embedded, report.reused = indexer.dense_counts()

    def _verify(self, report: ImportReport, plan: _Plan, doc_ids: list[int]) -> None:
        if plan.replace:
            repaired = self.engine.repair()  # purge the replaced documents' index copies
            report.indexed = {k: report.indexed.get(k, 0) + v for k, v in repaired.indexed.items()}
        verify = self.engine.verify()
        report.verify_ok = verify.ok
        if verify.ok:
            report.rows["documents_settled"] = self.store.settle_imported_documents(doc_ids)
            self.store.set_import_state(report.archive_id, plan.sets, DONE)
