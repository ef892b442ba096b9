"""Fusion functions: hand-computed scores, determinism, selection by name, and agreement with Qdrant."""

from __future__ import annotations

import math
import random

import pytest

from ragindex.errors import ValidationError
from ragindex.retrieval.fusion import FUSIONS, Fused, boost_only, combine_dedup, dbsf, fuse, rrf
from ragindex.types import SourceScore

LISTS = {
    "dense": [("a", 0.9), ("b", 0.8), ("c", 0.7)],
    "bm25": [("b", 12.0), ("d", 7.0), ("a", 3.0)],
}


def scores(fused: list[Fused]) -> dict[str, float]:
    return {f.id: f.score for f in fused}


def test_rrf_unweighted_matches_hand_computation() -> None:
    fused = rrf(LISTS, k=60)
    expected = {
        "a": 1 / 60 + 1 / 62,
        "b": 1 / 61 + 1 / 60,
        "c": 1 / 62,
        "d": 1 / 61,
    }
    assert [f.id for f in fused] == ["b", "a", "d", "c"]
    assert scores(fused) == pytest.approx(expected, abs=1e-15)
    assert fused[0].sources == {"dense": SourceScore(score=0.8, rank=2), "bm25": SourceScore(score=12.0, rank=1)}
    assert fused[2].sources == {"bm25": SourceScore(score=7.0, rank=2)}


def test_rrf_weighted_uses_qdrant_position_compression() -> None:
    fused = rrf(LISTS, k=60, weights={"dense": 3.0, "bm25": 0.5})
    # contribution = 1 / ((rank0 + 1) / w + k - 1)
    expected = {
        "a": 1 / (1 / 3 + 59) + 1 / (3 / 0.5 + 59),
        "b": 1 / (2 / 3 + 59) + 1 / (1 / 0.5 + 59),
        "c": 1 / (3 / 3 + 59),
        "d": 1 / (2 / 0.5 + 59),
    }
    assert scores(fused) == pytest.approx(expected, abs=1e-15)
    assert [f.id for f in fused] == ["b", "a", "c", "d"]


def test_rrf_weight_one_is_plain_rrf_and_missing_weights_default_to_one() -> None:
    assert scores(rrf(LISTS, weights={"dense": 1.0})) == pytest.approx(scores(rrf(LISTS)), abs=1e-15)


def test_rrf_weight_zero_removes_the_source_contribution() -> None:
    fused = rrf(LISTS, k=60, weights={"bm25": 0.0})
    assert scores(fused) == pytest.approx({"a": 1 / 60, "b": 1 / 61, "c": 1 / 62, "d": 0.0}, abs=1e-15)
    # like Qdrant, an item found only by the zero-weight source stays, last, with score 0
    assert [f.id for f in fused] == ["a", "b", "c", "d"]


@pytest.mark.parametrize("weights", [{"dense": -1.0}, {"dense": math.nan}])
def test_rrf_rejects_negative_weights(weights: dict[str, float]) -> None:
    with pytest.raises(ValidationError) as info:
        rrf(LISTS, weights=weights)
    assert info.value.field == "weights"


def test_rrf_rejects_weights_for_unknown_sources_listing_valid_ones() -> None:
    with pytest.raises(ValidationError, match=r"sparse; valid: bm25, dense") as info:
        rrf(LISTS, weights={"sparse": 1.0})
    assert info.value.field == "weights"


@pytest.mark.parametrize("k", [0, -5])
def test_rrf_rejects_k_below_one(k: int) -> None:
    with pytest.raises(ValidationError):
        rrf(LISTS, k=k)


def test_ties_are_broken_by_id_ascending() -> None:
    lists = {"dense": [("z", 1.0), ("y", 0.5)], "bm25": [("y", 3.0), ("z", 2.0)], "sparse": [("x", 1.0)]}
    fused = rrf(lists, k=60)
    assert [f.id for f in fused] == ["y", "z", "x"]
    assert fused[0].score == fused[1].score
    # insertion order of the sources does not matter
    reordered = {"sparse": lists["sparse"], "bm25": lists["bm25"], "dense": lists["dense"]}
    assert rrf(reordered) == fused


