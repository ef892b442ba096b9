"""The embedded index: Qdrant Edge (``qdrant-edge-py``), one shard directory per bucket.

Facts that shape this module (``shared/research/qdrant-edge.md``): one ``EdgeShard`` per
directory (a WAL lock), so one process owns the index: it takes the directory's lock
(:mod:`ragindex.index.ownership`) before opening anything, and a second opener gets an
:class:`IndexLockedError` naming the owner; every call holds the GIL; upsert replaces the
whole point, so sparse stages use ``update_vectors``; ids come back as ``uuid.UUID``;
payload indexes must exist before filtering is fast; never disable the WAL.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ragindex.errors import IndexBackendError, IndexLockedError, ValidationError
from ragindex.index import _qdrant
from ragindex.index._qdrant import PAYLOAD_INDEXES, SCROLL_PAGE, QdrantSearch, QueryPlan
from ragindex.index.ownership import IndexOwnership
from ragindex.index.protocol import DensePoint, ScoredIds, SparsePoint
from ragindex.index.routing import physical_name
from ragindex.types import SparseVector, VectorKind

log = logging.getLogger(__name__)

_LEFT_OPEN: list[Any] = []
"""Shards that :meth:`QdrantEdgeIndex.close` left open for the process's end (``process_exit``): held here, since
dropping the last reference does what ``close()`` does."""


def shards_left_open() -> bool:
    """Whether a shard was left open for the process's end: the process must then end with ``os._exit``."""
    return bool(_LEFT_OPEN)


