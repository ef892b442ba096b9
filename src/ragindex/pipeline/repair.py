"""Repair (seed section 4.6): converge the index copies to the truth store, whatever was interrupted.

One :meth:`Repairer.run` handles, for the ACTIVE collection:

============================  =============================================================
found                         done
============================  =============================================================
claims of gone owners         released to PENDING (lease lapsed, pid dead, or the embedded lock)
own claims, of no known owner released to PENDING once older than the stale timeout (last resort)
claims of live owners         left alone and listed with their owners (``live_claims``)
sections drifted from chunks  derived again from their chunks (REMOVED when none is left)
REMOVED rows not yet purged   their index copies deleted, then ``purged_at`` recorded
SUCCESS, point missing        dense and every sparse kind reset to PENDING
SUCCESS, named vector missing that kind reset to PENDING
orphan points                 deleted (points with no ACTIVE truth row)
PENDING, FAILED < max         indexed (dense first, then the sparse kinds)
FAILED >= max_attempts        left alone and counted: only an explicit reindex retries them
PROCESSING runs, owner gone   closed SUCCESS with their document once every copy is written
============================  =============================================================

and converges a BUILDING collection (a ``reindex --into`` in progress) the same way, without
touching the status columns (they describe the ACTIVE collection). ``dry_run`` computes
every count and sample without changing anything.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from ragindex.errors import NotFoundError, ValidationError
from ragindex.index.protocol import VectorIndex
from ragindex.pipeline.compensation import recover_documents, release_stale_claims
from ragindex.pipeline.indexer import Indexer, StageResult
from ragindex.pipeline.lease import ProcessOwner
from ragindex.pipeline.manage import purge_rows
from ragindex.pipeline.reindex import CollectionBuilder, count_found
from ragindex.pipeline.samples import SAMPLE, Sampled
from ragindex.pipeline.section_text import SectionTexts, drifted_sections
from ragindex.results import ReindexResult, json_fields
from ragindex.store.protocol import TruthStore
from ragindex.store.records import IndexMeta
from ragindex.store.states import IndexStatus, Lifecycle
from ragindex.types import VectorKind

log = logging.getLogger(__name__)

_ID_BATCH = 500


def _counts(kinds: Sequence[str]) -> dict[str, int]:
    return dict.fromkeys(kinds, 0)


@dataclass
class RepairReport(Sampled):
    """What repair found (and, unless ``dry_run``, fixed); ``samples`` holds a few ids per category."""

    dry_run: bool
    collection: str | None
    kinds: tuple[str, ...]
    stale: dict[str, int] = field(default_factory=dict)
    pending: dict[str, int] = field(default_factory=dict)
    failed_retried: dict[str, int] = field(default_factory=dict)
    failed_exhausted: dict[str, int] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)
    orphans: int = 0
    drifted_sections: int = 0
    unpurged: int = 0
    stuck_runs: int = 0
    recovered_documents: int = 0
    purged: int = 0
    purge_failed: int = 0
    indexed: dict[str, int] = field(default_factory=dict)
    index_failed: dict[str, int] = field(default_factory=dict)
    building: list[dict[str, Any]] = field(default_factory=list)
    released_owners: list[dict[str, Any]] = field(default_factory=list)
    live_claims: list[dict[str, Any]] = field(default_factory=list)
    unfinished: int = 0
    notes: list[str] = field(default_factory=list)
    duration_ms: float = 0.0

    def __post_init__(self) -> None:
        for counts in (
            self.stale,
            self.pending,
            self.failed_retried,
            self.failed_exhausted,
            self.missing,
            self.indexed,
            self.index_failed,
        ):
            for kind in self.kinds:
                counts.setdefault(kind, 0)

    @property
    def ok(self) -> bool:
        """Nothing failed and nothing is left unfinished (claims of live owners included); a dry run is always ok."""
        if self.dry_run:
            return True
        building_failed = any(b.get("failed") for b in self.building)
        failed = any(self.index_failed.values()) or self.purge_failed or building_failed
        return not failed and not self.unfinished and not self.live_claims

    @property
    def found(self) -> int:
        """How many problems were found (a healthy system: 0)."""
        return int(
            sum(self.stale.values())
            + sum(self.pending.values())
            + sum(self.failed_retried.values())
            + sum(self.missing.values())
            + self.orphans
            + self.drifted_sections
            + self.unpurged
            + sum(b.get("work", 0) for b in self.building)
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON printed by ``ragindex repair --json``."""
        counts = json_fields(
            self,
            omit=("samples", "dry_run", "collection", "kinds", "notes", "duration_ms"),
            rename={"stale": "stale_indexing", "unpurged": "removed_unpurged"},
        )
        return {
            "ok": self.ok,
            "dry_run": self.dry_run,
            "collection": self.collection,
            "found": self.found,
            **counts,
            "samples": self.kept_samples(),
            "notes": self.notes,
            "duration_ms": round(self.duration_ms, 1),
        }