def test_repeated_id_in_one_list_keeps_its_first_position() -> None:
    fused = rrf({"dense": [("a", 0.9), ("b", 0.8), ("a", 0.1)]}, k=60)
    assert scores(fused) == pytest.approx({"a": 1 / 60, "b": 1 / 61})
    assert fused[0].sources == {"dense": SourceScore(score=0.9, rank=1)}


def test_dbsf_matches_hand_computation() -> None:
    lists = {"dense": [("a", 0.9), ("b", 0.6), ("c", 0.3)], "bm25": [("b", 10.0), ("d", 4.0)]}
    # dense: mean 0.6, sample std 0.3 -> [-0.3, 1.5]; bm25: mean 7, sample std sqrt(18) -> 7 -/+ 3 sqrt(18)
    low, width = 7 - 3 * math.sqrt(18), 6 * math.sqrt(18)
    expected = {
        "a": (0.9 + 0.3) / 1.8,
        "b": (0.6 + 0.3) / 1.8 + (10 - low) / width,
        "c": (0.3 + 0.3) / 1.8,
        "d": (4 - low) / width,
    }
    fused = dbsf(lists)
    assert scores(fused) == pytest.approx(expected, abs=1e-12)
    assert [f.id for f in fused] == ["b", "a", "d", "c"]


def test_dbsf_single_item_and_constant_lists_normalise_to_half_and_empty_lists_are_skipped() -> None:
    fused = dbsf({"dense": [("a", 0.2)], "bm25": [("a", 5.0), ("b", 5.0)], "sparse": []})
    assert scores(fused) == pytest.approx({"a": 1.0, "b": 0.5})


def test_dbsf_does_not_clamp_outliers_like_qdrant() -> None:
    dense = [("top", 100.0)] + [(f"d{i:02d}", 0.0) for i in range(19)]
    fused = dbsf({"dense": dense})
    # mean 5, sample variance (95**2 + 19 * 5**2) / 19 = 500: the top score lies above mean + 3 std
    mean = 5.0
    std = math.sqrt((95**2 + 19 * 5**2) / 19)
    assert fused[0].id == "top"
    assert fused[0].score == pytest.approx((100 - (mean - 3 * std)) / (6 * std))
    assert fused[0].score > 1.0


def test_combine_interleaves_by_rank_dense_first_and_dedups() -> None:
    lists = {
        "sparse": [("e", 1.0), ("a", 0.5)],
        "bm25": [("b", 12.0), ("d", 7.0), ("a", 3.0), ("f", 1.0)],
        "dense": [("a", 0.9), ("b", 0.8), ("c", 0.7)],
    }
    fused = combine_dedup(lists)
    assert [f.id for f in fused] == ["a", "b", "e", "d", "c", "f"]
    assert [f.score for f in fused] == [1.0, 1 / 2, 1 / 3, 1 / 4, 1 / 5, 1 / 6]
    assert set(fused[0].sources) == {"dense", "bm25", "sparse"}
    assert fused[0].sources["bm25"] == SourceScore(score=3.0, rank=3)


def test_boost_keeps_only_primary_items_and_adds_normalised_boost() -> None:
    fused = boost_only(LISTS, boost_weight=0.2)
    # bm25 min-max: b 1.0, d 4/9, a 0.0
    assert scores(fused) == pytest.approx({"a": 0.9, "b": 0.8 + 0.2, "c": 0.7})
    assert [f.id for f in fused] == ["b", "a", "c"]
    assert "d" not in scores(fused)


def test_boost_sums_boosts_of_every_other_source_and_constant_lists_boost_fully() -> None:
    lists = {**LISTS, "sparse": [("c", 0.4)]}
    fused = boost_only(lists, boost_weight=0.5)
    assert scores(fused) == pytest.approx({"a": 0.9, "b": 1.3, "c": 1.2})


def test_boost_falls_back_to_first_non_empty_source_as_primary() -> None:
    fused = boost_only({"dense": [], "bm25": [("x", 2.0), ("y", 1.0)], "sparse": [("y", 0.3), ("z", 0.1)]})
    assert scores(fused) == pytest.approx({"x": 2.0, "y": 1.0 + 0.2})
    assert boost_only({"bm25": [("x", 2.0)]}, primary="dense") == [
        Fused(id="x", score=2.0, sources={"bm25": SourceScore(2.0, 1)})
    ]
    assert boost_only({}) == []


