"""Incremental sync of a source (files and folders) into the truth store and the index.

An unchanged file (same sha256 of its bytes) is skipped without parsing; a changed file
is re-chunked and only chunks whose content hash is new get embedded (chunk-level diff);
files gone from a synced folder are REMOVED and purged from the index (unless that would remove
too much of the folder: :class:`~ragindex.pipeline.discovery.RemovalGuard`). Whatever is left
unfinished in the set (PENDING, or FAILED below max attempts) is indexed too, so a re-run
resumes an interrupted one.

One bad file fails alone: whatever reading, parsing or chunking one file raises (an ``OSError``, a
``RecursionError``, a parser crash, a timeout, a limit) makes that file or document FAILED with its
error, and the run goes on (:mod:`ragindex.pipeline.failures`). Files are parsed in a child process a
timeout can kill (:class:`~ragindex.loaders.isolated.IsolatedParser`). A file with a FAILED document is
parsed again by the next sync, until it succeeds or is removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragindex.chunking.cutter import Cut, DocumentCutter
from ragindex.chunking.protocol import Chunker
from ragindex.errors import DocumentLoadError, DocumentTooLargeError, InputError
from ragindex.hashing import canonical_json, sha256_text
from ragindex.index.routing import bucket_of
from ragindex.language import dominant_script
from ragindex.loaders.isolated import IsolatedParser
from ragindex.loaders.registry import LoaderRegistry
from ragindex.metadata import normalise
from ragindex.pipeline import faults
from ragindex.pipeline.discovery import RemovalGuard, Removals, discover
from ragindex.pipeline.failures import FailureLog, check_name, fails_alone
from ragindex.pipeline.indexer import Indexer, StageResult, check_stop
from ragindex.pipeline.record_sync import CheckedRecord, check_records, given_cut, record_document, record_path
from ragindex.pipeline.report import IngestReport as IngestReport
from ragindex.pipeline.report import file_outcomes
from ragindex.pipeline.run_outcomes import Touched, finish_runs
from ragindex.pipeline.stopping import StopFlag
from ragindex.pipeline.sync_limits import SyncLimits as SyncLimits
from ragindex.pipeline.sync_limits import unit_kinds as unit_kinds
from ragindex.store.protocol import TruthStore
from ragindex.store.records import ChunkLayout, DocumentRow, NewDocument
from ragindex.store.states import RunStatus, Stage
from ragindex.types import Document, VectorKind

if TYPE_CHECKING:
    from ragindex.records import Record

log = logging.getLogger(__name__)

PURGE_PAGE = 5000
"""REMOVED rows read and purged at a time after the chunking stage: bounds the memory of a whole set re-chunked."""

ProgressFn = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class _FileContext:
    uri: str
    known: tuple[str, int] | None  # (file hash, number of documents) recorded for this file ("" hash: parse it)
    force: bool
    rechunk: bool  # some of its documents were chunked with other settings
    user_id: int
    set_id: int
    bucket: int
    job_id: str | None


class SourceSync:
    """Runs one ingest of paths into (user_id, set_id).

    Args:
        store: Truth store.
        indexer: Index stages.
        loaders: Loader registry.
        chunker: The configured chunker.
        bucket_count: Number of tenant buckets.
        max_attempts: Automatic retries per chunk.
        limits: Per-file limits (size, chunks, parse time).
        guard: The mass-deletion guard of synced folders.
        exclude: Directories discovery never walks into (the data dir, the service's blob dir).
        per_file: Report each file's outcome in :attr:`IngestReport.files`.
        chunking_fingerprint: The fingerprint of the loading and chunking settings (see
            :attr:`ragindex.config.Settings.chunking_fingerprint`); documents chunked otherwise are re-chunked.
        section_max_chars: Section size limit (0: no sections, every kind on chunks).
        contextual: Index chunks and sections with their ``Title > Heading`` line.
        stop: Set by a signal handler: the run stops before the next file (and the indexer at its next batch).
        parser: A parser whose child outlives this run (the engine's, reused by its next ingest); default: one
            for this run, closed at its end.
        warm: Told the number of new units staged so far after each document, so that the dense model loads
            while later files parse (:class:`~ragindex.encoders.warmup.EncoderWarmup`).
        extra_metadata: Fields given with the ingest (already normalised), merged over every file document's own;
            an unchanged file whose documents do not hold them yet is parsed again to record them.
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
        max_attempts: int,
        limits: SyncLimits | None = None,
        guard: RemovalGuard | None = None,
        exclude: Sequence[Path] = (),
        per_file: bool = False,
        chunking_fingerprint: str = "",
        section_max_chars: int = 0,
        contextual: bool = False,
        progress: ProgressFn | None = None,
        stop: StopFlag | None = None,
        parser: IsolatedParser | None = None,
        warm: Callable[[int], None] | None = None,
        extra_metadata: Mapping[str, Any] | None = None,
    ) -> None:
        self.store = store
        self.extra_metadata = dict(extra_metadata or {})
        self.warm = warm
        self._new_chunks = 0
        self.stop = stop
        self._indexer_factory = indexer
        self._indexer: Indexer | None = None
        self.loaders = loaders
        self._chunker_factory = chunker
        self._chunker: Chunker | None = None
        self._cutter: DocumentCutter | None = None
        self.kinds = kinds
        self.bucket_count = bucket_count
        self.max_attempts = max_attempts
        self.limits = limits or SyncLimits()
        self.guard = guard or RemovalGuard()
        self.exclude = tuple(exclude)
        self.per_file = per_file
        self.chunking_fingerprint = chunking_fingerprint
        self.section_max_chars = section_max_chars
        self.contextual = contextual
        self.unit_kinds = unit_kinds(kinds, section_max_chars)
        self.sectioned = self.unit_kinds is not None
        self.progress = progress or (lambda _event, _data: None)
        self.parser = parser
        self._field_types: dict[tuple[int, int], dict[str, str]] = {}  # the sets' metadata field types, read once

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

    def discover(self, paths: Sequence[Path]) -> tuple[list[Path], list[Path]]:
        """Files to consider, and the folders whose missing files count as removed (see :func:`discover`)."""
        return discover(paths, self.loaders.supports, self.exclude)

    # ------------------------------------------------------------------ main entry
    def run(
        self,
        paths: Sequence[Path],
        *,
        user_id: int,
        set_id: int,
        full: bool = False,
        keep_missing: bool = False,
        allow_mass_delete: bool = False,
        job_id: str | None = None,
        vanished: Sequence[Path] = (),
        vanished_within: Sequence[Path] = (),
    ) -> IngestReport:
        """Sync ``paths`` into the set; see the module docstring for the rules.

        ``vanished`` are files or folders known to be gone (a watcher's deletions and moves): the documents of
        files at or under them that no longer exist are removed like those of files gone from a synced folder,
        guarded per folder of ``vanished_within`` (see :meth:`~ragindex.pipeline.discovery.Removals.vanished`).

        Raises:
            MassDeleteError: The files of too many of a folder's documents are gone (nothing was written);
                ``allow_mass_delete`` removes them anyway, ``keep_missing`` keeps them.
        """
        started = time.perf_counter()
        report = IngestReport(files=[] if self.per_file else None)
        files, folders = self.discover(paths)
        self.progress("discovered", {"files": len(files)})
        seen = {str(p) for p in files}
        gone: list[DocumentRow] = []
        if not keep_missing:
            removals = Removals(self.store, user_id, set_id, guard=self.guard, allow=allow_mass_delete)
            gone = removals.planned(folders, seen)
            if vanished:
                planned = {d.doc_id for d in gone}
                gone += [d for d in removals.vanished(vanished, vanished_within) if d.doc_id not in planned]
        known = self.store.file_hashes(user_id, set_id)
        rechunk = self.store.files_chunked_otherwise(user_id, set_id, self.chunking_fingerprint)
        bucket = bucket_of(user_id, self.bucket_count)
        failures = FailureLog(self.store, self.kinds, report.failures)
        touched: list[Touched] = []
        removed: list[str] = []
        per_file: dict[str, dict[str, int]] = {}
        t_chunking = time.perf_counter()
        with self._run_parser() as parser:
            for path in files:
                check_stop(self.stop)
                uri = str(path)
                ctx = _FileContext(uri, known.get(uri), full, uri in rechunk, user_id, set_id, bucket, job_id)
                counts = self._sync_file(path, ctx, parser, failures, report, touched, removed)
                per_file[uri] = counts
                for key, n in counts.items():
                    report.documents[key] += n
                self.progress("file", {"path": uri})
        report.stage_ms["chunking"] = (time.perf_counter() - t_chunking) * 1000

        if gone:
            removed += self.store.remove_documents([d.doc_id for d in gone])
            report.documents["removed"] += len(gone)
        report.chunks["removed"] += len(removed)
        self._purge_set(user_id, set_id, report)
        self._index_set(user_id, set_id, touched, job_id, report, failures, per_file)
        if report.files is not None:
            report.files += file_outcomes(per_file, report.failures)
        report.duration_ms = (time.perf_counter() - started) * 1000
        return report

    def upsert(
        self, records: Sequence[Record], *, user_id: int, set_id: int, job_id: str | None = None
    ) -> IngestReport:
        """Upsert records into the set and index them before returning (see :mod:`ragindex.pipeline.record_sync`).

        Raises:
            RecordError: A record whose metadata breaks a rule or disagrees with the set's field types (nothing
                was written).
        """
        started = time.perf_counter()
        report = IngestReport(files=[] if self.per_file else None)
        checked, added = check_records(records, self.store.field_types(user_id, set_id))
        if added:
            clash = {n: k for n, k in self.store.add_field_types(user_id, set_id, added).items() if k != added[n]}
            if clash:  # another writer recorded the field first, with another type: check again against it
                checked, _ = check_records(records, self.store.field_types(user_id, set_id))
        existing = self.store.documents_by_key(user_id, set_id, [c.record.key for c in checked])
        bucket = bucket_of(user_id, self.bucket_count)
        failures = FailureLog(self.store, self.kinds, report.failures)
        touched: list[Touched] = []
        relabels: list[tuple[int, dict[str, Any], str]] = []  # records whose metadata alone changed
        per_file: dict[str, dict[str, int]] = {}
        t_chunking = time.perf_counter()
        with self._run_parser() as parser:
            for item in checked:
                check_stop(self.stop)
                old = existing.get(item.record.key)
                unchanged = (
                    old is not None
                    and old.file_hash == item.record_hash
                    and old.status == RunStatus.SUCCESS
                    and (item.record.chunks is not None or old.chunking_fingerprint == self.chunking_fingerprint)
                )
                if unchanged:
                    counts = {"unchanged": 1}
                elif old is not None and (relabel := self._relabelled(item, old)) is not None:
                    relabels.append(relabel)
                    counts = {"changed": 1}
                else:
                    ctx = _FileContext(item.uri, None, False, False, user_id, set_id, bucket, job_id)
                    counts = self._upsert_record(item, old, ctx, parser, failures, report, touched)
                per_file[item.uri] = counts
                for key, n in counts.items():
                    report.documents[key] += n
        report.stage_ms["chunking"] = (time.perf_counter() - t_chunking) * 1000
        if relabels:
            runs = self.store.relabel_documents(relabels, job_id=job_id, kinds=self.kinds)
            faults.hit("relabel.after_truth_write")  # the new metadata is the truth, no copy carries it yet
            touched += (Touched(doc_id=d, run_id=r, chunk_count=0, chunking_ms=0.0) for d, r in runs.items())
        self._purge_set(user_id, set_id, report)
        self._index_set(user_id, set_id, touched, job_id, report, failures, per_file)
        if report.files is not None:
            report.files += file_outcomes(per_file, report.failures)
        report.duration_ms = (time.perf_counter() - started) * 1000
        return report

    def _relabelled(self, item: CheckedRecord, old: DocumentRow) -> tuple[int, dict[str, Any], str] | None:
        """``(doc_id, metadata, record hash)`` when only the record's metadata changed, else None.

        Its text, title and chunking are the recorded ones, so its rows stay as they are and only its copies'
        payloads are rewritten: no parse, no chunking, no row diff, one statement for the whole batch.
        """
        record = item.record
        if record.text is None and record.markdown is None:  # a file must be parsed, chunks carry their own fields
            return None
        if old.status != RunStatus.SUCCESS or old.chunking_fingerprint != self.chunking_fingerprint:
            return None
        doc = record_document(item)
        metadata = {**item.metadata, **({"title": doc.title} if doc.title else {})}
        if sha256_text(doc.text) != old.content_hash or metadata.get("title") != old.metadata.get("title"):
            return None  # a new title changes the chunks' context lines
        return old.doc_id, metadata, item.record_hash

    def _upsert_record(
        self,
        item: CheckedRecord,
        old: DocumentRow | None,
        ctx: _FileContext,
        parser: IsolatedParser,
        failures: FailureLog,
        report: IngestReport,
        touched: list[Touched],
    ) -> dict[str, int]:
        """Stage one changed record: parse its bytes or cut its text in the parse child, or take its chunks."""
        record = item.record
        path = record_path(record)
        timeout = self.limits.parse_timeout_seconds
        deadline = time.monotonic() + timeout if timeout > 0 else None
        poll = self._poll(ctx.uri)
        started = time.perf_counter()
        size = len(record.data) if record.data is not None else 0
        parsed: Document | None = None
        if record.data is not None:
            try:
                documents = parser.load(path, bytes(record.data), deadline=deadline, poll=poll)
                if len(documents) != 1:
                    raise DocumentLoadError(
                        f"record {record.key!r}: {path.name} holds {len(documents)} documents; a record is one "
                        "document (upsert a records file's records one by one)",
                        path=ctx.uri,
                    )
                parsed = documents[0]
            except Exception as exc:
                if not fails_alone(exc):
                    raise
                failures.file_failed(
                    Path(ctx.uri),
                    exc,
                    user_id=ctx.user_id,
                    set_id=ctx.set_id,
                    job_id=ctx.job_id,
                    file_hash=item.record_hash,
                )
                return {"failed": 1}
        doc = record_document(item, parsed)
        size = size or len(doc.text.encode())
        new = NewDocument(
            user_id=ctx.user_id,
            set_id=ctx.set_id,
            source_uri=record.key,
            file_uri=ctx.uri,
            file_hash=item.record_hash,
            content_hash=sha256_text(doc.text),
            filename=(record.filename or record.key)[:512],
            size=size,
            parser=doc.parser,
            metadata={**dict(doc.metadata), **item.metadata, **({"title": doc.title} if doc.title else {})},
            chunking_fingerprint=self.chunking_fingerprint if record.chunks is None else "",
        )
        loading_ms = (time.perf_counter() - started) * 1000
        if not doc.text.strip():
            failures.document_failed(
                new,
                DocumentLoadError(f"record {record.key!r}: {path.name} has no text", path=ctx.uri),
                job_id=ctx.job_id,
                elapsed_ms=loading_ms,
            )
            return {"failed": 1}
        outcome = self._outcome(old, new, force=False)
        if record.chunks is None:
            pending = [(doc, new, outcome)]
            (staged,) = self._cut_and_stage(
                pending, path, parser, (deadline, poll), ctx, loading_ms, failures, report, touched
            )
            return {staged: 1}
        t0 = time.perf_counter()
        try:
            cut = given_cut(
                item,
                doc,
                max_chunks=self.limits.max_chunks_per_document,
                section_max_chars=self.section_max_chars if self.sectioned else 0,
                contextual=self.contextual,
            )
        except DocumentTooLargeError as exc:
            failures.document_failed(new, exc, job_id=ctx.job_id, elapsed_ms=loading_ms)
            return {"failed": 1}
        timing = (loading_ms, (time.perf_counter() - t0) * 1000)
        ok = self._stage_document(doc, new, cut, ctx, outcome, timing, failures, report, touched)
        return {outcome if ok else "failed": 1}

    @contextlib.contextmanager
    def _run_parser(self) -> Iterator[IsolatedParser]:
        """The parser of one run: the shared one (kept open), or one of its own (closed at the end).

        Stopped mid-parse, the parser is closed either way: its child is killed (a shared parser starts a fresh
        one when next used).
        """
        parser = self.parser or IsolatedParser(
            self.loaders, timeout=self.limits.parse_timeout_seconds, memory_mb=self.limits.parse_memory_mb
        )
        try:
            yield parser
        except BaseException:
            parser.close()
            raise
        finally:
            if parser is not self.parser:
                parser.close()

    def _purge_set(self, user_id: int, set_id: int, report: IngestReport) -> None:
        """Purge every REMOVED row of the set not yet purged: this run's, and those an interrupted run left.

        The run's changed documents are purged here, after the chunking stage, in pages of :data:`PURGE_PAGE`
        rows (one index delete and one truth write a page and bucket), not one document at a time: a changed
        record cost ~30 ms of purging on its own. Until then a removed chunk's index copy may still answer a
        search, and the backfill drops it (its row is REMOVED), as it does for any copy a crash leaves. A run
        killed between a document's truth write and this purge leaves its file recorded as unchanged, so no later
        run re-stages it; its old rows are purged by the next run's call, as the set's PENDING rows are indexed by
        :meth:`_index_set`.
        """
        while rows := self.store.removed_unpurged(limit=PURGE_PAGE, user_id=user_id, set_id=set_id):
            _purged, failed = self.indexer.purge(rows)
            if failed:  # they stay REMOVED and unpurged, so the next page would hold them again: repair retries
                report.notes.append(f"{len(failed)} removed chunks are still in the index; run `ragindex repair`")
                return
            if len(rows) < PURGE_PAGE:
                return

    # ------------------------------------------------------------------ one file
    def _read(self, path: Path, report: IngestReport) -> bytes | None:
        """The bytes of ``path`` (None for an empty file); any OSError is the file's failure."""
        check_name(path)
        limit = self.limits.max_file_bytes
        size = path.stat().st_size
        if size == 0:
            report.notes.append(f"skipped empty file {path}")
            return None
        data = path.read_bytes() if size <= limit else b""
        if size > limit or len(data) > limit:
            size = max(size, len(data))
            raise DocumentTooLargeError(
                f"{path} is {size} bytes, over the limit of {limit} (RAGINDEX_MAX_FILE_BYTES)", size=size, limit=limit
            )
        return data

    def _sync_file(
        self,
        path: Path,
        ctx: _FileContext,
        parser: IsolatedParser,
        failures: FailureLog,
        report: IngestReport,
        touched: list[Touched],
        removed: list[str],
    ) -> dict[str, int]:
        file_hash = ""
        started = time.perf_counter()
        timeout = self.limits.parse_timeout_seconds
        deadline = time.monotonic() + timeout if timeout > 0 else None  # one for the file's parsing and chunking
        poll = self._poll(ctx.uri)
        try:
            data = self._read(path, report)
            if data is None:
                return {"skipped": 1}
            file_hash = hashlib.sha256(data).hexdigest()
            if (unchanged := self._unchanged_documents(ctx, file_hash)) is not None:
                return {"unchanged": unchanged}
            documents = parser.load(path, data, deadline=deadline, poll=poll)
        except Exception as exc:
            if not fails_alone(exc):
                raise
            failures.file_failed(
                path, exc, user_id=ctx.user_id, set_id=ctx.set_id, job_id=ctx.job_id, file_hash=file_hash
            )
            return {"failed": 1}
        # a records file's documents share its loading time (read, hash, parse), as a batch's chunks share the batch's
        loading_ms = (time.perf_counter() - started) * 1000 / max(len(documents), 1)
        existing = {d.source_uri: d for d in self.store.documents_of_file(ctx.user_id, ctx.set_id, ctx.uri)}
        counts = dict.fromkeys(("added", "changed", "rechunked", "retried", "unchanged", "skipped", "failed"), 0)
        pending: list[tuple[Document, NewDocument, str]] = []  # (document, its new version, outcome) to chunk
        # a records file changed, but not these records: only their file hash moves on (and the parsed artifact of a
        # document ingested before artifacts were kept is recorded now), in a few statements for all of them
        same: dict[int, Document] = {}  # doc_id -> the record as parsed now
        for doc in documents:
            for warning in doc.warnings:
                log.warning("%s: %s", doc.source_uri, warning)
                report.notes.append(f"{doc.source_uri}: {warning}")
            old = existing.pop(doc.source_uri, None)
            if doc.error is not None:  # a record the loader could not read (a bad line): it fails alone
                new = self._new_document(doc, ctx, file_hash, "", len(data), path)
                failures.document_failed(
                    new, DocumentLoadError(doc.error, path=ctx.uri), job_id=ctx.job_id, elapsed_ms=loading_ms
                )
                counts["failed"] += 1
                continue
            if not doc.text.strip():
                report.notes.append(f"skipped {doc.source_uri}: no text")
                counts["skipped"] += 1
                if old is not None:
                    existing[doc.source_uri] = old  # its text is gone: removed below, as before
                continue
            content_hash = sha256_text(doc.text)
            new = self._new_document(doc, ctx, file_hash, content_hash, len(data), path)
            outcome = self._outcome(old, new, ctx.force)
            if outcome == "unchanged":
                assert old is not None  # an unchanged document has a recorded version
                same[old.doc_id] = doc
                continue
            pending.append((doc, new, outcome))
        self.store.set_file_hashes(file_hash, same)  # none: no statement
        counts["unchanged"] += len(same)
        if pending:
            for outcome in self._cut_and_stage(
                pending, path, parser, (deadline, poll), ctx, loading_ms, failures, report, touched
            ):
                counts[outcome] += 1
        if existing:  # documents that disappeared from the file (records, or a file that now has no text)
            removed += self.store.remove_documents([d.doc_id for d in existing.values()])
            # the FAILED stand-in of a file that could not be loaded before is replaced, not removed
            report.documents["removed"] += sum(1 for d in existing.values() if not _load_failure(d, ctx.uri))
        return {k: n for k, n in counts.items() if n}

    def _cut_and_stage(
        self,
        pending: list[tuple[Document, NewDocument, str]],
        path: Path,
        parser: IsolatedParser,
        bound: tuple[float | None, Callable[[], None]],
        ctx: _FileContext,
        loading_ms: float,
        failures: FailureLog,
        report: IngestReport,
        touched: list[Touched],
    ) -> list[str]:
        """Chunk a file's new and changed documents (``bound``: its deadline and poll) and stage each.

        Returns:
            Each document's outcome (``failed`` for one that failed alone).
        """
        t0 = time.perf_counter()
        cuts = self._cut([doc for doc, _new, _outcome in pending], path, parser, *bound)
        chunking_ms = (time.perf_counter() - t0) * 1000 / len(pending)
        outcomes: list[str] = []
        for (doc, new, outcome), cut in zip(pending, cuts, strict=True):
            if isinstance(cut, Exception):
                failures.document_failed(new, cut, job_id=ctx.job_id, elapsed_ms=chunking_ms)
                outcomes.append("failed")
                continue
            timing = (loading_ms, chunking_ms)
            staged = self._stage_document(doc, new, cut, ctx, outcome, timing, failures, report, touched)
            outcomes.append(outcome if staged else "failed")
        return outcomes

    def _outcome(self, old: DocumentRow | None, new: NewDocument, force: bool) -> str:
        """What this version of a document is against the recorded one: ``unchanged`` or how it is staged.

        A document is unchanged when its text, its metadata and title, and the chunking settings it was cut with are
        all the same (a record whose ``author`` alone changed is re-recorded: its chunks keep their vectors).
        """
        if old is None:
            return "added"
        if old.status == RunStatus.FAILED:
            return "retried"
        if force or old.content_hash != new.content_hash:
            return "changed"
        if canonical_json(old.metadata) != canonical_json(new.metadata):
            return "changed"
        if old.chunking_fingerprint != self.chunking_fingerprint:
            return "rechunked"
        return "unchanged"

    def _poll(self, uri: str) -> Callable[[], None]:
        """What the parser calls while a file is parsed and chunked: a stop or a cancel kills its child at once."""

        def poll() -> None:
            check_stop(self.stop)
            self.progress("parsing", {"path": uri})

        return poll

    @property
    def cutter(self) -> DocumentCutter:
        """The chunker with the chunk limit and the section settings (built when the first document is chunked)."""
        if self._cutter is None:
            max_chars = self.section_max_chars if self.sectioned else 0
            self._cutter = DocumentCutter(
                self.chunker, self.limits.max_chunks_per_document, max_chars, contextual=self.contextual
            )
        return self._cutter

    def _cut(
        self,
        documents: list[Document],
        path: Path,
        parser: IsolatedParser,
        deadline: float | None,
        poll: Callable[[], None],
    ) -> list[Cut | Exception]:
        """Each document's cut (in the parse child, under the file's deadline), or the error it failed with alone."""
        try:
            return list(parser.cut(self.cutter, documents, path=path, deadline=deadline, poll=poll))
        except Exception as exc:  # the chunking of the file ran out of time, or its process died: all its documents
            if not fails_alone(exc):
                raise
            return [exc] * len(documents)

    def _new_document(
        self, doc: Document, ctx: _FileContext, file_hash: str, content_hash: str, size: int, path: Path
    ) -> NewDocument:
        return NewDocument(
            user_id=ctx.user_id,
            set_id=ctx.set_id,
            source_uri=doc.source_uri,
            file_uri=ctx.uri,
            file_hash=file_hash,
            content_hash=content_hash,
            filename=path.name if doc.source_uri == ctx.uri else doc.source_uri.rsplit("/", 1)[-1],
            size=size,
            parser=doc.parser,
            metadata={
                **file_metadata(path, doc, size),
                **dict(doc.metadata),
                **({"title": doc.title} if doc.title else {}),
                **self.extra_metadata,
            },
            chunking_fingerprint=self.chunking_fingerprint,
        )

    def _unchanged_documents(self, ctx: _FileContext, file_hash: str) -> int | None:
        """The recorded documents of a file that needs no parsing (same bytes, same settings), else None.

        With extra metadata, the file's recorded documents must hold it already (else it is parsed to record it).
        """
        if ctx.known is None or ctx.known[0] != file_hash or ctx.force or ctx.rechunk:
            return None
        if self.extra_metadata:
            docs = self.store.documents_of_file(ctx.user_id, ctx.set_id, ctx.uri)
            if any(d.metadata.get(k) != v for d in docs for k, v in self.extra_metadata.items()):
                return None
        return ctx.known[1]

    def _stage_document(
        self,
        doc: Document,
        new: NewDocument,
        cut: Cut,
        ctx: _FileContext,
        outcome: str,
        timing: tuple[float, float],
        failures: FailureLog,
        report: IngestReport,
        touched: list[Touched],
    ) -> bool:
        """Record one cut document's chunks and sections; False when it failed alone (recorded by ``failures``).

        ``timing``: the document's share of its file's loading and chunking, in milliseconds.
        """
        loading_ms, chunking_ms = timing
        self._register_fields(new)
        doc_id, run_id, diff = self.store.stage_document(
            new,
            ChunkLayout(cut.drafts, ctx.bucket, self.kinds, self.unit_kinds),
            job_id=ctx.job_id,
            chunking_ms=chunking_ms,
            loading_ms=loading_ms,
            parsed=doc,
        )
        try:
            faults.hit("chunking.after_truth_write")
        except Exception as exc:
            if not fails_alone(exc):
                raise
            failures.document_failed(new, exc, job_id=ctx.job_id, elapsed_ms=chunking_ms, staged=(doc_id, run_id))
            return False
        report.chunks["total"] += cut.chunks
        report.chunks["sections"] += cut.sections
        if not diff.requeued:  # requeued rows are counted when the indexer reuses their cached vectors
            report.chunks["reused"] += len(diff.kept)
        report.chunks["removed"] += len(diff.removed)  # their index copies: purged after the chunking stage
        self._new_chunks += len(diff.added)
        if self.warm is not None:
            self.warm(self._new_chunks)
        touched.append(Touched(doc_id, run_id, cut.chunks, chunking_ms, ctx.uri, doc.source_uri, outcome))
        return True

    def _register_fields(self, new: NewDocument) -> None:
        """Record the set's types of the document's new filterable fields.

        Lenient, for a file's metadata (see :mod:`ragindex.pipeline.payloads`); a record's was checked and its
        fields recorded before anything was written.
        """
        tenant = (new.user_id, new.set_id)
        types = self._field_types.get(tenant)
        if types is None:
            types = self._field_types[tenant] = self.store.field_types(*tenant)
        unseen: dict[str, str] = {}
        for name, value in new.metadata.items():
            if name in types:
                continue
            try:
                _stored, found = normalise({name: value})
            except InputError:  # not filterable (a nested object a records file holds): kept, not indexed
                continue
            unseen |= {k: str(v) for k, v in found.items()}
        if unseen:
            types |= self.store.add_field_types(*tenant, unseen)

    def _start_run(self, doc_id: int, job_id: str | None) -> int:
        kinds = self.kinds
        return self.store.start_run(
            doc_id, job_id=job_id, bm25=VectorKind.BM25 in kinds, sparse=VectorKind.SPARSE in kinds
        )

    # ------------------------------------------------------------------ index stages
    def _index_set(
        self,
        user_id: int,
        set_id: int,
        touched: list[Touched],
        job_id: str | None,
        report: IngestReport,
        failures: FailureLog,
        per_file: dict[str, dict[str, int]],
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
        unparsed = sorted({d for r in results.values() for d in r.time_by_doc_ms} - parsed)
        kinds = self.kinds
        runs = self.store.start_index_runs(
            unparsed, job_id=job_id, bm25=VectorKind.BM25 in kinds, sparse=VectorKind.SPARSE in kinds
        )
        touched += (Touched(doc_id=d, run_id=runs[d], chunk_count=0, chunking_ms=0.0) for d in unparsed)
        for item, stage, error in finish_runs(self.store, self.kinds, touched, results):
            if item.outcome is None:  # not parsed by this run: look up where it comes from
                row = self.store.get_document(item.doc_id)
                item.file_uri, item.source_uri = row.file_uri, row.source_uri
            else:
                report.documents[item.outcome] -= 1
                counts = per_file.setdefault(item.file_uri, {})
                counts[item.outcome] -= 1
                counts["failed"] = counts.get("failed", 0) + 1
            report.documents["failed"] += 1
            failures.index_failed(
                file_uri=item.file_uri, source_uri=item.source_uri, doc_id=item.doc_id, stage=stage, error=error
            )
        if any(f["stage"] not in (Stage.LOADING, Stage.CHUNKING) for f in report.failures):
            report.notes.append(
                "documents failed to index: `ragindex repair` retries their chunks below RAGINDEX_MAX_ATTEMPTS, "
                "`ragindex reindex --failed` retries every FAILED chunk"
            )


def file_metadata(path: Path, doc: Document, size: int) -> dict[str, Any]:
    """The metadata every document of a file gets, as filters read it: where it comes from and what it is.

    ``source``, ``filename``, ``suffix`` and ``script`` (the dominant script of its text: ``latin``, ``han``, ...)
    for every document; ``size``, ``modified`` (UTC) and ``pages`` only for a file's single document, since a records
    file's documents would all change with any line of the file. What the loader found (a title, a records file's
    fields) comes over these.
    """
    derived: dict[str, Any] = {"source": str(path), "filename": path.name, "suffix": path.suffix.lower()}
    if (script := dominant_script(doc.text[:_SCRIPT_SAMPLE])) is not None:
        derived["script"] = str(script)
    if doc.source_uri != str(path):
        return derived
    derived["size"] = size
    with contextlib.suppress(OSError):
        derived["modified"] = datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat().replace("+00:00", "Z")
    pages = len({p.page for p in doc.pages}) if doc.pages else doc.metadata.get("page_count")
    if isinstance(pages, int) and pages > 0:
        derived["pages"] = pages
    return derived


_SCRIPT_SAMPLE = 20_000


def _load_failure(doc: DocumentRow, file_uri: str) -> bool:
    """Whether ``doc`` is the FAILED stand-in recorded for a file that could not be loaded."""
    return doc.status == RunStatus.FAILED and not doc.content_hash and doc.source_uri == file_uri
