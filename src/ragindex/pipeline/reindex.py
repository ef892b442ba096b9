"""Reindex into a new collection: the model-upgrade path of seed section 9.7 (never mix vector spaces in place).

``ragindex reindex --into NAME [--model M]`` builds a *new* collection from the truth store
while searches keep reading the ACTIVE one:

1. record ``index_meta(NAME, state=BUILDING, dense fingerprint of the build's model)``;
2. copy every ACTIVE chunk into NAME, kind by kind, exactly where the truth store says the
   ACTIVE collection holds a copy (status SUCCESS). The chunk status columns describe the
   ACTIVE collection, so the build writes through the encoders and the index directly and
   never touches them; at the switch they then describe NAME just as well. Dense vectors go
   through the embedding cache: with the same model nothing is re-embedded;
3. catch up: chunks whose row changed after the build started (``updated_at``: new,
   re-embedded, deleted chunks) are copied again (deleted ones are dropped as orphans), pass
   after pass until a pass finds nothing to do, which is also the count check (every
   expected copy present, no point without an ACTIVE truth row);
4. switch atomically (``set_active_collection``: one transaction), then drop the old
   collection if asked.

A build that stops half way (crash, encoder failure) stays BUILDING; searches never see it.
Running the same command again resumes it, and ``ragindex repair`` converges it too.

Limitations: a write that lands between the last catch-up pass and the switch (a fraction of
a second) reaches only the old collection (``ragindex repair`` afterwards restores missing
copies, but cannot tell a stale vector of a chunk edited in that window: re-run
``ragindex reindex --chunk-id``); ``updated_at`` comes from the writers' clocks, so hosts
with skewed clocks can miss the catch-up. Run a reindex while no ingest is running for a
guarantee.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import KW_ONLY, asdict, dataclass, field
from functools import partial
from typing import Any, Protocol

from ragindex.clock import utcnow
from ragindex.encoders.cached import CachedDenseEncoder
from ragindex.encoders.protocol import SparseEncoder
from ragindex.errors import IntegrityError, RagindexError, ValidationError
from ragindex.index.protocol import DensePoint, SparsePoint, VectorIndex
from ragindex.pipeline.indexer import check_stop, write_or_fail
from ragindex.pipeline.samples import SAMPLE, Sampled
from ragindex.pipeline.stopping import StopFlag
from ragindex.results import json_fields
from ragindex.store.protocol import TruthStore
from ragindex.store.records import ChunkRow, IndexMeta, point_owner
from ragindex.store.states import CollectionState, IndexStatus, Lifecycle
from ragindex.types import VectorKind

log = logging.getLogger(__name__)

COLLECTION_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,40}$")
MAX_PASSES = 5
BuildProgress = Callable[[str, int], None]


def validate_collection_name(name: str) -> None:
    """Collection names follow ``collection_prefix``'s rule (a letter, then up to 40 letters, digits, ``_``)."""
    if not COLLECTION_NAME.match(name or ""):
        raise ValidationError(
            "collection", f"{name!r} is not a valid collection name (pattern {COLLECTION_NAME.pattern})"
        )


class FoundCounts(Protocol):
    """A report that counts (and samples) orphan points and missing copies by kind: repair's, a build pass's."""

    orphans: int
    missing: dict[str, int]

    def sample(self, key: str, ids: Sequence[str]) -> None: ...  # noqa: D102


def count_found(report: FoundCounts, orphans: Sequence[str], missing: Mapping[str, Sequence[str]]) -> None:
    """Count and sample what the scan of one bucket found: orphan points, and the missing copies by kind."""
    report.orphans += len(orphans)
    report.sample("orphans", orphans)
    for kind, ids in missing.items():
        report.missing[kind] += len(ids)
        report.sample(f"missing_{kind}", ids)