def test_boost_rejects_negative_weight() -> None:
    with pytest.raises(ValidationError):
        boost_only(LISTS, boost_weight=-0.1)


def test_empty_inputs() -> None:
    for function in FUSIONS.values():
        assert function({}) == []
        assert function({"dense": [], "bm25": []}) == []


def test_fuse_selects_by_name_passes_only_accepted_options_and_truncates() -> None:
    assert fuse("rrf", LISTS, k=10, weights={"dense": 2.0}) == rrf(LISTS, k=10, weights={"dense": 2.0})
    assert fuse("dbsf", LISTS, k=10, weights={"dense": 2.0}) == dbsf(LISTS, weights={"dense": 2.0})
    assert fuse("combine", LISTS, limit=2) == combine_dedup(LISTS)[:2]
    assert fuse("boost", LISTS, boost_weight=1.0, primary="bm25") == boost_only(LISTS, primary="bm25", boost_weight=1.0)
    assert fuse("rrf", LISTS, limit=0) == []
    assert sorted(FUSIONS) == ["boost", "combine", "dbsf", "rrf"]


def test_fuse_unknown_name_lists_valid_choices() -> None:
    with pytest.raises(ValidationError) as info:
        fuse("x", LISTS)
    assert info.value.field == "fusion"
    assert str(info.value) == "fusion: unknown fusion 'x'; valid: boost, combine, dbsf, rrf"


def test_fuse_rejects_negative_limit() -> None:
    with pytest.raises(ValidationError):
        fuse("rrf", LISTS, limit=-1)


# --- agreement with Qdrant's own fusion (qdrant-client local mode) -----------------------------------------


def test_rrf_and_dbsf_agree_with_qdrant_client_local_mode() -> None:
    pytest.importorskip("qdrant_client")
    from qdrant_client import QdrantClient, models

    rng = random.Random(7)
    dim, n = 8, 60
    client = QdrantClient(":memory:")
    try:
        # DOT for both vectors: local mode's cosine scores differ by ~1e-9 between a plain query and a prefetch,
        # which would blur the comparison of the fusions themselves
        client.create_collection(
            "c",
            vectors_config={
                "dense": models.VectorParams(size=dim, distance=models.Distance.DOT),
                "other": models.VectorParams(size=dim, distance=models.Distance.DOT),
            },
        )
        client.upsert(
            "c",
            points=[
                models.PointStruct(
                    id=i,
                    vector={
                        "dense": [rng.gauss(0, 1) for _ in range(dim)],
                        "other": [rng.gauss(0, 1) for _ in range(dim)],
                    },
                )
                for i in range(n)
            ],
        )
        for weights in ([1.0, 1.0], [3.0, 1.0], [0.5, 2.0], [0.0, 1.0], [1.0, 0.0]):
            query = {name: [rng.gauss(0, 1) for _ in range(dim)] for name in ("dense", "other")}
            prefetch = [
                models.Prefetch(query=query["dense"], using="dense", limit=25),
                models.Prefetch(query=query["other"], using="other", limit=15),
            ]
            lists = {
                name: [
                    (str(p.id), p.score)
                    for p in client.query_points("c", query=query[name], using=name, limit=limit).points
                ]
                for name, limit in (("dense", 25), ("other", 15))
            }
            cases = [
                (
                    models.RrfQuery(rrf=models.Rrf(k=60, weights=weights)),
                    rrf(lists, k=60, weights=dict(zip(lists, weights, strict=True))),
                ),
                (models.FusionQuery(fusion=models.Fusion.DBSF), dbsf(lists)),
            ]
            for qdrant_query, ours in cases:
                theirs = client.query_points("c", prefetch=prefetch, query=qdrant_query, limit=n).points
                assert {str(p.id) for p in theirs} == {f.id for f in ours}
                theirs_scores = {str(p.id): p.score for p in theirs}
                for f in ours:
                    assert f.score == pytest.approx(theirs_scores[f.id], abs=1e-6)
                # same order up to ties
                assert [round(f.score, 9) for f in ours] == [round(p.score, 9) for p in theirs]
    finally:
        client.close()
