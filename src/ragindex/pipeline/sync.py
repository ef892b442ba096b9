"""Incremental sync of a source (files and folders) into the truth store and the index.

An unchanged file (same sha256 of its bytes) is skipped without parsing; a changed file
is re-chunked and only chunks whose content hash is new get embedded (chunk-level diff);
files gone from a synced folder are REMOVED and purged from the index. Whatever is left
unfinished in the set (PENDING, or FAILED below max attempts) is indexed too, so a re-run
resumes an interrupted one.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ragindex.chunking.protocol import Chunker
from ragindex.chunking.sections import with_sections
from ragindex.errors import DocumentTooLargeError, InputError, RagindexError
from ragindex.hashing import sha256_text
from ragindex.index.routing import bucket_of
from ragindex.loaders.registry import LoaderRegistry
from ragindex.pipeline import faults
from ragindex.pipeline.indexer import Indexer, StageResult
from ragindex.store.protocol import TruthStore
from ragindex.store.records import NewDocument
from ragindex.store.states import RunStatus, Stage
from ragindex.types import Document, Unit, VectorKind

log = logging.getLogger(__name__)

ProgressFn = Callable[[str, dict[str, Any]], None]


@dataclass
class IngestReport:
    """What an ingest did; ``chunks.embedded`` counts vectors the encoder actually computed."""

    documents: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("added", "changed", "rechunked", "unchanged", "removed", "failed", "skipped"), 0
        )
    )
    chunks: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("total", "sections", "embedded", "reused", "removed", "failed"), 0)
    )
    failures: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    duration_ms: float = 0.0
    stage_ms: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON printed by ``ragindex ingest --json``: every field, in order, times rounded to 0.1 ms."""
        return {
            **asdict(self),
            "duration_ms": round(self.duration_ms, 1),
            "stage_ms": {k: round(v, 1) for k, v in self.stage_ms.items()},
        }


def unit_kinds(kinds: Sequence[str], section_max_chars: int) -> dict[str, tuple[str, ...]] | None:
    """The vector kinds of each unit: sections carry the lexical kinds, chunks the dense one.

    None when there are no sections (``section_max_chars`` 0, or no lexical kind): every row has every kind.
    """
    lexical = tuple(k for k in kinds if k != VectorKind.DENSE)
    if section_max_chars <= 0 or not lexical:
        return None
    return {Unit.CHUNK: (VectorKind.DENSE,), Unit.SECTION: lexical}


@dataclass(frozen=True, slots=True)
class _FileContext:
    uri: str
    known: tuple[str, int] | None  # (file hash, number of documents) recorded for this file
    force: bool
    rechunk: bool  # some of its documents were chunked with other settings
    user_id: int
    set_id: int
    bucket: int
    job_id: str | None


@dataclass
class _Touched:
    doc_id: int
    run_id: int
    chunk_count: int
    chunking_ms: float