@dataclass
class ConvergeStats(Sampled):
    """What one pass over a collection found (missing copies, orphans) and did (copies written, orphans deleted)."""

    kinds: tuple[str, ...]
    missing: dict[str, int] = field(default_factory=dict)  # kind -> copies to write (missing or to refresh)
    orphans: int = 0
    copied: dict[str, int] = field(default_factory=dict)
    orphans_deleted: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # chunk_id -> error

    def __post_init__(self) -> None:
        for kind in self.kinds:
            self.missing.setdefault(kind, 0)
            self.copied.setdefault(kind, 0)

    @property
    def work(self) -> int:
        """Copies and orphans this pass found."""
        return sum(self.missing.values()) + self.orphans

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            **json_fields(self, omit=("samples", "kinds")),
            "failed": len(self.failed),
            "failed_ids": sorted(self.failed)[:SAMPLE],
            "samples": self.kept_samples(),
        }


@dataclass(eq=False)
class CollectionBuilder:
    """Writes index copies of ACTIVE chunks into one collection without touching the chunk status columns.

    Args:
        store: The truth store (read only, plus the embedding cache).
        index: The vector index.
        collection: The collection built.
        dense: The build model behind the embedding cache.
        sparse: Sparse encoders by vector kind.
        bucket_count: Tenant buckets.
        batch_size: Chunks per encode / write batch.
        progress: Called with (kind, copies written) after each batch.
        stop: Checked before each batch: set, the build stops there (:class:`~ragindex.errors.Interrupted`) and
            stays BUILDING, for the next ``reindex --into`` or ``repair`` to resume.
    """

    store: TruthStore
    index: VectorIndex
    collection: str
    dense: CachedDenseEncoder
    sparse: Mapping[str, SparseEncoder]
    _: KW_ONLY
    bucket_count: int
    batch_size: int = 64
    progress: BuildProgress | None = None
    stop: StopFlag | None = None

    def __post_init__(self) -> None:
        self.sparse = dict(self.sparse)

    @property
    def kinds(self) -> tuple[str, ...]:
        """Vector kinds written, dense first."""
        return (VectorKind.DENSE, *self.sparse)

    def buckets(self) -> list[int]:
        """Buckets holding chunks in the truth store or points in the collection."""
        in_index = {b for b in range(self.bucket_count) if self.index.has_bucket(self.collection, b)}
        return sorted(set(self.store.buckets_in_use()) | in_index)

    def converge(self, *, recopy: Collection[str] = frozenset(), dry_run: bool = False) -> ConvergeStats:
        """One pass: write every missing copy (and those of ``recopy``), delete points with no ACTIVE truth row.

        The index is read before the truth store, so a point written concurrently (its truth row
        always exists first) is never mistaken for an orphan.
        """
        stats = ConvergeStats(self.kinds)
        sparse_kinds = tuple(self.sparse)
        for bucket in self.buckets():
            present = self.index.vectors_present(self.collection, bucket)
            expected = self.store.expected_points(bucket)
            orphans = sorted(cid for cid in present if cid not in expected)
            work: dict[str, list[str]] = {kind: [] for kind in self.kinds}
            for cid, statuses in expected.items():
                owner = point_owner(statuses)
                if owner is None or statuses.get(owner) != IndexStatus.SUCCESS:
                    continue  # no copy in the ACTIVE collection: the index stages will write it after the switch
                later = [k for k in sparse_kinds if k != owner and statuses.get(k) == IndexStatus.SUCCESS]
                have = present.get(cid)
                if have is None or cid in recopy:
                    # the owner's write replaces the point (dense for a chunk, bm25 for a section): rewrite the rest
                    for kind in (owner, *later):
                        work[kind].append(cid)
                    continue
                for kind in later:
                    if kind not in have:
                        work[kind].append(cid)
            count_found(stats, orphans, work)
            if dry_run:
                continue
            if orphans:
                self.index.delete_points(self.collection, bucket, orphans)
                stats.orphans_deleted += len(orphans)
            self._write(bucket, work, stats)
        return stats

    def _write(self, bucket: int, work: Mapping[str, Sequence[str]], stats: ConvergeStats) -> None:
        for kind in self.kinds:
            ids = [cid for cid in work.get(kind, ()) if cid not in stats.failed]
            if kind == VectorKind.DENSE and ids:  # the runtime (and cache key) an ingest of this size would use
                self.dense.plan(len(ids))
            for start in range(0, len(ids), self.batch_size):
                check_stop(self.stop)
                rows = self.store.get_chunks(ids[start : start + self.batch_size])
                rows = [r for r in rows if r.lifecycle_status == Lifecycle.ACTIVE]
                if not rows:
                    continue
                write = (
                    partial(self._write_dense, bucket, rows)
                    if kind == VectorKind.DENSE
                    else partial(self._write_sparse, bucket, kind, rows)
                )
                if write_or_fail(f"reindex {kind}", write, partial(self._fail, kind, rows, stats=stats)) is None:
                    continue
                stats.copied[kind] += len(rows)
                if self.progress:
                    self.progress(kind, len(rows))

    def _fail(self, kind: str, rows: Sequence[ChunkRow], exc: Exception, *, stats: ConvergeStats) -> None:
        error = f"{kind}: {type(exc).__name__}: {exc}"
        log.warning("reindex into %s: batch of %d chunks failed: %s", self.collection, len(rows), error)
        for row in rows:
            stats.failed[row.chunk_id] = error

    def _write_dense(self, bucket: int, rows: Sequence[ChunkRow]) -> Sequence[ChunkRow]:
        vectors = self.dense.encode_documents([r.indexed_text for r in rows], [r.content_hash for r in rows])
        points = [
            DensePoint(chunk_id=r.chunk_id, user_id=r.user_id, set_id=r.set_id, doc_id=r.doc_id, vector=v)
            for r, v in zip(rows, vectors, strict=True)
        ]
        self.index.upsert_dense(self.collection, bucket, points)
        return rows

    def _write_sparse(self, bucket: int, kind: str, rows: Sequence[ChunkRow]) -> Sequence[ChunkRow]:
        vectors = self.sparse[kind].encode_documents([r.indexed_text for r in rows])
        owner = {r.chunk_id: r.owns_point(kind) for r in rows}
        pairs = list(zip(rows, vectors, strict=True))
        owned = [
            SparsePoint(r.chunk_id, user_id=r.user_id, set_id=r.set_id, doc_id=r.doc_id, vector=v)
            for r, v in pairs
            if owner[r.chunk_id]
        ]
        if owned:  # sections: the lexical kind writes the whole point
            meta = self.store.get_index_meta(self.collection)
            dim = meta.dense_dim if meta is not None and meta.dense_dim else self.dense.encoder.dimension
            self.index.upsert_sparse(self.collection, bucket, kind, owned, dense_dim=dim)
        updates = {r.chunk_id: v for r, v in pairs if not owner[r.chunk_id]}
        if updates:
            self.index.update_sparse(self.collection, bucket, kind, updates)
        return rows


