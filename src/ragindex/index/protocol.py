"""The vector index seam: rebuildable index copies of the truth store's chunks.

Two backends implement it: Qdrant Edge (embedded, one shard directory per bucket) and a
Qdrant server through qdrant-client. A logical *collection* spans ``bucket_count``
physical collections/shards named ``{collection}_{bucket}`` (seed section 3.4); point
id = chunk_id; payload = {chunk_id, user_id, set_id, doc_id, meta}; vectors: ``dense``
(cosine), ``bm25`` (sparse, IDF modifier), ``sparse`` (BGE-M3 lexical weights).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict, Unpack

import numpy as np

from ragindex.types import SparseVector


@dataclass(frozen=True, slots=True)
class DensePoint:
    """A point written by the dense stage (the write replaces the whole point)."""

    chunk_id: str
    user_id: int
    set_id: int
    doc_id: int
    vector: np.ndarray
    meta: Mapping[str, Any] = field(default_factory=dict)  # filterable metadata, as ragindex.metadata.payload_value


@dataclass(frozen=True, slots=True)
class SparsePoint:
    """A point without a dense vector (a section), written whole by its first sparse kind."""

    chunk_id: str
    user_id: int
    set_id: int
    doc_id: int
    vector: SparseVector
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TenantFilter:
    """Every query is scoped to one tenant and set, optionally to some documents."""

    user_id: int
    set_id: int
    doc_ids: tuple[int, ...] | None = None
    where: Any = None  # a ragindex.filters node over the points' metadata (``meta``), or None


@dataclass(frozen=True, slots=True)
class VectorQuery:
    """One source query: a dense vector for ``dense``, a sparse vector for ``bm25``/``sparse``."""

    using: str
    dense: np.ndarray | None = None
    sparse: SparseVector | None = None


ScoredIds = list[tuple[str, float]]


class _Limit(TypedDict):
    limit: int


class SearchOptions(_Limit, total=False):
    """The keywords of :meth:`VectorIndex.search`: ``limit`` hits at most, none below ``score_threshold`` (if given)."""

    score_threshold: float | None


class _Fused(_Limit):
    candidates: int
    fusion: str


class FusionOptions(_Fused, total=False):
    """The keywords of :meth:`VectorIndex.fused_search`.

    ``limit`` fused hits from ``candidates`` per source, fused by ``fusion`` (``rrf`` or ``dbsf``); RRF takes
    ``rrf_k`` (left out: 60) and per-source ``weights`` (left out or None: equal).
    """

    rrf_k: int
    weights: Sequence[float] | None


class VectorIndex(Protocol):
    """Index copies, addressed by (collection, bucket).

    Errors: backend failures raise :class:`ragindex.errors.IndexBackendError`; a second
    process opening an embedded shard raises :class:`ragindex.errors.IndexLockedError`.
    A missing collection is "no data": searches return ``[]`` (with a warning log).
    """

    backend: str

    def upsert_dense(self, collection: str, bucket: int, points: Sequence[DensePoint]) -> None:
        """Create the bucket's collection if needed, then write points (whole-point replace)."""
        ...

    def update_sparse(self, collection: str, bucket: int, name: str, vectors: Mapping[str, SparseVector]) -> None:
        """Set the sparse vector ``name`` of existing points without touching their dense vector or payload."""
        ...

    def upsert_sparse(
        self, collection: str, bucket: int, name: str, points: Sequence[SparsePoint], *, dense_dim: int
    ) -> None:
        """Write whole points that have no dense vector (payload + sparse vector ``name``).

        ``dense_dim`` sizes the dense vector of the bucket's collection if this write creates it.
        """
        ...

    def delete_points(self, collection: str, bucket: int, chunk_ids: Sequence[str]) -> None:
        """Delete points by id; unknown ids and a missing collection are not errors (idempotent)."""
        ...

    def set_payload(self, collection: str, bucket: int, chunk_id: str, payload: Mapping[str, object]) -> None:
        """Merge ``payload`` into one point's payload."""
        ...

    def ensure_field_indexes(self, collection: str, bucket: int, fields: Mapping[str, str]) -> None:
        """Create the payload indexes the bucket lacks of metadata fields (name -> ``FieldType`` value).

        Best effort: a filter is planned from the index where it exists, and works (slower) without it.
        """
        ...

    def search(
        self, collection: str, bucket: int, query: VectorQuery, tenant: TenantFilter, **options: Unpack[SearchOptions]
    ) -> ScoredIds:
        """(chunk_id, score) best first, restricted to the tenant filter."""
        ...

    def fused_search(
        self,
        collection: str,
        bucket: int,
        queries: Sequence[VectorQuery],
        tenant: TenantFilter,
        **options: Unpack[FusionOptions],
    ) -> ScoredIds:
        """Backend-native fusion (``rrf`` or ``dbsf``) of several source queries (Qdrant prefetch + fusion)."""
        ...

    def vectors_present(self, collection: str, bucket: int) -> dict[str, frozenset[str]]:
        """Every point id of the bucket with the names of the vectors it holds (verification, repair)."""
        ...

    def count(self, collection: str, bucket: int) -> int:
        """Exact number of points in the bucket (0 if it does not exist)."""
        ...

    def has_bucket(self, collection: str, bucket: int) -> bool:
        """Whether the bucket's collection exists."""
        ...

    def open_bucket(self, collection: str, bucket: int) -> None:
        """Open an existing bucket ahead of its first query; a missing bucket is not created.

        An embedded index loads its shard (a search would load it on its first query); a server has nothing to open.
        """
        ...

    def drop_collection(self, collection: str, bucket_count: int) -> None:
        """Delete every bucket of a logical collection."""
        ...

    def optimize(self, collection: str, bucket: int) -> bool:
        """Build/merge the ANN index of a bucket (blocking); True if work was done."""
        ...

    def close(self) -> None:
        """Flush and release everything (locks, connections)."""
        ...