class QdrantEdgeIndex(QdrantSearch):
    """Qdrant Edge shards under ``root`` (``<data_dir>/index``), opened lazily and kept open.

    Args:
        root: Directory holding one sub-directory per bucket shard.
        ownership: The lock on ``root`` (the Engine passes the one it takes before staging anything); by
            default the index takes its own, released by :meth:`close`.
    """

    backend = "edge"

    reads_from_any_thread = True
    """A search may run on any thread, beside the thread that writes (:func:`ragindex.threads.reads_of`).

    Every Edge call holds the GIL for its whole duration, so a read never overlaps a write of another thread; the
    shard map is guarded by the index's lock; a shard closed or dropped between the lookup and the query raises
    :class:`IndexBackendError` (Edge's ``Shard is not initialized``).
    """

    def __init__(self, root: Path, ownership: IndexOwnership | None = None) -> None:
        import qdrant_edge  # heavy native module: imported only when the embedded index is used

        self._q = qdrant_edge
        self.root = root
        self._shards: dict[str, Any] = {}
        self._written: set[str] = set()  # shards this process updated (anything but reads): close() flushes them
        self._field_indexes: set[tuple[str, str]] = set()  # (shard, payload key) known to have its index
        self._lock = threading.RLock()
        self._own_lock = ownership is None
        self.ownership = ownership or IndexOwnership(root)

    # ------------------------------------------------------------------ shard lifecycle
    def has_bucket(self, collection: str, bucket: int) -> bool:
        """Whether the bucket's shard exists on disk."""
        name = physical_name(collection, bucket)
        return name in self._shards or (self.root / name / "edge_config.json").exists()

    def open_bucket(self, collection: str, bucket: int) -> None:
        """Load the bucket's shard now, if it exists (a search would load it on its first query)."""
        self._shard(collection, bucket, write=False)

    def _shard(self, collection: str, bucket: int, *, create_dim: int | None = None, write: bool = True) -> Any | None:
        """The open shard of a bucket (opened on first use; created when ``create_dim`` is given).

        ``write=False`` for a read: a shard that only served reads needs no flush (see :meth:`close`).
        """
        name = physical_name(collection, bucket)
        with self._lock:
            if write:
                self._written.add(name)
            shard = self._shards.get(name)
            if shard is not None:
                return shard
            path = self.root / name
            exists = (path / "edge_config.json").exists()
            if not exists and create_dim is None:
                return None
            self.ownership.acquire()  # the lock first: nothing is opened or recorded without it
            q = self._q
            try:
                if exists:
                    shard = q.EdgeShard.load(str(path))
                    # a process killed between create and the payload indexes left a shard without them
                    missing = [f for f in PAYLOAD_INDEXES if f not in shard.info().payload_schema]
                else:
                    path.mkdir(parents=True, exist_ok=True)
                    shard = q.EdgeShard.create(str(path), self._config(create_dim or 0))
                    missing = list(PAYLOAD_INDEXES)
                if missing:
                    self._written.add(name)
                for field in missing:
                    params = q.IntegerIndexParams(lookup=True, range=False, is_principal=field == "user_id")
                    shard.update(q.UpdateOperation.create_field_index(field, params))
            except Exception as exc:
                if "WouldBlock" in str(exc):  # a process that does not take the lock (an older ragindex)
                    raise IndexLockedError(self.ownership.locked_message(), path=str(path)) from exc
                raise IndexBackendError(f"cannot open Edge shard {path}: {exc}", backend="edge") from exc
            self._shards[name] = shard
            return shard

    def ensure_field_indexes(self, collection: str, bucket: int, fields: Mapping[str, str]) -> None:
        """Create the keyword, float or integer payload index of each metadata field the shard lacks."""
        from ragindex.filters import payload_key

        name = physical_name(collection, bucket)
        wanted = {payload_key(f): _qdrant.FIELD_INDEX_KINDS[kind] for f, kind in fields.items()}
        if all((name, key) in self._field_indexes for key in wanted):
            return
        shard = self._shard(collection, bucket)
        if shard is None:
            return
        q = self._q
        with self._lock:
            try:
                existing = set(shard.info().payload_schema)
                for key, kind in wanted.items():
                    if key not in existing:
                        params = {
                            "keyword": q.KeywordIndexParams,
                            "float": q.FloatIndexParams,
                            "integer": lambda: q.IntegerIndexParams(lookup=True, range=False),
                        }[kind]()
                        shard.update(q.UpdateOperation.create_field_index(key, params))
                    self._field_indexes.add((name, key))
            except Exception as exc:  # a filter still works without its index: slower, never wrong
                log.warning("cannot create the payload indexes of %s in %s: %s", sorted(wanted), name, exc)

    def _config(self, dim: int) -> Any:
        q = self._q
        return q.EdgeConfig(
            vectors={VectorKind.DENSE: q.EdgeVectorParams(size=dim, distance=q.Distance.Cosine)},
            sparse_vectors={
                VectorKind.BM25: q.EdgeSparseVectorParams(modifier=q.Modifier.Idf),
                VectorKind.SPARSE: q.EdgeSparseVectorParams(),
            },
            max_search_threads=1,  # many shards in one process on 2 cores: one search thread each
        )

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except (IndexLockedError, IndexBackendError, ValidationError):
            raise
        except Exception as exc:  # qdrant_edge raises plain Exception for everything
            raise IndexBackendError(f"Qdrant Edge {what} failed: {exc}", backend="edge") from exc

    def close(self, *, process_exit: bool = False) -> None:
        """Flush and close every open shard, and release the lock when this index took it.

        With ``process_exit`` (the caller ends the process with ``os._exit`` next: a one-shot CLI search), a shard
        that this process only read is left open instead: its close flushes nothing but waits for the shard's
        threads, about 0.2 s of a one-shot search's wall time on a loaded machine; the process's end releases it
        and its lock. A shard that was written is always closed.
        """
        with self._lock:
            if process_exit:
                unwritten = {n: s for n, s in self._shards.items() if n not in self._written}
                _LEFT_OPEN.extend(unwritten.values())
                for name in unwritten:
                    del self._shards[name]
            for shard in self._shards.values():
                try:
                    shard.close()
                except Exception as exc:  # closing must go on for the other shards
                    log.warning("closing an Edge shard failed: %s", exc)
            self._shards.clear()
            if self._own_lock and not _LEFT_OPEN:  # a shard left open keeps its lock until the process ends
                self.ownership.release()

    # ------------------------------------------------------------------ writes
    def upsert_dense(self, collection: str, bucket: int, points: Sequence[DensePoint]) -> None:
        """Write whole points (dense vector + payload), creating the shard on first write."""
        if not points:
            return
        q = self._q
        shard = self._shard(collection, bucket, create_dim=int(points[0].vector.shape[0]))
        assert shard is not None  # created on demand above
        batch = [
            q.Point(
                id=p.chunk_id,
                vector={VectorKind.DENSE: p.vector.tolist()},
                payload=_qdrant.payload(p),
            )
            for p in points
        ]
        with self._errors("upsert"):
            shard.update(q.UpdateOperation.upsert_points(batch))

    def update_sparse(self, collection: str, bucket: int, name: str, vectors: Mapping[str, SparseVector]) -> None:
        """Partial vector update: set sparse vector ``name`` on existing points only."""
        if not vectors:
            return
        q = self._q
        shard = self._shard(collection, bucket)
        if shard is None:
            raise IndexBackendError(
                f"bucket {bucket} of collection {collection!r} does not exist; run `ragindex repair`", backend="edge"
            )
        batch = [
            q.PointVectors(id=cid, vector={name: q.SparseVector(list(v.indices), list(v.values))})
            for cid, v in vectors.items()
        ]
        with self._errors(f"{name} vector update"):
            shard.update(q.UpdateOperation.update_vectors(batch))

    def upsert_sparse(
        self, collection: str, bucket: int, name: str, points: Sequence[SparsePoint], *, dense_dim: int
    ) -> None:
        """Write whole points without a dense vector (payload + sparse ``name``), creating the shard if needed."""
        if not points:
            return
        q = self._q
        shard = self._shard(collection, bucket, create_dim=dense_dim)
        assert shard is not None  # created on demand above
        batch = [
            q.Point(
                id=p.chunk_id,
                vector={name: q.SparseVector(list(p.vector.indices), list(p.vector.values))},
                payload=_qdrant.payload(p),
            )
            for p in points
        ]
        with self._errors(f"{name} upsert"):
            shard.update(q.UpdateOperation.upsert_points(batch))

    def delete_points(self, collection: str, bucket: int, chunk_ids: Sequence[str]) -> None:
        """Delete points by id (idempotent)."""
        shard = self._shard(collection, bucket)
        if shard is None or not chunk_ids:
            return
        with self._errors("delete"):
            shard.update(self._q.UpdateOperation.delete_points(list(chunk_ids)))

    def set_payload(self, collection: str, bucket: int, chunk_id: str, payload: Mapping[str, object]) -> None:
        """Merge payload keys into one point."""
        shard = self._shard(collection, bucket)
        if shard is None:
            return
        with self._errors("set_payload"):
            shard.update(self._q.UpdateOperation.set_payload([chunk_id], dict(payload)))

    # ------------------------------------------------------------------ reads
    def _query(self, collection: str, bucket: int, plan: QueryPlan) -> ScoredIds:
        shard = self._shard(collection, bucket, write=False)
        if shard is None:
            log.warning("collection %s bucket %s does not exist: no hits", collection, bucket)
            return []
        q = self._q
        flt = _qdrant.tenant_filter(q, plan.tenant)
        if plan.fusion is None:
            (source,) = plan.sources
            request = q.QueryRequest(
                limit=plan.limit,
                query=q.Query.Nearest(_qdrant.query_vector(q, source), using=source.using),
                filter=flt,
                score_threshold=plan.score_threshold,
                with_payload=False,
                with_vector=False,
            )
        else:
            fusion = (
                q.Fusion.Rrf(k=plan.fusion.k, weights=plan.fusion.weights)
                if isinstance(plan.fusion, _qdrant.Rrf)
                else q.Fusion.Dbsf()
            )
            prefetches = [
                q.Prefetch(limit=plan.candidates, query=q.Query.Nearest(_qdrant.query_vector(q, vq), using=vq.using))
                for vq in plan.sources
            ]
            request = q.QueryRequest(
                limit=plan.limit, prefetches=prefetches, query=fusion, filter=flt, with_payload=False
            )
        with self._errors(plan.what):
            points = shard.query(request)
        return [(str(p.id), float(p.score)) for p in points]

    def vectors_present(self, collection: str, bucket: int) -> dict[str, frozenset[str]]:
        """Every point id of a bucket with the names of the vectors it holds."""
        shard = self._shard(collection, bucket, write=False)
        out: dict[str, frozenset[str]] = {}
        if shard is None:
            return out
        q = self._q
        offset = None
        with self._errors("scroll"):
            while True:
                page, offset = shard.scroll(
                    q.ScrollRequest(
                        offset=offset,
                        limit=SCROLL_PAGE,
                        with_payload=False,
                        with_vector=True,  # a section point has no dense vector: look, don't assume
                    )
                )
                for record in page:
                    out[str(record.id)] = frozenset((record.vector or {}).keys())
                if offset is None:
                    break
        return out

    def count(self, collection: str, bucket: int) -> int:
        """Exact point count of a bucket."""
        shard = self._shard(collection, bucket, write=False)
        if shard is None:
            return 0
        with self._errors("count"):
            return int(shard.count(self._q.CountRequest(exact=True)))

    def optimize(self, collection: str, bucket: int) -> bool:
        """Build the HNSW index of a bucket (blocking; holds the GIL for its whole duration)."""
        shard = self._shard(collection, bucket)
        if shard is None:
            return False
        with self._errors("optimize"):
            return bool(shard.optimize())

    def drop_collection(self, collection: str, bucket_count: int) -> None:
        """Close and delete every bucket shard of a collection."""
        with self._lock:
            for bucket in range(bucket_count):
                name = physical_name(collection, bucket)
                shard = self._shards.pop(name, None)
                if shard is not None:
                    shard.close()
                shutil.rmtree(self.root / name, ignore_errors=True)