@dataclass
class ReindexReport:
    """What ``reindex --into`` did."""

    collection: str
    previous: str | None
    dense_fingerprint: str
    resumed: bool = False
    switched: bool = False
    dropped: str | None = None
    passes: int = 0
    copied: dict[str, int] = field(default_factory=dict)
    orphans_deleted: int = 0
    points: int = 0
    expected_points: int = 0
    embedded: int = 0
    reused: int = 0
    notes: list[str] = field(default_factory=list)
    duration_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The JSON printed by ``ragindex reindex --into NAME --json``: every field, in order."""
        return {**asdict(self), "duration_ms": round(self.duration_ms, 1)}


def _check_target(meta: IndexMeta, every: Sequence[IndexMeta]) -> bool:
    """Refuse a bad or taken name and a second concurrent build; return True to resume a BUILDING ``meta``."""
    name = meta.collection
    validate_collection_name(name)
    existing = next((m for m in every if m.collection == name), None)
    building = [m.collection for m in every if m.state == CollectionState.BUILDING and m.collection != name]
    if building:
        raise ValidationError(
            "collection",
            f"collection {building[0]!r} is being built; finish it first: `ragindex reindex --into {building[0]}` "
            "with the same --model resumes it",
        )
    if existing is None:
        return False
    if existing.state != CollectionState.BUILDING:
        raise ValidationError(
            "collection", f"collection {name!r} already exists ({existing.state}); reindex into a new name"
        )
    if existing.dense_fingerprint != meta.dense_fingerprint:
        raise ValidationError(
            "collection",
            f"collection {name!r} is being built with {existing.dense_fingerprint!r}, not "
            f"{meta.dense_fingerprint!r}; resume it with the same --model, or reindex into another name",
        )
    return True


def reindex_into(
    store: TruthStore,
    index: VectorIndex,
    meta: IndexMeta,
    builder: CollectionBuilder,
    *,
    drop_old: bool = False,
    configured_fingerprint: str | None = None,
) -> ReindexReport:
    """Build ``meta.collection`` from the truth store, check it, make it ACTIVE (see the module docstring).

    Args:
        store: The truth store.
        index: The vector index.
        meta: The new collection's metadata (state BUILDING, fingerprint of the build's model).
        builder: Writes into ``meta.collection``.
        drop_old: Drop the previously ACTIVE collection after the switch.
        configured_fingerprint: The configured dense model's fingerprint (to warn when the build's differs).

    Raises:
        ValidationError: Bad name, the name exists (and is not a resumable build), another build is running.
        IntegrityError: Copies failed or writes kept landing; the collection stays BUILDING (run again to resume).
    """
    started_clock = time.perf_counter()
    name = meta.collection
    every = store.list_index_meta()
    resumed = _check_target(meta, every)
    previous = next((m.collection for m in every if m.state == CollectionState.ACTIVE), None)
    report = ReindexReport(
        collection=name, previous=previous, dense_fingerprint=meta.dense_fingerprint, resumed=resumed
    )
    report.copied = dict.fromkeys(builder.kinds, 0)
    if not resumed:
        store.put_index_meta(meta)
    since = store.index_meta_created_at(name) or utcnow()

    stats: ConvergeStats | None = None
    while report.passes < MAX_PASSES:
        report.passes += 1
        mark = utcnow()
        recopy = set(store.chunk_ids_updated_since(since))
        stats = builder.converge(recopy=recopy)
        for kind, n in stats.copied.items():
            report.copied[kind] = report.copied.get(kind, 0) + n
        report.orphans_deleted += stats.orphans_deleted
        report.embedded, report.reused = builder.dense.computed, builder.dense.reused
        if stats.failed:
            raise IntegrityError(
                f"reindex into {name!r}: {len(stats.failed)} chunk(s) could not be copied (e.g. "
                f"{next(iter(stats.failed.values()))}); the collection stays BUILDING and searches keep using "
                f"{previous!r}. Fix the cause and run `ragindex reindex --into {name}` again to resume.",
                collection=name,
                failed=sorted(stats.failed)[:SAMPLE],
            )
        if report.passes > 1 and stats.work == 0:
            break
        since = mark
    else:
        raise IntegrityError(
            f"reindex into {name!r}: writes kept landing during {MAX_PASSES} catch-up passes; the collection stays "
            f"BUILDING. Run `ragindex reindex --into {name}` again when ingests are quiet.",
            collection=name,
        )

    # the last pass found nothing to do: every expected copy is present and no point lacks an ACTIVE row
    # (points may exceed the expected count by chunks being re-embedded right now: their rows are ACTIVE)
    report.points = sum(index.count(name, b) for b in builder.buckets())
    report.expected_points = sum(
        1
        for b in builder.buckets()
        for statuses in store.expected_points(b).values()
        if statuses.get(VectorKind.DENSE) == IndexStatus.SUCCESS
    )
    if report.points < report.expected_points:  # the last pass found nothing missing: a broken index
        raise IntegrityError(
            f"reindex into {name!r}: {report.points} points but {report.expected_points} expected; the collection "
            f"stays BUILDING. Run `ragindex reindex --into {name}` again to resume.",
            collection=name,
        )
    store.set_active_collection(name)
    report.switched = True
    if drop_old and previous is not None and previous != name:
        try:
            index.drop_collection(previous, builder.bucket_count)
            store.delete_index_meta(previous)
            report.dropped = previous
        except RagindexError as exc:
            report.notes.append(f"the switch is done but dropping {previous!r} failed: {exc}")
    elif previous is not None:
        report.notes.append(f"{previous!r} is RETIRED and kept; drop it by reindexing with --drop-old next time")
    if configured_fingerprint is not None and configured_fingerprint != meta.dense_fingerprint:
        report.notes.append(
            f"{name!r} holds {meta.dense_fingerprint!r} vectors: set RAGINDEX_DENSE_MODEL to that model for every "
            "process (CLI, service, workers) before the next search or ingest"
        )
    report.duration_ms = (time.perf_counter() - started_clock) * 1000
    return report
