"""The Engine: the one Python API that the CLI and the HTTP service call.

Backends are built from :class:`~ragindex.config.Settings` by :mod:`ragindex.factory`;
anything heavy (the index, the dense model, the chunker's tokenizer) is created on first
use, so a no-op ingest or ``status`` never loads torch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ragindex import factory
from ragindex.closing import Closing
from ragindex.config.settings import Settings
from ragindex.editing import ChunkEditing
from ragindex.maintenance import Maintenance
from ragindex.pipeline.catalog import CollectionCatalog
from ragindex.pipeline.stopping import StopSignal
from ragindex.retrieval.calibration import CalibrationCache
from ragindex.types import GroupBy, VectorKind

if TYPE_CHECKING:
    from ragindex.chunking.protocol import Chunker
    from ragindex.encoders.cached import CachedDenseEncoder
    from ragindex.encoders.protocol import DenseEncoder
    from ragindex.encoders.query_warmup import QueryWarmUp
    from ragindex.index.protocol import VectorIndex
    from ragindex.loaders.isolated import IsolatedParser
    from ragindex.metadata import FieldType
    from ragindex.pipeline.indexer import Indexer
    from ragindex.pipeline.inspection import DocumentDetail, DocumentPage
    from ragindex.pipeline.sync import IngestReport, ProgressFn, SourceSync
    from ragindex.pipeline.verify import VerifyReport
    from ragindex.records import Record
    from ragindex.results import DeleteResult, StatusReport
    from ragindex.retrieval.drift import ScoreWatch
    from ragindex.retrieval.rerank import Reranker
    from ragindex.store.records import FusionCalibration, ParsedDocument
    from ragindex.types import SearchResult

log = logging.getLogger(__name__)

_Part = TypeVar("_Part")
WARM_UP_JOIN_S = 120.0  # how long close waits for a query warm-up still building (a torch model load included)


class Engine(ChunkEditing, Maintenance, Closing):
    """Ingest, search and verify one deployment.

    Repair and reindex: :class:`~ragindex.maintenance.Maintenance`; editing and deleting chunks:
    :class:`~ragindex.editing.ChunkEditing`.

    Args:
        settings: Validated settings (default: read from the environment and ``.env``).
        index_wrapper: Applied once to the index when it is built; the engine then uses what it returns
            (the service passes one that runs every index call on its single index thread).
        warm_queries: Build the dense query runtime (the light encoder's ONNX Runtime session) on a daemon thread
            from the start, while the store and the index open: a one-shot search (``ragindex search``) then
            finds it ready instead of building it after them. No-op when dense is not a recall source.
        search_only: The process only searches (the one-shot ``ragindex search``): a SQLite truth store opens
            through the standard library for the calls a search makes, without importing SQLAlchemy, and any
            other call opens the full store on first use (:func:`ragindex.factory.build_search_store`).
        query_warm_up: A warm-up of the dense query encoder started earlier, whose encoder this engine uses (the
            CLI starts it before it imports this module; :func:`ragindex.encoders.query_warmup.start_query_warm_up`).

    Use as a context manager, or call :meth:`close`: the embedded index is owned by one process.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        index_wrapper: Callable[[VectorIndex], VectorIndex] | None = None,
        warm_queries: bool = False,
        search_only: bool = False,
        query_warm_up: QueryWarmUp | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self._dense: DenseEncoder | None = None
        self._parts_lock = threading.Lock()  # threads sharing one Engine (the service) build each part once
        if query_warm_up is None and warm_queries:
            from ragindex.encoders.query_warmup import start_query_warm_up

            query_warm_up = start_query_warm_up(self.settings)
        self.query_warm_up = query_warm_up  # building the dense query encoder and its runtime, if asked
        self.store = factory.build_search_store(self.settings) if search_only else factory.build_store(self.settings)
        self.sparse = factory.build_sparse_encoders(self.settings)
        self.collections = CollectionCatalog(
            self.store,
            prefix=self.settings.collection_prefix,
            backend=self.settings.index_backend,
            dense=lambda: self.dense,
            sparse=self.sparse,
        )
        self.owner = factory.build_process_owner(self.settings, self.store)  # index lock and claim lease
        self._stop = StopSignal()  # engine-wide, or per call (ragindex.pipeline.stopping.operation_stop)
        self._index: VectorIndex | None = None
        self._index_wrapper = index_wrapper
        self._chunker: Chunker | None = None
        self._reranker: Reranker | None = None
        self._parser: IsolatedParser | None = None  # its child process is reused by the next ingest
        self._parser_lock = threading.Lock()
        self._fields: dict[tuple[int, int], dict[str, FieldType]] = {}  # the sets' metadata field types (search)
        self.calibrations = CalibrationCache(self.store)  # the sets' fusion weights (retrieval.calibration)
        self.score_watch: ScoreWatch | None = None  # search scores, saved off the search path (retrieval.drift)
        self._unobserved = threading.local()  # a thread whose searches the drift watch must not count
        if self.settings.drift_enabled:
            from ragindex.retrieval.drift import ScoreWatch

            self.score_watch = ScoreWatch(self.store, self.settings.drift)

    # ------------------------------------------------------------------ lifecycle
    def close(self, *, process_exit: bool = False) -> None:
        """Give back this process's claims (also after a signal), then close the index, its lock, encoders, store.

        ``process_exit``: the caller ends the process with ``os._exit`` right after (the one-shot CLI); an embedded
        index that this process only read is then left open, with its lock, for the process's end to release
        (see :meth:`QdrantEdgeIndex.close <ragindex.index.qdrant_edge.QdrantEdgeIndex.close>`).
        """
        try:
            self.owner.lease.close()
        finally:
            left_open = False
            if self._index is not None:
                if process_exit and self.settings.index_backend == "edge":
                    from ragindex.index.qdrant_edge import QdrantEdgeIndex, shards_left_open

                    if isinstance(self._index, QdrantEdgeIndex):
                        self._index.close(process_exit=True)
                        left_open = shards_left_open()
                    else:
                        self._index.close()
                else:
                    self._index.close()
                self._index = None
            if not left_open:
                self.owner.unlock()
            if self._parser is not None:
                self._parser.close()
            if self.query_warm_up is not None and not process_exit:
                # a daemon thread still in ONNX Runtime's C++ when the interpreter exits aborts it (SIGABRT), e.g.
                # one quantizing the int8 query copy for a search that returned before it needed the encoder
                self.query_warm_up.join(WARM_UP_JOIN_S)
            dense = self._dense
            if dense is None and self.query_warm_up is not None:  # built by the warm-up, never asked for
                dense = self.query_warm_up.built
            for encoder in (dense, *self.sparse.values()):
                close = getattr(encoder, "close", None)
                if callable(close):
                    close()
            if self.score_watch is not None:
                self.score_watch.close()  # saves the scores of this process's searches (never raises ours)
            self.store.close()

    def request_stop(self) -> None:
        """Stop the running operation at its next batch boundary (``Interrupted``); safe in a signal handler."""
        self._stop.set()

    @property
    def stop_requested(self) -> bool:
        """Whether the operation running in this thread (context) was asked to stop.

        By :meth:`request_stop`, or because the caller of its :class:`~ragindex.aio.AsyncEngine` call was cancelled.
        A long ``progress`` callback can check it; the operation itself stops at its next file or batch boundary.
        """
        return self._stop.is_set()

    # ------------------------------------------------------------------ lazily built parts
    def _part(self, attr: str, build: Callable[[], _Part]) -> _Part:
        """The part held in ``attr``, built by ``build`` on first use (once, whatever the threads)."""
        part: _Part | None = getattr(self, attr)
        if part is None:
            with self._parts_lock:
                part = getattr(self, attr)
                if part is None:
                    part = build()
                    setattr(self, attr, part)
        return part

    def _build_index(self) -> VectorIndex:
        self.owner.lock()  # an embedded index has one owner process: fail here, naming it, before opening
        index = factory.build_index(self.settings, self.owner.ownership)
        return index if self._index_wrapper is None else self._index_wrapper(index)

    @property
    def index(self) -> VectorIndex:
        """The vector index (opened on first use; Edge shards open per bucket on demand)."""
        return self._part("_index", self._build_index)

    @property
    def dense(self) -> DenseEncoder:
        """The dense encoder (the model loads on the first encode)."""
        return self._part("_dense", self._build_dense)

    def _build_dense(self) -> DenseEncoder:
        if self.query_warm_up is not None:  # built on the warm-up's thread (its runtime may still be building)
            return self.query_warm_up.encoder()
        return factory.build_dense_encoder(self.settings)

    @property
    def reranker(self) -> Reranker:
        """The cross-encoder reranker (built on the first reranked search; the model loads on the first rerank)."""
        return self._part("_reranker", lambda: factory.build_reranker(self.settings))

    @property
    def chunker(self) -> Chunker:
        """The configured chunker."""
        return self._part("_chunker", lambda: factory.build_chunker(self.settings))

    def read_collection(self) -> str | None:
        """The collection searches read (the ACTIVE one), checked against the configured models; None if empty."""
        return self.collections.read()

    def write_collection(self) -> str:
        """The collection ingests write, created (and recorded as ACTIVE) on the first ingest."""
        return self.collections.write()

    def indexer(self, collection: str | None = None) -> Indexer:
        """Index stages writing to ``collection`` (default: the write collection)."""
        from ragindex.encoders.cached import CachedDenseEncoder
        from ragindex.pipeline.indexer import Indexer

        def cached() -> CachedDenseEncoder:
            return CachedDenseEncoder(self.dense, self.store)

        return Indexer(
            self.store,
            self.index,
            collection or self.write_collection(),
            cached,
            self.sparse,
            batch_size=self.settings.embed_batch_size,
            lease=self.owner.lease,
            stop=self._stop,
        )

    # ------------------------------------------------------------------ API
    def ingest(
        self,
        paths: Sequence[str | Path],
        *,
        user_id: int = 1,
        set_id: int = 1,
        full: bool = False,
        keep_missing: bool = False,
        allow_mass_delete: bool = False,
        exclude: Sequence[str | Path] = (),
        per_file: bool = False,
        job_id: str | None = None,
        progress: ProgressFn | None = None,
        vanished: Sequence[str | Path] = (),
        vanished_within: Sequence[str | Path] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> IngestReport:
        """Sync files and folders into (user_id, set_id); see :class:`ragindex.pipeline.sync.SourceSync`.

        A file that fails (unreadable, unparsable, binary, over a limit, a parse timeout) becomes a FAILED
        document listed in the report's ``failures``, and the others go on; the next ingest parses it again.

        Args:
            paths: Files and folders (an empty string is refused: it is not the current directory).
            user_id: Tenant.
            set_id: Document set.
            full: Re-parse and re-chunk every file.
            keep_missing: Keep the documents whose files are gone from a synced folder.
            allow_mass_delete: Remove them even when they are more than ``RAGINDEX_MAX_REMOVE_FRACTION`` of a
                folder's documents (otherwise :class:`~ragindex.errors.MassDeleteError`, before any write).
            exclude: Directories never walked into, besides the data dir (e.g. the service's blob dir).
            per_file: List each file's outcome in the report's ``files``.
            job_id: The service job this ingest runs for (recorded with each pipeline run).
            progress: Called with progress events.
            vanished: Files or folders known to be gone (``ragindex watch``'s deletions and moves): the documents
                of files at or under them that no longer exist are removed (unless ``keep_missing``), guarded per
                folder of ``vanished_within`` like the files gone from a synced folder.
            vanished_within: The folders whose guard counts the removals of ``vanished`` (the watched folders).
            metadata: Fields given to every document of these files, over the fields derived from the file and
                its loader (e.g. ``{"team": "search"}``). Checked first against the set's field types
                (:class:`~ragindex.metadata.MetadataError` before anything is written). An unchanged file whose
                documents lack them is parsed again to record them (its chunks keep their vectors); an ingest
                without ``metadata`` leaves the recorded fields of unchanged files as they are.
        """
        from ragindex.errors import InputError
        from ragindex.retrieval.search import validate_ids

        validate_ids(user_id=user_id, set_id=set_id)
        if any(not str(p).strip() for p in paths):
            raise InputError("an empty path was given; name the files or folders to ingest (`.` for this folder)")
        extra = self._checked_metadata(metadata, user_id, set_id)
        self.owner.begin()
        self._enable_sparse_kinds()
        sync = self._source_sync(
            exclude=[*self._own_dirs(), *(Path(p) for p in exclude)], per_file=per_file, progress=progress
        )
        sync.extra_metadata = extra
        shared = self._parser_lock.acquire(blocking=False)  # a concurrent ingest parses with a parser of its own
        try:
            sync.parser = self._shared_parser() if shared else None
            report = sync.run(
                [Path(p) for p in paths],
                user_id=user_id,
                set_id=set_id,
                full=full,
                keep_missing=keep_missing,
                allow_mass_delete=allow_mass_delete,
                job_id=job_id,
                vanished=[Path(p).expanduser().resolve() for p in vanished],
                vanished_within=[Path(p).expanduser().resolve() for p in vanished_within],
            )
        finally:
            if shared:
                self._parser_lock.release()
        self.owner.settle_runs(self.kinds, self.settings.indexing_stale_seconds)  # what a dead ingest left open
        self._maybe_optimize(user_id)
        if self.settings.fusion_calibration:
            started = time.perf_counter()
            self.calibrate_fusion(user_id=user_id, set_id=set_id, force=False)
            # ~1.5-2 s of pseudo-query searches when a set of 200+ documents changed a lot: part of the ingest's time
            calibrating = (time.perf_counter() - started) * 1000
            report.stage_ms["calibration"] = calibrating
            report.duration_ms += calibrating
        return report

    def calibrate_fusion(self, *, user_id: int = 1, set_id: int = 1, force: bool = True) -> FusionCalibration | None:
        """Measure the set's fusion weights on pseudo-queries from its own documents and record them.

        Without ``force`` only when :func:`~ragindex.retrieval.calibration.needs_refresh` says so (no calibration
        yet, or the set grew or shrank by half since); returns the set's calibration (None: too few documents).
        See :mod:`ragindex.retrieval.calibration`.
        """
        from ragindex.retrieval.calibration import run_calibration

        return run_calibration(self, user_id=user_id, set_id=set_id, force=force)

    def _checked_metadata(self, metadata: Mapping[str, Any] | None, user_id: int, set_id: int) -> dict[str, Any]:
        """An ingest's extra metadata in its stored form, checked against the set's field types."""
        if not metadata:
            return {}
        from ragindex.metadata import FieldType, normalise

        known = {name: FieldType(kind) for name, kind in self.store.field_types(user_id, set_id).items()}
        return normalise(metadata, known)[0]

    def upsert(
        self,
        records: Iterable[Record | Mapping[str, Any]] | Record | Mapping[str, Any],
        *,
        user_id: int = 1,
        set_id: int = 1,
        job_id: str | None = None,
        progress: ProgressFn | None = None,
    ) -> IngestReport:
        """Insert or update records (documents named by the caller's key) and index them before returning.

        A record (:class:`~ragindex.records.Record`, or its dict form) carries exactly one of ``text``,
        ``markdown``, ``data`` with ``filename``, or ``chunks``; ``title`` and ``metadata`` are optional. An
        unchanged record (same content, title and metadata) costs nothing; a record whose metadata alone changed
        rewrites its copies' payloads and embeds nothing. The report counts ``added``, ``changed``,
        ``unchanged``, ``failed`` documents like an ingest (a file's bytes that cannot be parsed fail alone).

        Raises:
            RecordError: A bad record (key, content, metadata, or a field type that disagrees with the set's);
                nothing of the batch is written. At most :data:`ragindex.records.MAX_BATCH` records per call.
        """
        from ragindex.records import records_of
        from ragindex.retrieval.search import validate_ids

        validate_ids(user_id=user_id, set_id=set_id)
        checked = records_of(records)  # type: ignore[arg-type]
        self.owner.begin()
        self._enable_sparse_kinds()
        sync = self._source_sync(exclude=(), per_file=False, progress=progress)
        shared = self._parser_lock.acquire(blocking=False)
        try:
            sync.parser = self._shared_parser() if shared else None
            report = sync.upsert(checked, user_id=user_id, set_id=set_id, job_id=job_id)
        finally:
            if shared:
                self._parser_lock.release()
        self.owner.settle_runs(self.kinds, self.settings.indexing_stale_seconds)
        # no optimize() here, unlike ingest: upserts are small and frequent, and an HNSW build of a large shard
        # blocks the process for minutes; a bulk load is optimised by the set's next ingest or POST /v1/optimize
        return report

    def delete(self, *, keys: Sequence[str], user_id: int = 1, set_id: int = 1) -> DeleteResult:
        """Delete the set's documents with these keys (records' keys, or files' source paths).

        Their chunks leave search at once (REMOVED in the truth store), then are purged from the index (a failed
        purge is left to ``repair``). Keys that name no document are listed in the result's ``missing``.
        """
        from ragindex.records import validate_key
        from ragindex.retrieval.search import validate_ids

        validate_ids(user_id=user_id, set_id=set_id)
        if isinstance(keys, str):
            keys = [keys]
        for key in keys:
            validate_key(key)
        return self._chunk_manager().delete_keys(keys, user_id=user_id, set_id=set_id)

    def _source_sync(self, *, exclude: Sequence[Path], per_file: bool, progress: ProgressFn | None) -> SourceSync:
        """The engine's sync of files and records, with its settings."""
        from ragindex.encoders.warmup import EncoderWarmup
        from ragindex.pipeline.discovery import RemovalGuard
        from ragindex.pipeline.sync import SourceSync, SyncLimits

        settings = self.settings
        return SourceSync(
            self.store,
            self.indexer,
            factory.build_loaders(settings),
            lambda: self.chunker,
            kinds=self.kinds,
            bucket_count=settings.bucket_count,
            max_attempts=settings.max_attempts,
            limits=SyncLimits(
                settings.max_file_bytes,
                settings.max_chunks_per_document,
                settings.parse_timeout_seconds,
                settings.parse_memory_mb,
            ),
            guard=RemovalGuard(settings.max_remove_fraction, settings.remove_guard_min_documents),
            exclude=exclude,
            per_file=per_file,
            chunking_fingerprint=settings.chunking_fingerprint,
            section_max_chars=settings.section_max_chars,
            contextual=settings.contextual_chunks,
            progress=progress,
            stop=self._stop,
            warm=EncoderWarmup(lambda: self.dense).expect,
        )

    def _shared_parser(self) -> IsolatedParser:
        """The engine's parser: its child process starts with the first file to parse and serves every ingest after.

        A resident process (``ragindex watch``, the service's jobs) so pays the parser's start (~0.2 s) once.
        """
        from ragindex.loaders.isolated import IsolatedParser

        if self._parser is None:
            settings = self.settings
            loaders = factory.build_loaders(settings)
            self._parser = IsolatedParser(
                loaders, timeout=settings.parse_timeout_seconds, memory_mb=settings.parse_memory_mb
            )
        return self._parser

    def _own_dirs(self) -> list[Path]:
        """Directories of ragindex itself that discovery never enters: the data dir, a qdrant-client local path."""
        own = [self.settings.data_dir]
        if self.settings.qdrant_path is not None:
            own.append(self.settings.qdrant_path)
        return own

    def _maybe_optimize(self, user_id: int) -> None:
        if self._index is None or self.settings.optimize_min_points <= 0:
            return
        from ragindex.index.routing import bucket_of

        collection = self.read_collection()
        bucket = bucket_of(user_id, self.settings.bucket_count)
        if collection and self._index.count(collection, bucket) >= self.settings.optimize_min_points:
            self._index.optimize(collection, bucket)

    def _enable_sparse_kinds(self) -> None:
        """A sparse kind enabled after the first ingest: give existing rows a PENDING copy of it.

        With sections, the lexical kinds belong to sections only: chunks keep them NULL.
        """
        from ragindex.pipeline.sync import unit_kinds

        units = unit_kinds(self.kinds, self.settings.section_max_chars)
        if units is None:
            self.store.enable_kinds(self.sparse)
            return
        for unit, kinds in units.items():
            self.store.enable_kinds([k for k in kinds if k in self.sparse], unit=unit)

    @contextmanager
    def _unobserved_searches(self) -> Iterator[None]:
        """This thread's searches inside the block are not sampled by the score-drift watch (calibration's own)."""
        self._unobserved.active = True
        try:
            yield
        finally:
            self._unobserved.active = False

    def search(
        self,
        query: str,
        *,
        user_id: int,
        set_id: int,
        doc_ids: Sequence[int] | None = None,
        mode: str = "hybrid",
        top_k: int | None = None,
        score_threshold: float | None = None,
        fusion: str | None = None,
        candidates: int | None = None,
        rerank: bool | None = None,
        expand: str | None = None,
        context_chars: int | None = None,
        group_by: str | None = None,
        sources: str | Sequence[str] | None = None,
        on_source_error: str | None = None,
        filter: Mapping[str, Any] | str | None = None,
        vector: Sequence[float] | None = None,
    ) -> SearchResult:
        """Search one tenant's set; every hit is backfilled from the truth store (no ghost hits).

        ``sources`` (a list or a comma list of ``dense``, ``bm25``, ``sparse``) narrows the sources of this
        search within ``RAGINDEX_RECALL_ENABLED_SOURCES`` (read on every call; unset: every configured source):
        hybrid fuses only those, a single mode must be among them. ``on_source_error`` (default
        ``RAGINDEX_RECALL_ON_SOURCE_ERROR``) decides what a failing source does: ``fail`` raises its error
        (:class:`~ragindex.errors.RetrievalEncodingError` for an unreachable or timed-out encoder,
        :class:`~ragindex.errors.RetrievalBackendError` for a failed index query); ``degrade`` answers from the
        other sources and names the failed one in the result's ``degraded``. Every source failing always raises.

        With ``rerank`` (default: ``RAGINDEX_RERANK_ENABLED``) the fused candidates are reranked by the
        cross-encoder; a hit's score is then its rerank score in [0, 1], and so is ``score_threshold``.

        ``group_by`` (``none``, ``section``, ``document``; default ``RAGINDEX_GROUP_BY``) keeps the best hit of
        each section or document at its place and lists the others in its ``merged``, still returning up to
        ``top_k`` hits. ``expand`` (``none``, ``neighbours``, ``section``; default ``RAGINDEX_EXPAND``) gives each
        hit a ``context``: its text joined with adjacent chunks or with its section, at most ``context_chars``
        characters (0 to 20000; default ``RAGINDEX_CONTEXT_CHARS``). See :mod:`ragindex.retrieval.context`.

        ``filter`` narrows the search to chunks whose metadata matches (the JSON form of Chroma and Pinecone:
        ``{"year": {"$gte": 2020}, "lang": "zh"}``; see :mod:`ragindex.filters`); it is applied inside the index for
        every source and checked again against the truth store. A bad filter raises
        :class:`~ragindex.filters.FilterError` naming the problem (an unknown field lists the set's fields).

        ``vector`` is a query embedding the caller computed with the set's dense model (a list or 1-D array of
        its dimension; it is scaled to unit length): the dense source searches with it and encodes nothing.
        ``query`` then feeds the lexical sources of a hybrid search only, and may be empty in mode ``dense``. A
        vector of another dimension, or a hybrid search with a vector and no text, raises
        :class:`~ragindex.errors.ValidationError`. A vector of another model with the same dimension cannot be
        told apart and ranks at random: encode with :attr:`dense` (``engine.dense.encode_queries([text])[0]``).
        """
        from ragindex.retrieval.context import HitShaper, validate_shape
        from ragindex.retrieval.search import Retriever, SearchRequest, search_mode, validate_ids
        from ragindex.retrieval.sources import enabled_by_setting, source_error_policy

        where, fields = None, {}
        if filter:  # the filter language loads only for a filtered search
            from ragindex.filters import FilterError, parse_filter

            validate_ids(user_id=user_id, set_id=set_id)
            fields = self._field_types(user_id, set_id)
            try:
                where = parse_filter(filter, fields)
            except FilterError:  # perhaps a field another process recorded since: read the set's fields again
                fields = self._field_types(user_id, set_id, fresh=True)
                where = parse_filter(filter, fields)

        request = SearchRequest(
            query=query,
            user_id=user_id,
            set_id=set_id,
            doc_ids=tuple(doc_ids) if doc_ids else None,
            mode=search_mode(mode),
            top_k=top_k if top_k is not None else self.settings.default_top_k,
            score_threshold=score_threshold,
            fusion=fusion or self.settings.fusion,
            candidates=candidates or self.settings.candidates_per_source,
            rerank=self.settings.rerank_enabled if rerank is None else rerank,
            sources=None if sources is None else tuple(sources.split(",") if isinstance(sources, str) else sources),
            on_source_error=source_error_policy(
                self.settings.recall_on_source_error if on_source_error is None else on_source_error
            ),
            where=where,
            fields=fields,
            vector=vector,
        )
        if request.rerank:  # before any search work: a missing model is the caller's 422, not a late 500
            self.reranker.ensure_available()
        shape = validate_shape(
            expand=self.settings.expand if expand is None else expand,
            context_chars=self.settings.context_chars if context_chars is None else context_chars,
            group_by=self.settings.group_by if group_by is None else group_by,
        )
        retriever = Retriever(
            self.store,
            lambda: self.index,
            self.read_collection,
            lambda: self.dense,
            self.sparse,
            bucket_count=self.settings.bucket_count,
            rrf_k=self.settings.rrf_k,
            rrf_weights=self.settings.rrf_weights,
            calibration=self.calibrations.get(user_id, set_id) if self.settings.fusion_calibration else None,
            reranker=lambda: self.reranker,
            rerank_candidates=self.settings.rerank_candidates,
            enabled_sources=enabled_by_setting(self.settings.recall_enabled_sources),
            observe=None
            if self.score_watch is None or getattr(self._unobserved, "active", False)
            else self.score_watch.observe,
        )
        # grouping happens as the hits are built (only the kept ones are); expansion reuses the rows read
        fetch = replace(request, top_k=shape.fetch(request.top_k))
        self._open_bucket_while_warming(user_id)
        result, reads = retriever.run(fetch, group_by=shape.group_by, keep=request.top_k)
        return HitShaper(self.store).apply(result, replace(shape, group_by=GroupBy.NONE), request.top_k, reads)

    def _open_bucket_while_warming(self, user_id: int) -> None:
        """Load the tenant's index bucket now if the query encoder is still being built (a one-shot search).

        The search would load it after the encode, which waits for ONNX Runtime's session (~0.1 s of a one-shot
        ``ragindex search`` left idle): the shard loads during that wait instead.
        """
        warm_up = self.query_warm_up
        if warm_up is None or not warm_up.thread.is_alive():
            return
        collection = self.read_collection()
        if collection is not None:
            from ragindex.index.routing import bucket_of

            self.index.open_bucket(collection, bucket_of(user_id, self.settings.bucket_count))

    def _field_types(self, user_id: int, set_id: int, *, fresh: bool = False) -> dict[str, FieldType]:
        """The set's metadata field types, cached: a field's type never changes once recorded (fields only add)."""
        from ragindex.metadata import FieldType

        key = (user_id, set_id)
        cached = self._fields.get(key)
        if cached is None or fresh:
            cached = {name: FieldType(kind) for name, kind in self.store.field_types(user_id, set_id).items()}
            if len(self._fields) > 4096:  # many tenants: a bounded cache
                self._fields.clear()
            self._fields[key] = cached
        return cached

    def status(self) -> StatusReport:
        """Documents and chunks per status, per set, plus the collections (``to_dict()``: ``status --json``)."""
        from ragindex.results import CollectionStatus, StatusReport

        collections = [
            CollectionStatus(collection=m.collection, state=m.state, dense=m.dense_fingerprint)
            for m in self.store.list_index_meta()
        ]
        return StatusReport.from_counts(self.store.status_counts(), collections)

    def score_report(self) -> list[dict[str, Any]]:
        """The score-drift watch per source and fingerprint (see :func:`ragindex.retrieval.drift.score_report`)."""
        from ragindex.retrieval.drift import score_report

        return score_report(self.store.score_windows(), self.settings.drift_max_shift)

    def reset_scores(self, *, source: str | None = None) -> int:
        """Forget the score windows (of one source): the next window closed becomes the reference again."""
        return self.store.clear_score_stats(source=source)

    def verify(self) -> VerifyReport:
        """Compare the truth store with the index, bucket by bucket (read-only)."""
        from ragindex.pipeline.verify import verify

        return verify(self.store, self.index, self.read_collection(), self.settings.bucket_count, tuple(self.sparse))

    def documents(
        self,
        *,
        user_id: int | None = None,
        set_id: int | None = None,
        status: str | None = None,
        cursor: str | None = None,
        limit: int = 100,
    ) -> DocumentPage:
        """A page of documents by doc_id; see :func:`ragindex.pipeline.inspection.list_documents`."""
        from ragindex.pipeline.inspection import list_documents

        return list_documents(self.store, user_id=user_id, set_id=set_id, status=status, cursor=cursor, limit=limit)

    def document(self, doc_id: int, *, user_id: int | None = None, chunks: bool = False) -> DocumentDetail:
        """A document with its stages and chunk counts (and rows); see :mod:`ragindex.pipeline.inspection`."""
        from ragindex.pipeline.inspection import describe_document

        return describe_document(self.store, doc_id, user_id=user_id, chunks=chunks)

    def parsed_document(self, doc_id: int, *, user_id: int | None = None) -> ParsedDocument:
        """The parsed artifact of a document: the markdown its current version was chunked from, and its blocks.

        Scoped to ``user_id`` when given. Raises :class:`~ragindex.errors.NotFoundError` for an unknown, deleted or
        other tenant's document, and for one without an artifact (ingested before artifacts were kept: re-ingest
        with ``full=True``); see :func:`ragindex.pipeline.inspection.read_parsed`.
        """
        from ragindex.pipeline.inspection import read_parsed

        return read_parsed(self.store, doc_id, user_id=user_id)

    # ------------------------------------------------------------------ shared with the mixins
    @property
    def kinds(self) -> tuple[str, ...]:
        """Enabled vector kinds in stage order (dense first)."""
        return (VectorKind.DENSE, *self.sparse)

    def _active_indexer(self) -> Indexer | None:
        """Index stages bound to the ACTIVE collection (adopting a new sparse provider), or None before any."""
        collection = self.collections.read_for_write()
        return self.indexer(collection) if collection is not None else None
