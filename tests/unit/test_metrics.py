"""IR metrics: hand-computed cases and a cross-check against pytrec_eval (trec_eval)."""

from __future__ import annotations

import math
import random

import pytest

from ragindex.errors import ValidationError
from ragindex.eval.metrics import (
    evaluate,
    evaluate_per_query,
    mrr_at_k,
    ndcg_at_k,
    precision_at_k,
    rank,
    recall_at_k,
)

QRELS = {"q1": {"a": 2, "b": 0, "c": 1, "x": 1}, "q2": {"d": 1}}
RUN = {"q1": {"b": 0.9, "a": 0.8, "z": 0.7, "c": 0.1}, "q2": {"e": 0.5, "f": 0.4, "d": 0.3}}


def test_rank_orders_by_score_then_doc_id_descending() -> None:
    assert rank({"a": 1.0, "c": 1.0, "b": 2.0, "d": 0.5}) == ["b", "c", "a", "d"]


def test_ndcg_hand_computed() -> None:
    # q1 ranking b, a, z, c: gains 0, 2, 0, 1; ideal gains 2, 1, 1
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    idcg = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    q1 = dcg / idcg
    # q2: d at rank 3
    q2 = (1 / math.log2(4)) / 1
    assert ndcg_at_k(QRELS, RUN, 10) == pytest.approx((q1 + q2) / 2, abs=1e-12)
    # at k=2: q1 dcg 2/log2(3); ideal 2 + 1/log2(3); q2 0
    assert ndcg_at_k(QRELS, RUN, 2) == pytest.approx((2 / math.log2(3)) / (2 + 1 / math.log2(3)) / 2, abs=1e-12)


def test_recall_mrr_precision_hand_computed() -> None:
    assert recall_at_k(QRELS, RUN, 10) == pytest.approx((2 / 3 + 1) / 2)
    assert recall_at_k(QRELS, RUN, 2) == pytest.approx((1 / 3 + 0) / 2)
    assert mrr_at_k(QRELS, RUN, 10) == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert mrr_at_k(QRELS, RUN, 2) == pytest.approx((1 / 2 + 0) / 2)
    assert precision_at_k(QRELS, RUN, 2) == pytest.approx((1 / 2 + 0) / 2)
    assert precision_at_k(QRELS, RUN, 10) == pytest.approx((2 / 10 + 1 / 10) / 2)


def test_ties_are_broken_by_doc_id_descending() -> None:
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 1.0, "b": 1.0}}
    assert mrr_at_k(qrels, run, 10) == 0.5
    assert recall_at_k(qrels, run, 1) == 0.0


def test_queries_without_relevant_docs_are_skipped_and_missing_queries_score_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 0, "c": -1}, "q3": {"d": 1}}
    run = {"q1": {"a": 1.0}, "q2": {"b": 1.0}, "other": {"d": 1.0}}
    per_query = evaluate_per_query(qrels, run, ks=(10,))
    assert list(per_query) == ["q1", "q3"]
    assert per_query["q3"] == {"ndcg@10": 0.0, "recall@10": 0.0, "mrr@10": 0.0, "precision@10": 0.0}
    assert ndcg_at_k(qrels, run, 10) == 0.5


def test_negative_grades_gain_nothing() -> None:
    qrels = {"q": {"a": 2, "b": -1, "c": 1}}
    run = {"q": {"b": 0.9, "c": 0.5, "a": 0.1}}
    dcg = 1 / math.log2(3) + 2 / math.log2(4)
    assert ndcg_at_k(qrels, run, 10) == pytest.approx(dcg / (2 + 1 / math.log2(3)))


def test_evaluate_keys_and_empty_qrels() -> None:
    result = evaluate(QRELS, RUN, ks=(1, 10))
    assert set(result) == {f"{m}@{k}" for m in ("ndcg", "recall", "mrr", "precision") for k in (1, 10)}
    assert result["recall@10"] == recall_at_k(QRELS, RUN, 10)
    assert evaluate({}, RUN, ks=(10,), metrics=("ndcg",)) == {"ndcg@10": 0.0}


@pytest.mark.parametrize("k", [0, -1])
def test_k_must_be_positive(k: int) -> None:
    with pytest.raises(ValidationError) as info:
        ndcg_at_k(QRELS, RUN, k)
    assert info.value.field == "k"


def test_unknown_metric_lists_valid_ones() -> None:
    with pytest.raises(ValidationError, match="valid: mrr, ndcg, precision, recall"):
        evaluate(QRELS, RUN, metrics=("map",))


def _random_case(rng: random.Random) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    docs = [f"d{i}" for i in range(300)]
    for q in range(200):
        qid = f"q{q}"
        judged = rng.sample(docs, rng.randint(1, 30))
        qrels[qid] = {doc: rng.choice([-1, 0, 0, 1, 1, 2, 3]) for doc in judged}
        if q % 17 == 0:
            continue  # absent from the run
        retrieved = rng.sample(docs, rng.randint(1, 150))
        # coarse scores make many ties
        run[qid] = {doc: float(rng.randint(0, 20)) / 4 for doc in retrieved}
    return qrels, run


def test_matches_pytrec_eval_on_random_runs_with_ties() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = _random_case(random.Random(1234))
    ours = evaluate_per_query(qrels, run, ks=(10, 100), metrics=("ndcg", "recall", "mrr", "precision"))
    assert ours, "the random case must have judged queries"

    measures = {"ndcg_cut_10", "recall_10", "recall_100", "P_10"}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    top10 = {qid: {doc: scores[doc] for doc in rank(scores)[:10]} for qid, scores in run.items()}
    theirs_rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)

    compared = 0
    for qid, values in ours.items():
        if qid not in run:
            assert values == dict.fromkeys(values, 0.0)
            continue
        compared += 1
        assert values["ndcg@10"] == pytest.approx(theirs[qid]["ndcg_cut_10"], abs=1e-9)
        assert values["recall@10"] == pytest.approx(theirs[qid]["recall_10"], abs=1e-9)
        assert values["recall@100"] == pytest.approx(theirs[qid]["recall_100"], abs=1e-9)
        assert values["precision@10"] == pytest.approx(theirs[qid]["P_10"], abs=1e-9)
        assert values["mrr@10"] == pytest.approx(theirs_rr[qid]["recip_rank"], abs=1e-9)
    assert compared > 150

    # the means are over the same queries
    judged_in_run = [qid for qid in ours if qid in run]
    mean_ndcg = sum(theirs[qid]["ndcg_cut_10"] for qid in judged_in_run) / len(ours)
    assert ndcg_at_k(qrels, run, 10) == pytest.approx(mean_ndcg, abs=1e-9)