class SourceSync:
    """Runs one ingest of paths into (user_id, set_id).

    Args:
        store: Truth store.
        indexer: Index stages.
        loaders: Loader registry.
        chunker: The configured chunker.
        bucket_count: Number of tenant buckets.
        max_file_bytes: Size limit per file.
        max_attempts: Automatic retries per chunk.
        chunking_fingerprint: The fingerprint of the loading and chunking settings (see
            :attr:`ragindex.config.Settings.chunking_fingerprint`); documents chunked otherwise are re-chunked.
        section_max_chars: Section size limit (0: no sections, every kind on chunks).
        contextual: Index chunks and sections with their ``Title > Heading`` line.
    """

    def __init__(
        self,
        store: TruthStore,
        indexer: Callable[[], Indexer],
        loaders: LoaderRegistry,
        chunker: Callable[[], Chunker],
        *,
        kinds: tuple[str, ...],
        bucket_count: int,
        max_file_bytes: int,
        max_attempts: int,
        chunking_fingerprint: str = "",
        section_max_chars: int = 0,
        contextual: bool = False,
        progress: ProgressFn | None = None,
    ) -> None:
        self.store = store
        self._indexer_factory = indexer
        self._indexer: Indexer | None = None
        self.loaders = loaders
        self._chunker_factory = chunker
        self._chunker: Chunker | None = None
        self.kinds = kinds
        self.bucket_count = bucket_count
        self.max_file_bytes = max_file_bytes
        self.max_attempts = max_attempts
        self.chunking_fingerprint = chunking_fingerprint
        self.section_max_chars = section_max_chars
        self.contextual = contextual
        self.unit_kinds = unit_kinds(kinds, section_max_chars)
        self.sectioned = self.unit_kinds is not None
        self.progress = progress or (lambda _event, _data: None)

    @property
    def indexer(self) -> Indexer:
        """The index stages, built on first need (a no-op run never opens the index or loads a model)."""
        if self._indexer is None:
            self._indexer = self._indexer_factory()
        return self._indexer

    @property
    def chunker(self) -> Chunker:
        """The chunker, built when the first changed document must be chunked."""
        if self._chunker is None:
            self._chunker = self._chunker_factory()
        return self._chunker

    # ------------------------------------------------------------------ discovery
    def discover(self, paths: Sequence[Path]) -> tuple[list[Path], list[Path]]:
        """Files to consider, and the folders whose missing files count as removed."""
        files: list[Path] = []
        folders: list[Path] = []
        for raw in paths:
            path = raw.expanduser().resolve()
            if not path.exists():
                raise InputError(f"path does not exist: {raw}", path=str(raw))
            if path.is_dir():
                folders.append(path)
                files += sorted(
                    p
                    for p in path.rglob("*")
                    if p.is_file()
                    and self.loaders.supports(p)
                    and not any(part.startswith(".") for part in p.relative_to(path).parts)
                )
            else:
                files.append(path)
        return list(dict.fromkeys(files)), folders

    # ------------------------------------------------------------------ main entry
    def run(
        self,
        paths: Sequence[Path],
        *,
        user_id: int,
        set_id: int,
        full: bool = False,
        keep_missing: bool = False,
        resume: bool = False,
        job_id: str | None = None,
    ) -> IngestReport:
        """Sync ``paths`` into the set; see the module docstring for the rules."""
        started = time.perf_counter()
        report = IngestReport()
        files, folders = self.discover(paths)
        self.progress("discovered", {"files": len(files)})
        known = self.store.file_hashes(user_id, set_id)
        rechunk = self.store.files_chunked_otherwise(user_id, set_id, self.chunking_fingerprint)
        retry = self._unparsed_files(user_id, set_id) if resume else set()
        bucket = bucket_of(user_id, self.bucket_count)
        touched: list[_Touched] = []
        seen: set[str] = set()
        removed: list[str] = []
        t_chunking = time.perf_counter()
        for path in files:
            uri = str(path)
            seen.add(uri)
            try:
                counts = self._sync_file(
                    path,
                    _FileContext(
                        uri, known.get(uri), full or uri in retry, uri in rechunk, user_id, set_id, bucket, job_id
                    ),
                    report,
                    touched,
                    removed,
                )
            except RagindexError as exc:
                counts = {"failed": 1}
                self._record_failure(path, user_id, set_id, exc, report, job_id=job_id)
            for key, n in counts.items():
                report.documents[key] += n
            self.progress("file", {"path": uri})
        report.stage_ms["chunking"] = (time.perf_counter() - t_chunking) * 1000

        if not keep_missing and folders:
            gone = [
                d
                for folder in folders
                for d in self.store.find_documents_under(user_id, set_id, str(folder))
                if d.file_uri not in seen
            ]
            if gone:
                removed += self.store.remove_documents([d.doc_id for d in gone])
                report.documents["removed"] += len(gone)
        report.chunks["removed"] += len(removed)
        self._purge(removed, report)
        self._index_set(user_id, set_id, touched, job_id, report)
        report.duration_ms = (time.perf_counter() - started) * 1000
        return report

    def _unparsed_files(self, user_id: int, set_id: int) -> set[str]:
        """Files whose last load or chunking failed (``--resume`` parses them again)."""
        return {
            d.file_uri
            for d in self.store.list_documents(user_id=user_id, set_id=set_id)
            if d.status == RunStatus.FAILED and not d.content_hash
        }

    def _purge(self, chunk_ids: Sequence[str], report: IngestReport) -> None:
        if not chunk_ids:
            return
        _purged, failed = self.indexer.purge(self.store.get_chunks(list(chunk_ids)))
        if failed:
            report.notes.append(f"{len(failed)} removed chunks are still in the index; run `ragindex repair`")

    # ------------------------------------------------------------------ one file
    def _sync_file(
        self, path: Path, ctx: _FileContext, report: IngestReport, touched: list[_Touched], removed: list[str]
    ) -> dict[str, int]:
        size = path.stat().st_size
        if size > self.max_file_bytes:
            raise DocumentTooLargeError(
                f"{path} is {size} bytes, over the limit of {self.max_file_bytes} (RAGINDEX_MAX_FILE_BYTES)",
                size=size,
                limit=self.max_file_bytes,
            )
        if size == 0:
            report.notes.append(f"skipped empty file {path}")
            return {"skipped": 1}
        t_load = time.perf_counter()
        data = path.read_bytes()
        file_hash = hashlib.sha256(data).hexdigest()
        if ctx.known is not None and ctx.known[0] == file_hash and not (ctx.force or ctx.rechunk):
            return {"unchanged": ctx.known[1]}
        documents = self.loaders.for_path(path).load(path, data)
        # a records file's documents share its loading time, as a batch's chunks share the batch's
        loading_ms = (time.perf_counter() - t_load) * 1000 / max(len(documents), 1)
        existing = {d.source_uri: d for d in self.store.documents_of_file(ctx.user_id, ctx.set_id, ctx.uri)}
        counts = {"added": 0, "changed": 0, "rechunked": 0, "unchanged": 0, "skipped": 0}
        for doc in documents:
            for warning in doc.warnings:
                log.warning("%s: %s", doc.source_uri, warning)
                report.notes.append(f"{doc.source_uri}: {warning}")
            if not doc.text.strip():
                report.notes.append(f"skipped {doc.source_uri}: no text")
                counts["skipped"] += 1
                continue
            content_hash = sha256_text(doc.text)
            old = existing.pop(doc.source_uri, None)
            same = old is not None and old.content_hash == content_hash and not ctx.force
            if same and old is not None and old.chunking_fingerprint == self.chunking_fingerprint:
                # a records file changed, but not this record: only the file hash moves on
                self.store.set_file_hash(old.doc_id, file_hash)
                counts["unchanged"] += 1
                continue
            counts["rechunked" if same else "changed" if old is not None else "added"] += 1
            self._sync_document(doc, ctx, file_hash, content_hash, size, path, report, touched, loading_ms)
        if existing:  # documents that disappeared from the file (records, or a file that now has no text)
            removed += self.store.remove_documents([d.doc_id for d in existing.values()])
            report.documents["removed"] += len(existing)
        return counts

    def _sync_document(
        self,
        doc: Document,
        ctx: _FileContext,
        file_hash: str,
        content_hash: str,
        size: int,
        path: Path,
        report: IngestReport,
        touched: list[_Touched],
        loading_ms: float | None = None,
    ) -> None:
        t0 = time.perf_counter()
        user_id, set_id, file_uri = ctx.user_id, ctx.set_id, ctx.uri
        new = NewDocument(
            user_id=user_id,
            set_id=set_id,
            source_uri=doc.source_uri,
            file_uri=file_uri,
            file_hash=file_hash,
            content_hash=content_hash,
            filename=path.name if doc.source_uri == file_uri else doc.source_uri.rsplit("/", 1)[-1],
            size=size,
            parser=doc.parser,
            metadata={**dict(doc.metadata), **({"title": doc.title} if doc.title else {})},
            chunking_fingerprint=self.chunking_fingerprint,
        )
        try:
            chunks = self.chunker.chunk(doc)
            max_chars = self.section_max_chars if self.sectioned else 0
            drafts = with_sections(doc, chunks, max_chars=max_chars, contextual=self.contextual)
        except RagindexError as exc:
            self._record_chunking_failure(new, ctx.job_id, (time.perf_counter() - t0) * 1000, exc, loading_ms)
            raise
        elapsed = (time.perf_counter() - t0) * 1000
        doc_id, run_id, diff = self.store.stage_document(
            new,
            drafts=drafts,
            bucket_id=ctx.bucket,
            kinds=self.kinds,
            job_id=ctx.job_id,
            chunking_ms=elapsed,
            unit_kinds=self.unit_kinds,
            loading_ms=loading_ms,
        )
        faults.hit("chunking.after_truth_write")
        report.chunks["total"] += len(chunks)
        report.chunks["sections"] += len(drafts) - len(chunks)
        report.chunks["reused"] += len(diff.kept)
        report.chunks["removed"] += len(diff.removed)
        self._purge(diff.removed, report)
        touched.append(_Touched(doc_id=doc_id, run_id=run_id, chunk_count=len(chunks), chunking_ms=elapsed))

    def _record_chunking_failure(
        self, doc: NewDocument, job_id: str | None, elapsed: float, exc: RagindexError, loading_ms: float | None
    ) -> None:
        """The document keeps its previous chunks and hashes; its run records the failed stage."""
        doc_id = self.store.upsert_document(doc)
        run_id = self._start_run(doc_id, job_id)
        self.store.set_stage(run_id, Stage.LOADING, RunStatus.SUCCESS, duration_ms=loading_ms)
        self.store.set_stage(run_id, Stage.CHUNKING, RunStatus.FAILED, duration_ms=elapsed)
        self.store.finish_run(
            run_id,
            RunStatus.FAILED,
            total_ms=elapsed,
            failed_stage=Stage.CHUNKING,
            recover_from_stage=Stage.CHUNKING,
            error=str(exc),
        )
        self.store.set_document_status(doc_id, RunStatus.FAILED, str(exc))

    def _start_run(self, doc_id: int, job_id: str | None) -> int:
        kinds = self.kinds
        return self.store.start_run(
            doc_id, job_id=job_id, bm25=VectorKind.BM25 in kinds, sparse=VectorKind.SPARSE in kinds
        )

    def _record_failure(
        self, path: Path, user_id: int, set_id: int, exc: RagindexError, report: IngestReport, *, job_id: str | None
    ) -> None:
        """A file that could not be loaded becomes a FAILED document and run with its error; the ingest goes on."""
        log.warning("%s: %s", path, exc.message)
        report.failures.append({"source": str(path), "error": exc.message})
        try:
            size = path.stat().st_size
            file_hash = hashlib.sha256(path.read_bytes()).hexdigest() if size <= self.max_file_bytes else ""
        except OSError:
            size, file_hash = 0, ""
        document = NewDocument(
            user_id=user_id,
            set_id=set_id,
            source_uri=str(path),
            file_uri=str(path),
            file_hash=file_hash,
            content_hash="",
            filename=path.name,
            size=size,
            parser="none",
        )
        error = f"{type(exc).__name__}: {exc.message}"
        run_id = self._start_run(self.store.record_failed_document(document, error), job_id)
        self.store.set_stage(run_id, Stage.LOADING, RunStatus.FAILED)
        self.store.finish_run(
            run_id,
            RunStatus.FAILED,
            total_ms=0.0,
            failed_stage=Stage.LOADING,
            recover_from_stage=Stage.LOADING,
            error=error,
        )

    # ------------------------------------------------------------------ index stages
    def _index_set(
        self, user_id: int, set_id: int, touched: list[_Touched], job_id: str | None, report: IngestReport
    ) -> None:
        results: dict[str, StageResult] = {}
        for kind in self.kinds:
            rows = self.store.pending_chunks(kind, user_id=user_id, set_id=set_id, max_attempts=self.max_attempts)
            if not rows:
                continue
            self.progress("stage", {"kind": kind, "chunks": len(rows)})
            results[kind] = self.indexer.run(
                kind, rows, progress=lambda k, n: self.progress("indexed", {"kind": k, "n": n})
            )
            report.stage_ms[kind] = results[kind].duration_ms
        report.chunks["failed"] = len({cid for result in results.values() for cid in result.failed})
        computed, reused = self._indexer.dense_counts() if self._indexer is not None else (0, 0)
        report.chunks["embedded"] = computed
        report.chunks["reused"] += reused
        # documents indexed now without being re-parsed (a resumed run) get a run that skipped chunking
        parsed = {t.doc_id for t in touched}
        for doc_id in sorted({d for r in results.values() for d in r.time_by_doc_ms} - parsed):
            run_id = self._start_run(doc_id, job_id)
            self.store.set_stage(run_id, Stage.LOADING, RunStatus.SKIPPED)
            self.store.set_stage(run_id, Stage.CHUNKING, RunStatus.SKIPPED)
            touched.append(_Touched(doc_id=doc_id, run_id=run_id, chunk_count=0, chunking_ms=0.0))
        self._finish_runs(touched, results)

    def _finish_runs(self, touched: Sequence[_Touched], results: dict[str, StageResult]) -> None:
        """Close every run of this ingest and settle its document's status, in two queries."""
        outcomes = self.store.index_outcomes([t.doc_id for t in touched], self.kinds)
        settled = []
        for item in touched:
            failed_stage: str | None = None
            error: str | None = None
            stages: dict[str, tuple[str, float]] = {}
            total = item.chunking_ms
            for kind in self.kinds:
                spent = results[kind].time_by_doc_ms.get(item.doc_id, 0.0) if kind in results else 0.0
                total += spent
                problem = outcomes[item.doc_id][kind]
                stages[kind] = (RunStatus.FAILED if problem else RunStatus.SUCCESS, spent)
                if problem and failed_stage is None:
                    failed_stage, error = Stage(kind.upper()), problem
            settled.append(
                {
                    "run_id": item.run_id,
                    "doc_id": item.doc_id,
                    "status": RunStatus.FAILED if failed_stage else RunStatus.SUCCESS,
                    "failed_stage": failed_stage,
                    "error": error,
                    "total_ms": total,
                    "stages": stages,
                }
            )
        self.store.settle_runs(settled)
