"""The Engine's maintenance operations: repair, the reconciler and reindexing (seed sections 4.6 and 9.7).

A mixin of :class:`ragindex.engine.Engine`, kept apart so that the engine module stays about ingest and search;
each method builds the pipeline object that does the work (:mod:`ragindex.pipeline.repair`,
:mod:`ragindex.pipeline.reconcile`, :mod:`ragindex.pipeline.reindex`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ragindex import factory
from ragindex.store.records import IndexMeta
from ragindex.store.states import CollectionState, IndexStatus

if TYPE_CHECKING:
    from ragindex.config.settings import Settings
    from ragindex.encoders.protocol import DenseEncoder, SparseEncoder
    from ragindex.index.protocol import VectorIndex
    from ragindex.pipeline.catalog import CollectionCatalog
    from ragindex.pipeline.indexer import Indexer
    from ragindex.pipeline.lease import ProcessOwner
    from ragindex.pipeline.reconcile import Reconciler
    from ragindex.pipeline.reindex import ReindexReport
    from ragindex.pipeline.repair import Repairer, RepairReport
    from ragindex.pipeline.stopping import StopSignal
    from ragindex.results import ReindexResult, StaleRelease
    from ragindex.store.protocol import TruthStore


class Maintenance:
    """Repair, reconcile and reindex an :class:`~ragindex.engine.Engine`'s deployment (mixed into the Engine)."""

    if TYPE_CHECKING:  # provided by the Engine
        settings: Settings
        store: TruthStore
        sparse: dict[str, SparseEncoder]
        collections: CollectionCatalog
        owner: ProcessOwner
        _stop: StopSignal

        @property
        def index(self) -> VectorIndex: ...  # noqa: D102
        @property
        def dense(self) -> DenseEncoder: ...  # noqa: D102
        @property
        def kinds(self) -> tuple[str, ...]: ...  # noqa: D102

        def indexer(self, collection: str | None = None) -> Indexer: ...  # noqa: D102
        def read_collection(self) -> str | None: ...  # noqa: D102
        def write_collection(self) -> str: ...  # noqa: D102
        def _active_indexer(self) -> Indexer | None: ...
        def _enable_sparse_kinds(self) -> None: ...

    def _repairer(self, stale_seconds: float | None = None) -> Repairer:
        from ragindex.encoders.cached import CachedDenseEncoder
        from ragindex.pipeline.reindex import CollectionBuilder
        from ragindex.pipeline.repair import Repairer

        builders: list[tuple[IndexMeta, CollectionBuilder | None]] = []
        for meta in self.store.list_index_meta():
            if meta.state != CollectionState.BUILDING:
                continue
            builder = None
            if meta.dense_fingerprint == self.dense.fingerprint:
                builder = CollectionBuilder(
                    self.store,
                    self.index,
                    meta.collection,
                    CachedDenseEncoder(self.dense, self.store),
                    self.sparse,
                    bucket_count=self.settings.bucket_count,
                    batch_size=self.settings.embed_batch_size,
                    stop=self._stop,
                )
            builders.append((meta, builder))
        return Repairer(
            self.store,
            self.index,
            self._active_indexer(),
            self.kinds,
            bucket_count=self.settings.bucket_count,
            max_attempts=self.settings.max_attempts,
            stale_seconds=self.settings.indexing_stale_seconds if stale_seconds is None else stale_seconds,
            builders=builders,
            owner=self.owner,
            contextual=self.settings.contextual_chunks,
        )

    def repair(self, dry_run: bool = False, *, stale_seconds: float | None = None) -> RepairReport:
        """Converge the index copies to the truth store (seed 4.6); ``dry_run`` only reports.

        Stale INDEXING claims, FAILED chunks below ``max_attempts``, REMOVED chunks not yet purged,
        SUCCESS copies missing from the index and orphan points, in the ACTIVE collection and in a
        collection being built by ``reindex --into``. ``stale_seconds`` overrides
        ``indexing_stale_seconds``.
        """
        if dry_run:
            self.owner.lock()
        else:
            self.owner.begin(release=False)  # the repair releases (and reports) the gone owners' claims itself
            self._enable_sparse_kinds()
            if self.read_collection() is None and self.store.chunks_needing_work(self.kinds):
                # an ingest died after its first truth write but before its first index write:
                # create the collection it would have created, so its chunks are indexed now
                self.write_collection()
        return self._repairer(stale_seconds).run(dry_run=dry_run)

    def reconciler(self, *, owner: str | None = None) -> Reconciler:
        """The periodic reconciler over this store and the ACTIVE collection (:mod:`ragindex.pipeline.reconcile`)."""
        from ragindex.pipeline.reconcile import ReconcilePolicy, Reconciler

        policy = ReconcilePolicy.from_settings(self.settings.pipeline)
        return Reconciler(
            self.store,
            self._active_indexer,
            self.kinds,
            policy,
            owner=owner,
            release_gone=lambda: self.owner.release_gone().ids,
        )

    def repair_stale_indexing(self, limit: int | None = None, *, stale_seconds: float | None = None) -> StaleRelease:
        """Release INDEXING claims older than the stale timeout (up to ``limit`` per kind), then index those chunks."""
        from ragindex.pipeline.repair import index_chunks
        from ragindex.results import StaleRelease

        self.owner.begin(release=False)
        released = self._repairer(stale_seconds).release_stale(limit=limit)
        ids = list(dict.fromkeys(cid for kind_ids in released.values() for cid in kind_ids))
        counts = {k: len(v) for k, v in released.items()}
        indexer = self._active_indexer() if ids else None
        if indexer is None:
            return StaleRelease(released=counts, chunk_ids=tuple(ids[:10]))
        results = index_chunks(self.store, indexer, chunk_ids=ids)
        return StaleRelease(
            released=counts,
            chunk_ids=tuple(ids[:10]),
            indexed={k: len(r.indexed) for k, r in results.items()},
            failed={k: len(r.failed) for k, r in results.items()},
        )

    def reindex_failed(self, ids: Sequence[str] | None = None) -> ReindexResult:
        """Explicit retry (seed 4.6): FAILED copies (all, or of ``ids``) go back to PENDING whatever their attempts.

        Then exactly those chunks are indexed. Unknown or deleted ids raise NotFoundError before anything changes.
        """
        from ragindex.pipeline.repair import explicit_reindex

        self.owner.begin()
        return explicit_reindex(self.store, self.indexer, self.kinds, ids, from_statuses=(IndexStatus.FAILED,))

    def reindex_chunks(self, ids: Sequence[str]) -> ReindexResult:
        """Rebuild the copies of the given chunks, FAILED or SUCCESS (an INDEXING claim is left to its owner)."""
        from ragindex.pipeline.repair import explicit_reindex

        self.owner.begin()
        return explicit_reindex(
            self.store, self.indexer, self.kinds, ids, from_statuses=(IndexStatus.FAILED, IndexStatus.SUCCESS)
        )

    def reindex_into(
        self,
        name: str,
        model: str | None = None,
        drop_old: bool = False,
        *,
        progress: Callable[[str, int], None] | None = None,
    ) -> ReindexReport:
        """Build collection ``name`` from the truth store, then make it the one searches read (seed 9.7).

        Args:
            name: New collection name (``^[A-Za-z][A-Za-z0-9_]{0,40}$``, must not exist; a BUILDING one
                with the same model is resumed).
            model: Dense model of the new collection (default: the configured one; with the same model the
                embedding cache is reused and nothing is re-embedded). With another model, every process
                must run with ``RAGINDEX_DENSE_MODEL=<model>`` after the switch.
            drop_old: Drop the previously ACTIVE collection once the new one is active.
            progress: Called with (kind, copies written) after each batch.
        """
        from ragindex.encoders.cached import CachedDenseEncoder
        from ragindex.pipeline.reindex import CollectionBuilder, reindex_into, validate_collection_name

        validate_collection_name(name)
        self.owner.begin()
        encoder = self.dense
        if model is not None and model != self.settings.dense_model:
            encoder = factory.build_dense_encoder(self.settings, model)
            if encoder.fingerprint != self.dense.fingerprint:
                _ = encoder.dimension  # load it now: a wrong model name fails before anything is recorded
        builder = CollectionBuilder(
            self.store,
            self.index,
            name,
            CachedDenseEncoder(encoder, self.store),
            self.sparse,
            bucket_count=self.settings.bucket_count,
            batch_size=self.settings.embed_batch_size,
            progress=progress,
            stop=self._stop,
        )
        return reindex_into(
            self.store,
            self.index,
            self.collections.meta_for(name, state=CollectionState.BUILDING, dense=encoder),
            builder,
            drop_old=drop_old,
            configured_fingerprint=self.dense.fingerprint,
        )