def index_chunks(
    store: TruthStore,
    indexer: Indexer,
    *,
    chunk_ids: Sequence[str] | None = None,
    max_attempts: int | None = None,
) -> dict[str, StageResult]:
    """Run every index stage (dense first) over the claimable chunks, or only over ``chunk_ids``."""
    results: dict[str, StageResult] = {}
    for kind in indexer.kinds:
        if chunk_ids is None:
            rows = store.pending_chunks(kind, max_attempts=max_attempts)
        else:
            ids = list(dict.fromkeys(chunk_ids))
            rows = [
                row
                for start in range(0, len(ids), _ID_BATCH)
                for row in store.pending_chunks(
                    kind, chunk_ids=ids[start : start + _ID_BATCH], max_attempts=max_attempts
                )
            ]
        results[kind] = indexer.run(kind, rows)
    return results


@dataclass(eq=False)
class Repairer:
    """Compensation over the truth store, the ACTIVE collection and a BUILDING one.

    Args:
        store: The truth store.
        index: The vector index.
        indexer: Index stages bound to the ACTIVE collection (None: no collection yet).
        kinds: Enabled vector kinds, dense first.
        bucket_count: Tenant buckets.
        max_attempts: Automatic retries per chunk; FAILED rows at this count are left for an explicit reindex.
        stale_seconds: INDEXING claims older than this that no registered owner holds are released (last resort).
        builders: For each BUILDING collection, a builder that can write into it (None: its model is
            not the configured one, so repair can only report it).
        contextual: Sections derived again get their ``Title > Heading`` line (``RAGINDEX_CONTEXTUAL_CHUNKS``).
    """

    store: TruthStore
    index: VectorIndex
    indexer: Indexer | None
    kinds: Sequence[str]
    _: KW_ONLY
    bucket_count: int
    max_attempts: int
    stale_seconds: float
    builders: Sequence[tuple[IndexMeta, CollectionBuilder | None]] = ()
    owner: ProcessOwner | None = None
    contextual: bool = True

    def __post_init__(self) -> None:
        self.kinds = tuple(self.kinds)
        self.builders = list(self.builders)

    # ------------------------------------------------------------------ pieces
    def release_stale(self, *, limit: int | None = None, dry_run: bool = False) -> dict[str, list[str]]:
        """Stale INDEXING claims per kind, released to PENDING unless ``dry_run``."""
        return release_stale_claims(
            self.store, self.kinds, self.stale_seconds, max_attempts=self.max_attempts, limit=limit, dry_run=dry_run
        )

    def _buckets(self, collection: str) -> list[int]:
        in_index = {b for b in range(self.bucket_count) if self.index.has_bucket(collection, b)}
        return sorted(set(self.store.buckets_in_use()) | in_index)

    def _scan(self, collection: str, report: RepairReport, skip: set[str], *, dry_run: bool) -> None:
        """Missing copies (reset to PENDING) and orphan points (deleted), bucket by bucket.

        The index is read before the truth store: a point written concurrently always has its
        truth row first, so it is never taken for an orphan.
        """
        sparse = [k for k in self.kinds if k != VectorKind.DENSE]
        for bucket in self._buckets(collection):
            present = self.index.vectors_present(collection, bucket)
            expected = self.store.expected_points(bucket)
            orphans = sorted(cid for cid in present if cid not in expected and cid not in skip)
            no_point = sorted(
                cid
                for cid, statuses in expected.items()
                if cid not in present and any(statuses.get(k) == IndexStatus.SUCCESS for k in self.kinds)
            )
            no_vector = {
                kind: sorted(
                    cid
                    for cid, statuses in expected.items()
                    if cid in present and statuses.get(kind) == IndexStatus.SUCCESS and kind not in present[cid]
                )
                for kind in sparse
            }
            count_found(report, orphans, {VectorKind.DENSE: no_point, **no_vector})
            if dry_run:
                continue
            if no_point:  # the whole point is gone: every kind must be written again
                self.store.reset_status(no_point, self.kinds, from_statuses=(IndexStatus.SUCCESS,))
            for kind, ids in no_vector.items():
                if ids:
                    self.store.reset_status(ids, [kind], from_statuses=(IndexStatus.SUCCESS,))
            if orphans:
                self.index.delete_points(collection, bucket, orphans)

    def _sections(self, report: RepairReport, *, dry_run: bool) -> None:
        """Sections whose text drifted from their chunks: derived again (then PENDING, indexed by :meth:`_index`).

        A section left without chunks is REMOVED, and purged with the other REMOVED rows.
        """
        drifted = [sid for ids in drifted_sections(self.store).values() for sid in ids]
        report.drifted_sections = len(drifted)
        report.sample("drifted_sections", drifted)
        if drifted and not dry_run:
            SectionTexts(self.store, self.kinds, self.contextual).refresh(drifted)

    def _index(self, report: RepairReport, *, dry_run: bool) -> None:
        for kind in self.kinds:
            failed = self.store.pending_chunks(kind, statuses=(IndexStatus.FAILED,))
            exhausted = [r.chunk_id for r in failed if r.attempts >= self.max_attempts]
            report.failed_exhausted[kind] = len(exhausted)
            report.sample(f"failed_exhausted_{kind}", exhausted)
            if dry_run or self.indexer is None:
                pending = self.store.pending_chunks(kind, statuses=(IndexStatus.PENDING,))
                report.pending[kind] = len(pending)
                report.failed_retried[kind] = len(failed) - len(exhausted)
                report.sample(f"pending_{kind}", [r.chunk_id for r in pending])
                continue
            rows = self.store.pending_chunks(kind, max_attempts=self.max_attempts)
            retried = [r.chunk_id for r in rows if r.status_of(kind) == IndexStatus.FAILED]
            report.failed_retried[kind] = len(retried)
            report.pending[kind] = len(rows) - len(retried)
            report.sample(f"failed_retried_{kind}", retried)
            result = self.indexer.run(kind, rows)
            report.indexed[kind] = len(result.indexed)
            report.index_failed[kind] = len(result.failed)
            report.sample(f"index_failed_{kind}", sorted(result.failed))
        if any(report.failed_exhausted.values()):
            report.notes.append(
                "chunks FAILED max_attempts times are left alone; retry them with `ragindex reindex --failed`"
            )

    def _settle_documents(self, report: RepairReport, *, dry_run: bool) -> None:
        """A document FAILED at an index stage is SUCCESS again once repair has written every copy."""
        recovered = recover_documents(self.store, self.kinds, self.store.list_documents(), dry_run=dry_run)
        report.recovered_documents = len(recovered)

    def _building(self, report: RepairReport, *, dry_run: bool) -> None:
        for meta, builder in self.builders:
            if builder is None:
                report.building.append({"collection": meta.collection, "skipped": True, "work": 0})
                report.notes.append(
                    f"collection {meta.collection!r} is being built with {meta.dense_fingerprint!r}, not the "
                    f"configured model: resume it with `ragindex reindex --into {meta.collection} --model ...`"
                )
                continue
            stats = builder.converge(dry_run=dry_run)
            report.building.append(
                {"collection": meta.collection, "skipped": False, "work": stats.work, **stats.to_dict()}
            )

    # ------------------------------------------------------------------ all of it
    def run(self, *, dry_run: bool = False) -> RepairReport:
        """Find every divergence between the truth store and the index copies; fix it unless ``dry_run``."""
        started = time.perf_counter()
        collection = self.indexer.collection if self.indexer is not None else None
        report = RepairReport(dry_run=dry_run, collection=collection, kinds=tuple(self.kinds))
        gone = self._release_gone(report, dry_run=dry_run)
        for kind, ids in self.release_stale(dry_run=dry_run).items():
            report.stale[kind] += len(ids)
            report.sample(f"stale_{kind}", ids)

        self._sections(report, dry_run=dry_run)
        unpurged = self.store.removed_unpurged()
        report.unpurged = len(unpurged)
        report.sample("removed_unpurged", [r.chunk_id for r in unpurged])
        skip: set[str] = set()
        if not dry_run:
            purged, failed = purge_rows(self.store, self.indexer, unpurged)
            report.purged, report.purge_failed = len(purged), len(failed)
            skip = set(failed)  # still REMOVED and unpurged: the next repair retries them
        else:
            skip = {r.chunk_id for r in unpurged}

        if collection is not None:
            self._scan(collection, report, skip, dry_run=dry_run)
        self._index(report, dry_run=dry_run)
        if self.owner is not None:
            report.stuck_runs = self.owner.settle_runs(self.kinds, self.stale_seconds, gone=gone, dry_run=dry_run)
        self._settle_documents(report, dry_run=dry_run)
        self._building(report, dry_run=dry_run)
        if self.owner is not None:
            report.live_claims = self.owner.live_claims()
        if not dry_run:
            report.unfinished = self.store.chunks_needing_work(self.kinds)
        if report.live_claims:
            report.notes.append("claims of live owners were left to them; run repair again once they are done")
        report.duration_ms = (time.perf_counter() - started) * 1000
        return report

    def _release_gone(self, report: RepairReport, *, dry_run: bool) -> set[str]:
        """Release (dry run: count) the claims of gone owners; return those owners' ids."""
        if self.owner is None:
            return set()
        release = self.owner.release_gone(dry_run=dry_run)
        report.released_owners = release.owners
        for kind in self.kinds:
            ids = release.ids.get(kind, [])
            if dry_run:
                report.stale[kind] = sum(o["claims"].get(kind, 0) for o in release.owners)
            else:
                report.stale[kind] = len(ids)
            report.sample(f"stale_{kind}", ids)
        return {o["owner"] for o in release.owners if o["owner"]}


