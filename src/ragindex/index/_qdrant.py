"""What the two Qdrant backends share: the payload schema, the tenant filter, query vectors and queries.

``qdrant_edge`` and ``qdrant_client.models`` give their filter, match and sparse-vector classes the
same names and keyword arguments, so :func:`tenant_filter` and :func:`query_vector` take that module
as ``models``. Their fusion queries differ, so :func:`fusion_of` only checks and describes the choice
(:class:`Rrf` or :class:`Dbsf`) and each backend builds its own query from it.

:class:`QdrantSearch` holds :meth:`~QdrantSearch.search` and :meth:`~QdrantSearch.fused_search` once: each
describes its query as a :class:`QueryPlan`, and a backend runs plans in its ``_query``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Unpack

from ragindex.errors import ValidationError
from ragindex.index.protocol import (
    DensePoint,
    FusionOptions,
    ScoredIds,
    SearchOptions,
    SparsePoint,
    TenantFilter,
    VectorQuery,
)

PAYLOAD_INDEXES = ("user_id", "set_id", "doc_id")
SCROLL_PAGE = 2048


def payload(point: DensePoint | SparsePoint) -> dict[str, Any]:
    """The payload of a point: its chunk id, the tenant fields every query filters on, and its metadata."""
    return {
        "chunk_id": point.chunk_id,
        "user_id": point.user_id,
        "set_id": point.set_id,
        "doc_id": point.doc_id,
        "meta": dict(point.meta),
    }


def tenant_filter(models: Any, tenant: TenantFilter) -> Any:
    """The ``Filter`` of ``models`` (``qdrant_edge`` or ``qdrant_client.models``) scoping a query to a tenant.

    A metadata filter (``tenant.where``) is one more condition of the tenant's: the points it leaves out are never
    candidates, so the top-k comes from matching points.
    """
    must = [
        models.FieldCondition(key="user_id", match=models.MatchValue(value=tenant.user_id)),
        models.FieldCondition(key="set_id", match=models.MatchValue(value=tenant.set_id)),
    ]
    if tenant.doc_ids:
        must.append(models.FieldCondition(key="doc_id", match=models.MatchAny(any=list(tenant.doc_ids))))
    if tenant.where is not None:
        from ragindex.filters import to_qdrant

        must.append(to_qdrant(tenant.where, models))
    return models.Filter(must=must)


FIELD_INDEX_KINDS = {
    "string": "keyword",
    "string_list": "keyword",
    "number": "float",
    "date": "float",
    "boolean": "integer",
}
"""The payload index of each metadata field type (dates are epoch seconds, booleans 1/0 in the payload)."""


def query_vector(models: Any, query: VectorQuery) -> Any:
    """The query's vector: a list of floats (dense) or a ``SparseVector`` of ``models``."""
    if query.dense is not None:
        return query.dense.tolist()
    if query.sparse is not None:
        return models.SparseVector(indices=list(query.sparse.indices), values=list(query.sparse.values))
    raise ValidationError("query", "a vector query needs a dense or a sparse vector")


@dataclass(frozen=True, slots=True)
class Rrf:
    """Reciprocal rank fusion, always with an explicit ``k`` (qdrant-client's local mode defaults to 2)."""

    k: int
    weights: list[float] | None = None


@dataclass(frozen=True, slots=True)
class Dbsf:
    """Distribution-based score fusion."""


def fusion_of(fusion: str, rrf_k: int, weights: Sequence[float] | None) -> Rrf | Dbsf:
    """The fusion named ``fusion``; a :class:`ValidationError` for any other name than ``rrf`` and ``dbsf``."""
    if fusion == "rrf":
        return Rrf(rrf_k, list(weights) if weights else None)
    if fusion == "dbsf":
        return Dbsf()
    raise ValidationError("fusion", f"Qdrant fuses only rrf and dbsf, not {fusion!r}")


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """One query of a bucket: the nearest points to one source, or the fusion of several prefetched sources."""

    sources: tuple[VectorQuery, ...]
    tenant: TenantFilter
    limit: int
    score_threshold: float | None = None
    candidates: int = 0  # per prefetched source, when fused
    fusion: Rrf | Dbsf | None = None

    @property
    def what(self) -> str:
        """The operation, for error messages."""
        return "query" if self.fusion is None else "fused query"

    @property
    def using(self) -> str:
        """The vector names queried, for warnings."""
        return ",".join(source.using for source in self.sources)


class QdrantSearch(ABC):
    """The search methods of :class:`~ragindex.index.protocol.VectorIndex`, run by a backend's ``_query``."""

    @abstractmethod
    def _query(self, collection: str, bucket: int, plan: QueryPlan) -> ScoredIds:
        """Run ``plan`` on one bucket: (chunk_id, score) best first, ``[]`` (and a warning) if the bucket is missing."""

    def search(
        self, collection: str, bucket: int, query: VectorQuery, tenant: TenantFilter, **options: Unpack[SearchOptions]
    ) -> ScoredIds:
        """Nearest points for one source, restricted to the tenant."""
        plan = QueryPlan((query,), tenant, options["limit"], score_threshold=options.get("score_threshold"))
        return self._query(collection, bucket, plan)

    def fused_search(
        self,
        collection: str,
        bucket: int,
        queries: Sequence[VectorQuery],
        tenant: TenantFilter,
        **options: Unpack[FusionOptions],
    ) -> ScoredIds:
        """Qdrant's own prefetch + fusion (RRF with explicit k and weights, or DBSF)."""
        fusion = fusion_of(options["fusion"], options.get("rrf_k", 60), options.get("weights"))
        plan = QueryPlan(tuple(queries), tenant, options["limit"], candidates=options["candidates"], fusion=fusion)
        return self._query(collection, bucket, plan)
