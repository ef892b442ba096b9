"""Standard IR metrics (nDCG@k, recall@k, MRR@k, precision@k) over a run and qrels, stdlib only.

Definitions follow trec_eval, as exposed by pytrec_eval (``ndcg_cut_k``, ``recall_k``, ``recip_rank`` on a run
cut to k, ``P_k``), so numbers agree with BEIR-style evaluations:

* a run is ranked by score descending, ties broken by doc id **descending** (trec_eval's order);
* a document is relevant when its grade is >= 1; nDCG's gain is the grade (negative grades gain 0), its discount
  ``log2(rank + 1)``, and the ideal DCG comes from the qrels' grades sorted descending;
* a metric's value is the mean over the queries in the qrels that have at least one relevant document;
  queries without one are skipped, and a query missing from the run scores 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from ragindex.errors import ValidationError

__all__ = [
    "METRICS",
    "Qrels",
    "Run",
    "evaluate",
    "evaluate_per_query",
    "mrr_at_k",
    "ndcg_at_k",
    "precision_at_k",
    "rank",
    "recall_at_k",
]

Qrels = Mapping[str, Mapping[str, int]]
"""Query id -> doc id -> relevance grade (>= 1 is relevant)."""

Run = Mapping[str, Mapping[str, float]]
"""Query id -> doc id -> retrieval score (higher is better)."""

METRICS: tuple[str, ...] = ("ndcg", "recall", "mrr", "precision")
"""The metric names :func:`evaluate` reports, each as ``<name>@<k>``."""


def rank(scores: Mapping[str, float]) -> list[str]:
    """Doc ids by score descending, ties broken by doc id descending (trec_eval's order)."""
    return sorted(scores, key=lambda doc: (scores[doc], doc), reverse=True)


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValidationError("k", f"the metric cut-off must be an integer of at least 1, got {k!r}")


def _judged_queries(qrels: Qrels) -> list[str]:
    return [qid for qid, grades in qrels.items() if any(grade >= 1 for grade in grades.values())]


def _ndcg(grades: Mapping[str, int], ranking: list[str], k: int) -> float:
    dcg = sum(max(grades.get(doc, 0), 0) / math.log2(i + 2) for i, doc in enumerate(ranking[:k]))
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    idcg = sum(gain / math.log2(i + 2) for i, gain in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def _recall(grades: Mapping[str, int], ranking: list[str], k: int) -> float:
    relevant = sum(1 for g in grades.values() if g >= 1)
    found = sum(1 for doc in ranking[:k] if grades.get(doc, 0) >= 1)
    return found / relevant if relevant else 0.0


def _mrr(grades: Mapping[str, int], ranking: list[str], k: int) -> float:
    return next((1.0 / i for i, doc in enumerate(ranking[:k], 1) if grades.get(doc, 0) >= 1), 0.0)


def _precision(grades: Mapping[str, int], ranking: list[str], k: int) -> float:
    return sum(1 for doc in ranking[:k] if grades.get(doc, 0) >= 1) / k


_FUNCTIONS = {"ndcg": _ndcg, "recall": _recall, "mrr": _mrr, "precision": _precision}


def evaluate_per_query(
    qrels: Qrels, run: Run, ks: Iterable[int] = (10, 100), metrics: Iterable[str] = METRICS
) -> dict[str, dict[str, float]]:
    """Per-query metric values: query id -> ``"<metric>@<k>"`` -> value.

    Only queries of ``qrels`` with at least one relevant document appear; a query missing from ``run`` gets 0.

    Args:
        qrels: The relevance judgements.
        run: The retrieval scores.
        ks: The cut-offs, each at least 1.
        metrics: A subset of :data:`METRICS`.

    Returns:
        The values, queries in qrels order.

    Raises:
        ValidationError: A cut-off below 1 or an unknown metric name (the message lists the valid ones).
    """
    ks = tuple(ks)
    for k in ks:
        _check_k(k)
    names = tuple(metrics)
    unknown = [name for name in names if name not in _FUNCTIONS]
    if unknown:
        raise ValidationError("metrics", f"unknown metric {unknown[0]!r}; valid: {', '.join(sorted(_FUNCTIONS))}")
    out: dict[str, dict[str, float]] = {}
    for qid in _judged_queries(qrels):
        grades, ranking = qrels[qid], rank(run.get(qid, {}))
        out[qid] = {f"{name}@{k}": _FUNCTIONS[name](grades, ranking, k) for name in names for k in ks}
    return out


def evaluate(
    qrels: Qrels, run: Run, ks: Iterable[int] = (10, 100), metrics: Iterable[str] = METRICS
) -> dict[str, float]:
    """Mean of each metric at each cut-off over the judged queries, e.g. ``{"ndcg@10": 0.41, "recall@100": ...}``.

    Takes the arguments of :func:`evaluate_per_query` and raises what it raises.

    Returns:
        ``"<metric>@<k>"`` -> mean value (0.0 for every key when no query has a relevant document).
    """
    ks, names = tuple(ks), tuple(metrics)
    per_query = evaluate_per_query(qrels, run, ks, names)
    keys = [f"{name}@{k}" for name in names for k in ks]
    if not per_query:
        return dict.fromkeys(keys, 0.0)
    return {key: math.fsum(values[key] for values in per_query.values()) / len(per_query) for key in keys}


def _mean(metric: str, qrels: Qrels, run: Run, k: int) -> float:
    return evaluate(qrels, run, (k,), (metric,))[f"{metric}@{k}"]


def ndcg_at_k(qrels: Qrels, run: Run, k: int) -> float:
    """Mean nDCG@k (trec_eval ``ndcg_cut_k``) over the judged queries."""
    return _mean("ndcg", qrels, run, k)


def recall_at_k(qrels: Qrels, run: Run, k: int) -> float:
    """Mean recall@k = |relevant ∩ top k| / |relevant| (trec_eval ``recall_k``) over the judged queries."""
    return _mean("recall", qrels, run, k)


def mrr_at_k(qrels: Qrels, run: Run, k: int) -> float:
    """Mean reciprocal rank of the first relevant document in the top k (0 when none) over the judged queries."""
    return _mean("mrr", qrels, run, k)


def precision_at_k(qrels: Qrels, run: Run, k: int) -> float:
    """Mean precision@k = |relevant ∩ top k| / k (trec_eval ``P_k``) over the judged queries."""
    return _mean("precision", qrels, run, k)