def reset_for_reindex(
    store: TruthStore,
    kinds: Sequence[str],
    chunk_ids: Sequence[str] | None,
    *,
    from_statuses: Sequence[str],
) -> list[str]:
    """Explicit reindex: move chunks (given, or every FAILED one) back to PENDING regardless of attempts.

    Unknown ids raise :class:`NotFoundError` before anything changes; REMOVED ids are refused too.
    """
    if chunk_ids is None:
        ids: list[str] = []
        for kind in kinds:
            ids += [r.chunk_id for r in store.pending_chunks(kind, statuses=(IndexStatus.FAILED,))]
        ids = list(dict.fromkeys(ids))
    else:
        ids = list(dict.fromkeys(chunk_ids))
        if not ids:
            raise ValidationError("chunk_ids", "give at least one chunk id")
        rows = store.get_chunks(ids)
        active = {r.chunk_id for r in rows if r.lifecycle_status == Lifecycle.ACTIVE}
        unknown = sorted(set(ids) - active)
        if unknown:
            raise NotFoundError(f"unknown or deleted chunk id(s): {', '.join(unknown[:10])}", chunk_ids=unknown[:10])
    for start in range(0, len(ids), _ID_BATCH):
        store.reset_status(ids[start : start + _ID_BATCH], kinds, from_statuses=from_statuses)
    return ids


