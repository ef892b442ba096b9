"""The index stages: claim chunks in the truth store, encode them, write index copies, confirm.

For every batch: CAS claim (PENDING/FAILED -> INDEXING) -> encode (cache first) -> lease
guard -> index write -> SUCCESS. A batch whose encoder or index write fails is marked FAILED
with the error and the other batches go on (seed section 4.1). A crash anywhere leaves INDEXING
rows held by a dead owner, which the next command releases (:mod:`ragindex.pipeline.lease`);
index writes are idempotent upserts keyed by chunk_id, so redoing a batch is always safe. A stop
request (SIGINT, SIGTERM) ends the run at the next batch boundary with :class:`Interrupted`.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import TypeVar

from ragindex.encoders.cached import CachedDenseEncoder
from ragindex.encoders.protocol import SparseEncoder
from ragindex.errors import Interrupted, RagindexError
from ragindex.index.protocol import DensePoint, SparsePoint, VectorIndex
from ragindex.pipeline import faults
from ragindex.pipeline.lease import Lease
from ragindex.pipeline.payloads import PayloadMetadata
from ragindex.pipeline.stopping import StopFlag
from ragindex.store.protocol import TruthStore
from ragindex.store.records import ChunkRow, Claim
from ragindex.store.states import IndexStatus, Lifecycle
from ragindex.types import SparseVector, VectorKind

log = logging.getLogger(__name__)

Progress = Callable[[str, int], None]
_T = TypeVar("_T")


@dataclass
class StageResult:
    """Outcome of one index stage (one vector kind) over a set of chunks."""

    kind: str
    total: int = 0
    indexed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    duration_ms: float = 0.0
    time_by_doc_ms: dict[int, float] = field(default_factory=dict)


@dataclass(eq=False)
class Indexer:
    """Runs the dense stage and the sparse stages (bm25, learned sparse) over truth-store chunks.

    Args:
        store: The truth store.
        index: The vector index.
        collection: The logical collection written to.
        dense: The dense encoder behind the embedding cache (created lazily by the caller).
        sparse: Sparse encoders by vector kind (``bm25``, ``sparse``).
        batch_size: Chunks per claim / encode / write batch.
        lease: This process's claim lease: claims carry its owner, and every index write is guarded by it.
        stop: Set by a signal handler (or a cancelled call): the run stops at the next batch boundary.
    """

    store: TruthStore
    index: VectorIndex
    collection: str
    dense: Callable[[], CachedDenseEncoder]
    sparse: dict[str, SparseEncoder]
    _: KW_ONLY
    batch_size: int = 64
    lease: Lease | None = None
    stop: StopFlag | None = None
    _dense: CachedDenseEncoder | None = field(default=None, init=False, repr=False)
    _dim: int | None = field(default=None, init=False, repr=False)

    def _encoder(self) -> CachedDenseEncoder:
        if self._dense is None:
            self._dense = self.dense()
        return self._dense

    def dense_counts(self) -> tuple[int, int]:
        """(vectors computed by the encoder, vectors reused from the cache) since this indexer was built."""
        if self._dense is None:
            return 0, 0
        return self._dense.computed, self._dense.reused

    @property
    def kinds(self) -> tuple[str, ...]:
        """Enabled vector kinds, in stage order."""
        return (VectorKind.DENSE, *self.sparse)

    def run(self, kind: str, rows: Sequence[ChunkRow], progress: Progress | None = None) -> StageResult:
        """Index ``rows`` for ``kind`` batch by batch; failures are recorded, never raised."""
        result = StageResult(kind=kind, total=len(rows))
        started = time.perf_counter()
        if kind == VectorKind.DENSE:
            # batches of similar length pad least: the encoder sorts only within one call, so sort across calls
            rows = sorted(rows, key=lambda r: len(r.indexed_text))
            if rows:  # a small run goes to the light encoder: no torch import for a few changed files
                self._encoder().plan(len(rows))
        for start in range(0, len(rows), self.batch_size):
            check_stop(self.stop)
            batch = rows[start : start + self.batch_size]
            t0 = time.perf_counter()
            self._run_batch(kind, batch, result)
            spent = (time.perf_counter() - t0) * 1000
            for row in batch:
                result.time_by_doc_ms[row.doc_id] = result.time_by_doc_ms.get(row.doc_id, 0.0) + spent / len(batch)
            if progress:
                progress(kind, len(batch))
        result.duration_ms = (time.perf_counter() - started) * 1000
        return result

    def _run_batch(self, kind: str, batch: Sequence[ChunkRow], result: StageResult) -> None:
        if self.lease is not None:
            self.lease.ensure()
        claim = self.store.claim(kind, [r.chunk_id for r in batch])
        if not claim.complete:
            owned = set(claim.chunk_ids)
            lost = [r.chunk_id for r in batch if r.chunk_id not in owned]
            result.skipped += lost
            log.warning(
                "%s claim took %d of %d chunks (claimed elsewhere or no longer claimable)", kind, len(owned), len(batch)
            )
            batch = [r for r in batch if r.chunk_id in owned]
        if not batch:
            return
        # index the content as of the claim: an edit between the caller's read and the claim is not lost
        batch = self.store.get_chunks([r.chunk_id for r in batch])

        def write() -> list[ChunkRow]:
            faults.hit(f"{kind}.after_claim")
            if kind == VectorKind.DENSE:
                return self._write_dense(claim, batch)
            return self._write_sparse(claim, kind, batch)

        written = write_or_fail(kind, write, lambda exc: self._fail(claim, batch, result, exc))
        if written is None:
            return
        if len(written) != len(batch):
            kept = {r.chunk_id for r in written}
            lost = [r.chunk_id for r in batch if r.chunk_id not in kept]
            log.warning("%s: %d chunks were taken over before their index write; not written", kind, len(lost))
            result.skipped += lost
            batch = written
            if not batch:
                return
        try:
            faults.hit(f"{kind}.before_mark_success")
            moved = self.store.mark_success(claim, [r.chunk_id for r in batch])
        except RagindexError as exc:
            # the copies are written but the truth write failed: SQL wins (seed section 7); the next
            # index run overwrites the copies under the same chunk ids
            self._fail(claim, batch, result, exc)
            return
        if moved != len(batch):
            log.warning("%s: %d of %d chunks lost their claim before SUCCESS", kind, len(batch) - moved, len(batch))
            self._undo_stale_writes(kind, batch)
        result.indexed += [r.chunk_id for r in batch]

    def _undo_stale_writes(self, kind: str, batch: Sequence[ChunkRow]) -> None:
        """After a lost claim, re-queue the chunks edited since the claim.

        They just got a copy of their old content, possibly written after the copy of the new one.
        Their copies go back to PENDING whoever holds them (a claim in flight is cancelled), so the
        next index run or repair writes the current content.
        """
        current = {r.chunk_id: r for r in self.store.get_chunks([r.chunk_id for r in batch])}
        stale = [
            r.chunk_id
            for r in batch
            if r.chunk_id in current
            and current[r.chunk_id].content_hash != r.content_hash
            and current[r.chunk_id].lifecycle_status == Lifecycle.ACTIVE
        ]
        if stale:
            log.warning("%s: %d chunks were edited while being indexed; their copies are re-queued", kind, len(stale))
            # a point owner's write replaced the whole point: every later kind must be written again
            kinds = self.kinds[self.kinds.index(kind) :] if batch[0].owns_point(kind) else (kind,)
            self.store.reset_status(stale, kinds, from_statuses=tuple(IndexStatus))

    def _fail(self, claim: Claim, batch: Sequence[ChunkRow], result: StageResult, exc: Exception) -> None:
        error = f"{type(exc).__name__}: {exc}"
        log.warning("%s batch of %d chunks failed: %s", claim.kind, len(batch), error)
        self.store.mark_failed(claim, [r.chunk_id for r in batch], error)
        for row in batch:
            result.failed[row.chunk_id] = error

    def _still_held(self, claim: Claim, batch: Sequence[ChunkRow]) -> set[str]:
        """The lease guard before an index write: ids of ``batch`` the claim still holds (all without a lease)."""
        if self.lease is None:
            return {r.chunk_id for r in batch}
        return set(self.lease.guard(claim, [r.chunk_id for r in batch]))

    def _write_dense(self, claim: Claim, batch: Sequence[ChunkRow]) -> list[ChunkRow]:
        """Encode and write whole points; return the rows written (those whose claim held until the write)."""
        encoder = self._encoder()
        vectors = encoder.encode_documents([r.indexed_text for r in batch], [r.content_hash for r in batch])
        faults.hit("dense.after_encode")
        held = self._still_held(claim, batch)
        meta = PayloadMetadata(self.store, batch)
        by_bucket: dict[int, list[DensePoint]] = defaultdict(list)
        for row, vector in zip(batch, vectors, strict=True):
            if row.chunk_id not in held:
                continue
            by_bucket[row.bucket_id].append(
                DensePoint(row.chunk_id, row.user_id, row.set_id, row.doc_id, vector, meta=meta.of(row))
            )
        for bucket, points in by_bucket.items():
            self.index.upsert_dense(self.collection, bucket, points)
        self._index_fields(meta, batch)
        faults.hit("dense.after_index_write")
        return [r for r in batch if r.chunk_id in held]

    def _write_sparse(self, claim: Claim, kind: str, batch: Sequence[ChunkRow]) -> list[ChunkRow]:
        """Sparse vectors onto existing points, or, for rows without a dense copy (sections), whole points."""
        vectors = self.sparse[kind].encode_documents([r.indexed_text for r in batch])
        faults.hit(f"{kind}.after_encode")
        held = self._still_held(claim, batch)
        updates: dict[int, dict[str, SparseVector]] = defaultdict(dict)
        owned: dict[int, list[SparsePoint]] = defaultdict(list)
        meta = PayloadMetadata(self.store, [r for r in batch if r.owns_point(kind)])
        for row, vector in zip(batch, vectors, strict=True):
            if row.chunk_id not in held:
                continue
            if row.owns_point(kind):
                owned[row.bucket_id].append(
                    SparsePoint(row.chunk_id, row.user_id, row.set_id, row.doc_id, vector, meta=meta.of(row))
                )
            else:
                updates[row.bucket_id][row.chunk_id] = vector
        for bucket, points in owned.items():
            self.index.upsert_sparse(self.collection, bucket, kind, points, dense_dim=self._dense_dim())
        self._index_fields(meta, [r for r in batch if r.owns_point(kind)])
        for bucket, items in updates.items():
            self.index.update_sparse(self.collection, bucket, kind, items)
        faults.hit(f"{kind}.after_index_write")
        return [r for r in batch if r.chunk_id in held]

    def _index_fields(self, meta: PayloadMetadata, rows: Sequence[ChunkRow]) -> None:
        """The payload indexes of the metadata fields of the buckets just written (once per bucket and field)."""
        for bucket, types in {r.bucket_id: meta.types_of(r) for r in rows}.items():
            if types:
                self.index.ensure_field_indexes(self.collection, bucket, types)

    def _dense_dim(self) -> int:
        """The dense size of the collection (from its metadata; the encoder's only for a collection without one)."""
        if self._dim is None:
            meta = self.store.get_index_meta(self.collection)
            self._dim = meta.dense_dim if meta is not None and meta.dense_dim else self._encoder().encoder.dimension
        return self._dim

    def purge(self, rows: Sequence[ChunkRow]) -> tuple[list[str], dict[str, str]]:
        """Delete the index copies of REMOVED chunks, then record them purged; failures stay for repair."""
        by_bucket: dict[int, list[str]] = defaultdict(list)
        for row in rows:
            by_bucket[row.bucket_id].append(row.chunk_id)
        purged: list[str] = []
        failed: dict[str, str] = {}
        for bucket, ids in by_bucket.items():
            try:
                faults.hit("purge.before_index_delete")
                self.index.delete_points(self.collection, bucket, ids)
                faults.hit("purge.after_index_delete")
                self.store.mark_purged(ids)
                purged += ids
            except RagindexError as exc:
                log.warning("purging %d index copies failed (repair will retry): %s", len(ids), exc)
                failed.update(dict.fromkeys(ids, str(exc)))
        return purged, failed


def write_or_fail(what: str, write: Callable[[], _T], fail: Callable[[Exception], None]) -> _T | None:
    """Run one batch's index write; a failure goes to ``fail`` (and None is returned), so the other batches go on.

    Args:
        what: Names the batch in the log of an unexpected error (one that is not a :class:`RagindexError`).
        write: The write; returns what it wrote.
        fail: Records the failure of the batch.
    """
    try:
        return write()
    except RagindexError as exc:
        fail(exc)
    except Exception as exc:  # an encoder or client bug must not stop the other batches
        log.exception("%s batch failed unexpectedly", what)
        fail(exc)
    return None


def check_stop(stop: StopFlag | None) -> None:
    """Raise :class:`Interrupted` when a stop was requested (called at batch and file boundaries)."""
    if stop is not None and stop.is_set():
        raise Interrupted("stopped by a signal; what this process had claimed is given back, run the command again")
