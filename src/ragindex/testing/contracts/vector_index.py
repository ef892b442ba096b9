"""The behaviour every :class:`ragindex.index.protocol.VectorIndex` backend must show.

A backend's test module subclasses :class:`VectorIndexContract` and overrides one fixture::

    class TestEdge(VectorIndexContract):
        @pytest.fixture
        def index(self, tmp_path: Path) -> Iterator[VectorIndex]:
            idx = QdrantEdgeIndex(tmp_path / "index")
            yield idx
            idx.close()

The data are real: BM25 vectors from :class:`ragindex.encoders.sparse.bm25.Bm25SparseEncoder` on English
and Chinese sentences, and seeded random unit dense vectors (dim 8). Fused searches are checked against
the pure reference functions :func:`ragindex.retrieval.fusion.rrf` and :func:`ragindex.retrieval.fusion.dbsf`
applied to the backend's own single-source searches.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from ragindex.encoders.sparse.bm25 import Bm25SparseEncoder
from ragindex.errors import IndexBackendError, ValidationError
from ragindex.index.protocol import DensePoint, ScoredIds, SparsePoint, TenantFilter, VectorIndex, VectorQuery
from ragindex.retrieval import fusion
from ragindex.types import SparseVector, VectorKind

__all__ = ["SCORE_TOLERANCE", "VectorIndexContract", "assert_same_ranking", "ranking_agreement"]

SCORE_TOLERANCE = 1e-5
"""Scores of the two Qdrant engines differ in the last float32 digits (Edge scores in f32, local mode in f64)."""

COLLECTION = "contract"
BUCKET = 3
DIM = 8


@dataclass(frozen=True, slots=True)
class _Row:
    text: str
    user_id: int
    set_id: int
    doc_id: int


_ROWS = (
    _Row("The quick brown fox jumps over the lazy dog", 1, 1, 10),
    _Row("A lazy dog sleeps in the warm afternoon sun", 1, 1, 10),
    _Row("Foxes are quick and clever animals of the forest", 1, 1, 11),
    _Row("数据治理流程的最佳实践", 1, 1, 11),
    _Row("数据治理需要清晰的流程和明确的责任", 1, 1, 12),
    _Row("The dog and the fox became good friends", 1, 2, 20),
    _Row("数据 quality matters for the fox project", 2, 1, 30),
    _Row("Sun and rain make the forest grass green", 2, 1, 30),
)
_IDS = tuple(str(uuid.UUID(int=0xC0FFEE00 + i)) for i in range(len(_ROWS)))
_MAIN = TenantFilter(user_id=1, set_id=1)
_MAIN_IDS = frozenset(cid for cid, row in zip(_IDS, _ROWS, strict=True) if (row.user_id, row.set_id) == (1, 1))


def ranking_agreement(actual: ScoredIds, expected: ScoredIds, tol: float = SCORE_TOLERANCE) -> str:
    """Compare two best-first rankings: ``"exact"``, ``"ties"`` (equal up to the order of tied scores) or a reason.

    Two rankings agree up to ties when they are equally long, the scores at every position match within
    ``tol``, every id in both has matching scores, and an id in only one of them (a cut-off at ``limit``
    through a group of tied scores) scores the same as that list's last item.
    """
    if len(actual) != len(expected):
        return f"lengths differ: {len(actual)} != {len(expected)}"
    close = all(abs(a - b) <= tol for (_, a), (_, b) in zip(actual, expected, strict=True))
    if not close:
        return "scores by position differ"
    if [i for i, _ in actual] == [i for i, _ in expected]:
        return "exact"
    by_id_a, by_id_b = dict(actual), dict(expected)
    for item in by_id_a.keys() & by_id_b.keys():
        if abs(by_id_a[item] - by_id_b[item]) > tol:
            return f"score of {item} differs: {by_id_a[item]} != {by_id_b[item]}"
    for ranking, scores in ((actual, by_id_a), (expected, by_id_b)):
        last = ranking[-1][1]
        for item in scores.keys() - (by_id_a.keys() & by_id_b.keys()):
            if abs(scores[item] - last) > tol:
                return f"{item} is in one ranking only and is not tied at the cut-off"
    return "ties"


def assert_same_ranking(actual: ScoredIds, expected: ScoredIds, tol: float = SCORE_TOLERANCE) -> None:
    """Assert that two rankings agree exactly or up to tied scores (see :func:`ranking_agreement`)."""
    verdict = ranking_agreement(actual, expected, tol)
    assert verdict in ("exact", "ties"), f"{verdict}\nactual:   {actual}\nexpected: {expected}"


@cache
def _encoder() -> Bm25SparseEncoder:
    return Bm25SparseEncoder(avg_len=8.0)


def _bm25_documents() -> dict[str, SparseVector]:
    vectors = _encoder().encode_documents([row.text for row in _ROWS])
    return dict(zip(_IDS, vectors, strict=True))


def _bm25_query(text: str) -> VectorQuery:
    return VectorQuery(VectorKind.BM25, sparse=_encoder().encode_queries([text])[0])


def _unit_vectors(n: int, seed: int = 7) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    normalised: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return normalised


def _points(vectors: np.ndarray | None = None) -> list[DensePoint]:
    vectors = _unit_vectors(len(_ROWS)) if vectors is None else vectors
    return [
        DensePoint(cid, row.user_id, row.set_id, row.doc_id, vectors[i])
        for i, (cid, row) in enumerate(zip(_IDS, _ROWS, strict=True))
    ]


def _dense_query(seed: int = 99) -> VectorQuery:
    return VectorQuery(VectorKind.DENSE, dense=_unit_vectors(1, seed)[0])


def _ids(hits: ScoredIds) -> list[str]:
    return [cid for cid, _ in hits]


class VectorIndexContract:
    """Protocol behaviour shared by every vector index backend; subclass it and override :meth:`index`."""

    @pytest.fixture
    def index(self, tmp_path: Path) -> Iterator[VectorIndex]:
        """A fresh, empty backend under ``tmp_path``, closed at teardown (override in the backend's tests)."""
        raise NotImplementedError("override the `index` fixture in the backend's test class")
        yield  # pragma: no cover - makes this a generator fixture like its overrides

    @pytest.fixture
    def filled(self, index: VectorIndex) -> VectorIndex:
        """The backend with every contract row written (dense) and its BM25 vector set."""
        index.upsert_dense(COLLECTION, BUCKET, _points())
        index.update_sparse(COLLECTION, BUCKET, VectorKind.BM25, _bm25_documents())
        return index

    # ------------------------------------------------------------------ buckets and writes
    def test_backend_names_itself(self, index: VectorIndex) -> None:
        """``backend`` is a short non-empty name."""
        assert isinstance(index.backend, str)
        assert index.backend

    def test_opening_a_bucket_ahead_changes_nothing(self, index: VectorIndex) -> None:
        """A missing bucket stays missing; an existing one answers as before."""
        index.open_bucket(COLLECTION, BUCKET)
        assert not index.has_bucket(COLLECTION, BUCKET)
        index.upsert_dense(COLLECTION, BUCKET, _points())
        before = index.search(COLLECTION, BUCKET, _dense_query(), _MAIN, limit=3)
        index.open_bucket(COLLECTION, BUCKET)
        assert index.search(COLLECTION, BUCKET, _dense_query(), _MAIN, limit=3) == before
        assert index.count(COLLECTION, BUCKET) == len(_points())

    def test_upsert_creates_the_bucket(self, index: VectorIndex) -> None:
        """The first write creates the bucket; nothing else appears."""
        assert not index.has_bucket(COLLECTION, BUCKET)
        index.upsert_dense(COLLECTION, BUCKET, [])
        assert not index.has_bucket(COLLECTION, BUCKET)
        index.upsert_dense(COLLECTION, BUCKET, _points())
        assert index.has_bucket(COLLECTION, BUCKET)
        assert not index.has_bucket(COLLECTION, BUCKET + 1)
        assert not index.has_bucket("other", BUCKET)
        assert index.count(COLLECTION, BUCKET) == len(_ROWS)

    def test_count(self, index: VectorIndex) -> None:
        """Exact counts; a missing bucket counts 0; re-upserting the same ids adds nothing."""
        assert index.count(COLLECTION, BUCKET) == 0
        index.upsert_dense(COLLECTION, BUCKET, _points()[:5])
        assert index.count(COLLECTION, BUCKET) == 5
        index.upsert_dense(COLLECTION, BUCKET, _points())
        assert index.count(COLLECTION, BUCKET) == len(_ROWS)

    def test_update_sparse_keeps_the_dense_vector(self, index: VectorIndex) -> None:
        """A sparse update adds ``bm25`` and leaves dense scores unchanged."""
        index.upsert_dense(COLLECTION, BUCKET, _points())
        before = index.search(COLLECTION, BUCKET, _dense_query(), _MAIN, limit=10)
        assert set(index.vectors_present(COLLECTION, BUCKET).values()) == {frozenset({VectorKind.DENSE})}
        index.update_sparse(COLLECTION, BUCKET, VectorKind.BM25, _bm25_documents())
        after = index.search(COLLECTION, BUCKET, _dense_query(), _MAIN, limit=10)
        assert_same_ranking(after, before)
        present = index.vectors_present(COLLECTION, BUCKET)
        assert present == dict.fromkeys(_IDS, frozenset({VectorKind.DENSE, VectorKind.BM25}))

    def test_upsert_sparse_writes_points_without_a_dense_vector(self, index: VectorIndex) -> None:
        """Section points: payload and a sparse vector only; dense search never returns them, bm25 search does."""
        bm25 = _bm25_documents()
        dense_ids, section_ids = _IDS[: len(_IDS) // 2], _IDS[len(_IDS) // 2 :]
        points = {p.chunk_id: p for p in _points()}
        index.upsert_sparse(
            COLLECTION,
            BUCKET,
            VectorKind.BM25,
            [SparsePoint(c, points[c].user_id, points[c].set_id, points[c].doc_id, bm25[c]) for c in section_ids],
            dense_dim=DIM,  # this write creates the bucket
        )
        index.upsert_dense(COLLECTION, BUCKET, [points[c] for c in dense_ids])
        index.update_sparse(COLLECTION, BUCKET, VectorKind.SPARSE, {section_ids[0]: SparseVector((5,), (1.0,))})
        present = index.vectors_present(COLLECTION, BUCKET)
        assert {c: present[c] for c in section_ids[1:]} == dict.fromkeys(section_ids[1:], frozenset({"bm25"}))
        assert present[section_ids[0]] == frozenset({VectorKind.BM25, VectorKind.SPARSE})
        assert set(present) == set(_IDS) and all(present[c] == frozenset({VectorKind.DENSE}) for c in dense_ids)
        dense_hits = index.search(COLLECTION, BUCKET, _dense_query(), _MAIN, limit=len(_IDS))
        assert set(_ids(dense_hits)) == set(dense_ids) & _MAIN_IDS  # the section points have no dense vector
        lexical = index.search(COLLECTION, BUCKET, _bm25_query(_ROWS[4].text), _MAIN, limit=len(_IDS))
        assert _ids(lexical) == [_IDS[4]]  # only section points have a bm25 vector here

    def test_update_sparse_of_the_lexical_vector(self, filled: VectorIndex) -> None:
        """``sparse`` is a plain dot-product sparse vector, updated independently of ``bm25``."""
        vector = SparseVector((3, 17, 40), (0.5, 1.0, 0.25))
        filled.update_sparse(
            COLLECTION, BUCKET, VectorKind.SPARSE, {_IDS[0]: vector, _IDS[1]: SparseVector((17,), (2.0,))}
        )
        present = filled.vectors_present(COLLECTION, BUCKET)
        assert present[_IDS[0]] == frozenset({VectorKind.DENSE, VectorKind.BM25, VectorKind.SPARSE})
        assert present[_IDS[2]] == frozenset({VectorKind.DENSE, VectorKind.BM25})
        query = VectorQuery(VectorKind.SPARSE, sparse=SparseVector((3, 17), (1.0, 1.0)))
        hits = filled.search(COLLECTION, BUCKET, query, _MAIN, limit=10)
        assert _ids(hits) == [_IDS[1], _IDS[0]]
        assert [s for _, s in hits] == pytest.approx([2.0, 1.5], abs=SCORE_TOLERANCE)

    def test_upsert_replaces_the_whole_point(self, filled: VectorIndex) -> None:
        """Writing a point again (dense only) drops its sparse vectors."""
        filled.upsert_dense(COLLECTION, BUCKET, _points()[:1])
        present = filled.vectors_present(COLLECTION, BUCKET)
        assert present[_IDS[0]] == frozenset({VectorKind.DENSE})
        assert all(present[cid] == frozenset({VectorKind.DENSE, VectorKind.BM25}) for cid in _IDS[1:])
        hits = filled.search(COLLECTION, BUCKET, _bm25_query("lazy dog"), _MAIN, limit=10)
        assert _ids(hits) == [_IDS[1]]

    def test_update_sparse_needs_the_bucket_and_the_points(self, index: VectorIndex) -> None:
        """A sparse update of a missing bucket or of an unknown point is a backend error."""
        with pytest.raises(IndexBackendError):
            index.update_sparse(COLLECTION, BUCKET, VectorKind.BM25, _bm25_documents())
        index.upsert_dense(COLLECTION, BUCKET, _points())
        with pytest.raises(IndexBackendError):
            index.update_sparse(COLLECTION, BUCKET, VectorKind.BM25, {str(uuid.uuid4()): _bm25_documents()[_IDS[0]]})
        index.update_sparse(COLLECTION, BUCKET, VectorKind.BM25, {})

    def test_delete_is_idempotent(self, filled: VectorIndex) -> None:
        """Deleting unknown ids, deleting twice and deleting in a missing bucket are not errors."""
        filled.delete_points(COLLECTION, BUCKET, [_IDS[0], str(uuid.uuid4())])
        assert filled.count(COLLECTION, BUCKET) == len(_ROWS) - 1
        filled.delete_points(COLLECTION, BUCKET, [_IDS[0]])
        filled.delete_points(COLLECTION, BUCKET, [])
        filled.delete_points("missing", BUCKET, [_IDS[1]])
        assert filled.count(COLLECTION, BUCKET) == len(_ROWS) - 1
        assert _IDS[0] not in filled.vectors_present(COLLECTION, BUCKET)
        hits = filled.search(COLLECTION, BUCKET, _dense_query(), _MAIN, limit=10)
        assert set(_ids(hits)) == _MAIN_IDS - {_IDS[0]}

    def test_set_payload_merges(self, filled: VectorIndex) -> None:
        """A payload update merges keys: moving a point to another user keeps its set and document."""
        filled.set_payload(COLLECTION, BUCKET, _IDS[0], {"user_id": 9})
        moved = filled.search(COLLECTION, BUCKET, _dense_query(), TenantFilter(9, 1, (10,)), limit=10)
        assert _ids(moved) == [_IDS[0]]
        main = filled.search(COLLECTION, BUCKET, _dense_query(), _MAIN, limit=10)
        assert _IDS[0] not in _ids(main)
        filled.set_payload("missing", BUCKET, _IDS[0], {"user_id": 9})
        with pytest.raises(IndexBackendError):
            filled.set_payload(COLLECTION, BUCKET, str(uuid.uuid4()), {"user_id": 9})

    def test_drop_collection(self, index: VectorIndex) -> None:
        """Dropping removes every bucket; dropping again is fine; the collection can be written again."""
        index.upsert_dense(COLLECTION, 0, _points())
        index.upsert_dense(COLLECTION, 1, _points())
        index.upsert_dense("kept", 0, _points())
        index.drop_collection(COLLECTION, 2)
        assert not index.has_bucket(COLLECTION, 0)
        assert not index.has_bucket(COLLECTION, 1)
        assert index.count(COLLECTION, 0) == 0
        assert index.count("kept", 0) == len(_ROWS)
        index.drop_collection(COLLECTION, 2)
        index.upsert_dense(COLLECTION, 0, _points()[:2])
        assert index.count(COLLECTION, 0) == 2

    def test_optimize(self, filled: VectorIndex) -> None:
        """``optimize`` answers whether it did work; a missing bucket needs none; search still works."""
        assert isinstance(filled.optimize(COLLECTION, BUCKET), bool)
        assert filled.optimize("missing", BUCKET) is False
        assert len(filled.search(COLLECTION, BUCKET, _dense_query(), _MAIN, limit=10)) == len(_MAIN_IDS)

    # ------------------------------------------------------------------ reads
    def test_dense_search_is_cosine_best_first(self, filled: VectorIndex) -> None:
        """Dense hits are string ids, best first, scored by cosine similarity."""
        vectors = _unit_vectors(len(_ROWS))
        query = _dense_query()
        assert query.dense is not None
        hits = filled.search(COLLECTION, BUCKET, query, _MAIN, limit=10)
        expected = sorted(
            ((cid, float(vectors[i] @ query.dense)) for i, cid in enumerate(_IDS) if cid in _MAIN_IDS),
            key=lambda hit: (-hit[1], hit[0]),
        )
        assert all(isinstance(cid, str) for cid, _ in hits)
        assert_same_ranking(hits, expected)
        own = filled.search(COLLECTION, BUCKET, VectorQuery(VectorKind.DENSE, dense=vectors[2]), _MAIN, limit=1)
        assert own[0][0] == _IDS[2]
        assert own[0][1] == pytest.approx(1.0, abs=SCORE_TOLERANCE)

    def test_limit(self, filled: VectorIndex) -> None:
        """``limit`` caps the hits and keeps the best ones."""
        full = filled.search(COLLECTION, BUCKET, _dense_query(), _MAIN, limit=10)
        top2 = filled.search(COLLECTION, BUCKET, _dense_query(), _MAIN, limit=2)
        assert_same_ranking(top2, full[:2])

    def test_bm25_search_english_and_chinese(self, filled: VectorIndex) -> None:
        """BM25 finds the rows that share (stemmed or segmented) terms with the query, in the tenant only."""
        dogs = filled.search(COLLECTION, BUCKET, _bm25_query("lazy dogs"), _MAIN, limit=10)
        assert set(_ids(dogs)) == {_IDS[0], _IDS[1]}
        assert all(score > 0 for _, score in dogs)
        chinese = filled.search(COLLECTION, BUCKET, _bm25_query("数据治理"), _MAIN, limit=10)
        assert set(_ids(chinese)) == {_IDS[3], _IDS[4]}
        other = filled.search(COLLECTION, BUCKET, _bm25_query("数据"), TenantFilter(2, 1), limit=10)
        assert _ids(other) == [_IDS[6]]
        nothing = filled.search(COLLECTION, BUCKET, _bm25_query("zebra xylophone"), _MAIN, limit=10)
        assert nothing == []

    def test_tenant_filter_isolates(self, filled: VectorIndex) -> None:
        """user_id, set_id and doc_ids each restrict the hits."""
        for tenant in (_MAIN, TenantFilter(1, 2), TenantFilter(2, 1), TenantFilter(1, 1, (11, 12)), TenantFilter(3, 1)):
            expected = {
                cid
                for cid, row in zip(_IDS, _ROWS, strict=True)
                if (row.user_id, row.set_id) == (tenant.user_id, tenant.set_id)
                and (tenant.doc_ids is None or row.doc_id in tenant.doc_ids)
            }
            for query in (_dense_query(), _bm25_query("the fox 数据治理 dog sun")):
                hits = filled.search(COLLECTION, BUCKET, query, tenant, limit=20)
                assert set(_ids(hits)) <= expected, tenant
            dense = filled.search(COLLECTION, BUCKET, _dense_query(), tenant, limit=20)
            assert set(_ids(dense)) == expected, tenant

    def test_score_threshold(self, filled: VectorIndex) -> None:
        """Hits scoring below ``score_threshold`` are left out, the rest are unchanged."""
        full = filled.search(COLLECTION, BUCKET, _dense_query(), _MAIN, limit=10)
        threshold = (full[1][1] + full[2][1]) / 2
        kept = filled.search(COLLECTION, BUCKET, _dense_query(), _MAIN, limit=10, score_threshold=threshold)
        assert_same_ranking(kept, full[:2])
        bm25 = filled.search(COLLECTION, BUCKET, _bm25_query("lazy dog fox"), _MAIN, limit=10)
        cut = bm25[0][1] - 1e-3
        assert_same_ranking(
            filled.search(COLLECTION, BUCKET, _bm25_query("lazy dog fox"), _MAIN, limit=10, score_threshold=cut),
            [hit for hit in bm25 if hit[1] >= cut],
        )

    def test_missing_collection_is_no_data(self, index: VectorIndex, caplog: pytest.LogCaptureFixture) -> None:
        """Searching a bucket that does not exist returns no hits and logs a warning."""
        with caplog.at_level(logging.WARNING):
            assert index.search("missing", BUCKET, _dense_query(), _MAIN, limit=5) == []
            assert index.search("missing", BUCKET, _bm25_query("fox"), _MAIN, limit=5) == []
            fused = index.fused_search(
                "missing", BUCKET, [_dense_query(), _bm25_query("fox")], _MAIN, limit=5, candidates=10, fusion="rrf"
            )
            assert fused == []
        assert "missing" in caplog.text
        assert index.vectors_present("missing", BUCKET) == {}
        assert index.count("missing", BUCKET) == 0

    def test_query_needs_a_vector(self, filled: VectorIndex) -> None:
        """A query with neither a dense nor a sparse vector is a validation error."""
        with pytest.raises(ValidationError):
            filled.search(COLLECTION, BUCKET, VectorQuery(VectorKind.DENSE), _MAIN, limit=5)

    # ------------------------------------------------------------------ fusion
    def _sources(self, index: VectorIndex, queries: Sequence[VectorQuery], tenant: TenantFilter) -> fusion.RankedLists:
        return {q.using: index.search(COLLECTION, BUCKET, q, tenant, limit=20) for q in queries}

    def test_fused_rrf_equals_the_reference(self, filled: VectorIndex) -> None:
        """Native RRF (k=60, with and without weights) equals :func:`fusion.rrf` of the single-source searches."""
        queries = [_dense_query(), _bm25_query("the lazy fox 数据治理")]
        lists = self._sources(filled, queries, _MAIN)
        for weights in (None, (1.0, 3.0)):
            native = filled.fused_search(
                COLLECTION, BUCKET, queries, _MAIN, limit=10, candidates=20, fusion="rrf", rrf_k=60, weights=weights
            )
            named = dict(zip((q.using for q in queries), weights, strict=True)) if weights else None
            reference = [(f.id, f.score) for f in fusion.rrf(lists, k=60, weights=named)][:10]
            assert_same_ranking(native, reference)
        small_k = filled.fused_search(
            COLLECTION, BUCKET, queries, _MAIN, limit=10, candidates=20, fusion="rrf", rrf_k=2
        )
        assert_same_ranking(small_k, [(f.id, f.score) for f in fusion.rrf(lists, k=2)][:10])

    def test_fused_dbsf_equals_the_reference(self, filled: VectorIndex) -> None:
        """Native DBSF equals :func:`fusion.dbsf` of the single-source searches."""
        queries = [_dense_query(), _bm25_query("the lazy fox 数据治理")]
        native = filled.fused_search(COLLECTION, BUCKET, queries, _MAIN, limit=10, candidates=20, fusion="dbsf")
        reference = [(f.id, f.score) for f in fusion.dbsf(self._sources(filled, queries, _MAIN))][:10]
        assert_same_ranking(native, reference)

    def test_fused_search_respects_the_tenant(self, filled: VectorIndex) -> None:
        """Every source of a fused search is restricted to the tenant and documents."""
        queries = [_dense_query(), _bm25_query("the fox dog 数据")]
        tenant = TenantFilter(1, 1, (10, 11))
        allowed = {cid for cid, row in zip(_IDS, _ROWS, strict=True) if row.doc_id in (10, 11)}
        for method in ("rrf", "dbsf"):
            hits = filled.fused_search(COLLECTION, BUCKET, queries, tenant, limit=10, candidates=20, fusion=method)
            assert set(_ids(hits)) == allowed

    def test_fused_search_limits(self, filled: VectorIndex) -> None:
        """``limit`` caps fused hits; an unknown fusion is a validation error."""
        queries = [_dense_query(), _bm25_query("the fox dog")]
        hits = filled.fused_search(COLLECTION, BUCKET, queries, _MAIN, limit=2, candidates=20, fusion="rrf")
        assert len(hits) == 2
        with pytest.raises(ValidationError):
            filled.fused_search(COLLECTION, BUCKET, queries, _MAIN, limit=2, candidates=20, fusion="borda")