def explicit_reindex(
    store: TruthStore,
    indexer: Callable[[], Indexer],
    kinds: Sequence[str],
    chunk_ids: Sequence[str] | None,
    *,
    from_statuses: Sequence[str],
) -> ReindexResult:
    """Reset (see :func:`reset_for_reindex`) then index exactly those chunks (``ragindex reindex --failed``)."""
    ids = reset_for_reindex(store, kinds, chunk_ids, from_statuses=from_statuses)
    if not ids:
        return ReindexResult(
            chunks=0,
            chunk_ids=(),
            indexed=_counts(kinds),
            failed=_counts(kinds),
            failed_ids=(),
            errors=(),
            embedded=0,
            reused=0,
        )
    bound = indexer()
    results = index_chunks(store, bound, chunk_ids=ids)
    failed = {cid: err for r in results.values() for cid, err in r.failed.items()}
    embedded, reused = bound.dense_counts()
    return ReindexResult(
        chunks=len(ids),
        chunk_ids=tuple(ids[:SAMPLE]),
        indexed={k: len(r.indexed) for k, r in results.items()},
        failed={k: len(r.failed) for k, r in results.items()},
        failed_ids=tuple(sorted(failed)[:SAMPLE]),
        errors=tuple(sorted(set(failed.values()))[:5]),
        embedded=embedded,
        reused=reused,
    )
