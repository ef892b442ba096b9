"""The whole-document baseline of ``ragindex eval --baseline``: what a 30-line script gets from the same models.

Every corpus document is one unit, its text as the records loader reads it (``title``, a blank line, ``text``):

- **dense**: the engine's own dense encoder on the whole document (the model truncates it at its window), exact
  cosine search. Vectors go through the engine's embedding cache, so a second run encodes nothing, and a document
  whose dense unit is already the whole document (it fits the model's window) is not encoded again;
- **bm25**: BM25 over whole documents with bm25s's defaults (k1 1.5, b 0.75, the collection's own mean length),
  ragindex's tokenizer (``qdrant_edge.Bm25``: multilingual, stemmed, English and Chinese stopwords) and Lucene's
  IDF, ``ln(1 + (N - n + 0.5) / (n + 0.5))``, as Qdrant's ``Modifier.Idf`` applies it;
- **rrf**: both lists (the ``top_k`` best documents each) fused by RRF, k = 60.

No index is built and nothing is written but the embedding cache: the baseline is the reference a user checks
the engine's defaults against on their own data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ragindex.eval.beir import BeirDataset, corpus_id
from ragindex.eval.metrics import evaluate
from ragindex.eval.runner import REPORTED, ModeResult
from ragindex.hashing import sha256_text
from ragindex.retrieval.fusion import fuse

if TYPE_CHECKING:
    from ragindex.engine import Engine

__all__ = ["BASELINE_K1", "COUNTERPART", "baseline_delta", "bm25_ranking", "dense_ranking", "run_baseline"]

BASELINE_K1 = 1.5
"""bm25s's k1 (the baseline script's BM25)."""
BASELINE_B = 0.75
_BATCH = 64
_TF_K1 = 1.2
"""The k1 of the b = 0 model that reads term frequencies back (any k1 > 0 does)."""

COUNTERPART = {"dense": "baseline:dense", "bm25": "baseline:bm25", "sparse": "baseline:bm25", "hybrid": "baseline:rrf"}
"""The baseline row each engine mode is compared with."""

Ranking = dict[str, list[tuple[str, float]]]
"""Per query id, ``(corpus id, score)`` best first."""


def documents(dataset: BeirDataset) -> list[tuple[str, str]]:
    """``(corpus id, text)`` of every readable record, as the records loader reads it (title, blank line, text)."""
    from ragindex.loaders.records import RecordsLoader

    docs = RecordsLoader().load(dataset.corpus, dataset.corpus.read_bytes())
    return [(corpus_id(d.source_uri), d.text) for d in docs if d.error is None and d.text.strip()]


def dense_ranking(engine: Engine, docs: Sequence[tuple[str, str]], queries: dict[str, str], top_k: int) -> Ranking:
    """Exact cosine search of the whole documents with the engine's dense encoder (through its embedding cache)."""
    from ragindex.encoders.cached import CachedDenseEncoder

    encoder = CachedDenseEncoder(engine.dense, engine.store)
    texts = [text for _, text in docs]
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)  # as the indexer batches
    matrix = np.zeros((len(texts), engine.dense.dimension), dtype=np.float32)
    encoder.plan(len(texts))
    for start in range(0, len(order), _BATCH):
        rows = order[start : start + _BATCH]
        batch = [texts[i] for i in rows]
        matrix[rows] = encoder.encode_documents(batch, [sha256_text(t) for t in batch])
    qids = list(queries)
    query_vectors = engine.dense.encode_queries([queries[q] for q in qids]) if qids else np.zeros((0, 1))
    ids = [did for did, _ in docs]
    ranking: Ranking = {}
    for row, qid in enumerate(qids):
        scores = matrix @ np.asarray(query_vectors[row], dtype=np.float32)
        ranking[qid] = _top(ids, scores, top_k)
    return ranking


def term_frequencies(texts: Sequence[str]) -> list[dict[int, float]]:
    """Each text's BM25 term ids and their counts, as ragindex's BM25 tokenizer reads them.

    A ``b = 0`` model weighs a term seen ``tf`` times ``w = tf (k1 + 1) / (tf + k1)`` whatever the length, so
    ``tf = w k1 / (k1 + 1 - w)`` gives the counts back exactly (rounded against float32).
    """
    from ragindex.encoders.sparse.bm25 import Bm25SparseEncoder

    model = Bm25SparseEncoder(avg_len=1.0, k1=_TF_K1, b=0.0)
    return [
        {i: float(max(1, round(w * _TF_K1 / (_TF_K1 + 1 - w)))) for i, w in zip(v.indices, v.values, strict=True)}
        for v in model.encode_documents(texts)
    ]


def bm25_ranking(
    docs: Sequence[tuple[str, str]], queries: dict[str, str], top_k: int, *, k1: float = BASELINE_K1
) -> Ranking:
    """BM25 over whole documents: k1 ``k1``, b 0.75, the collection's mean length, Lucene's IDF."""
    from ragindex.encoders.sparse.bm25 import Bm25SparseEncoder

    counts = term_frequencies([text for _, text in docs])
    lengths = [sum(c.values()) for c in counts]
    avg_len = (sum(lengths) / len(lengths)) if lengths else 1.0
    postings: dict[int, tuple[list[int], list[float]]] = {}
    for row, (terms, length) in enumerate(zip(counts, lengths, strict=True)):
        norm = k1 * (1 - BASELINE_B + BASELINE_B * length / max(avg_len, 1e-9))
        for term, tf in terms.items():
            rows, weights = postings.setdefault(term, ([], []))
            rows.append(row)
            weights.append(tf * (k1 + 1) / (tf + norm))
    total = len(docs)
    index: dict[int, tuple[np.ndarray, np.ndarray]] = {
        term: (np.asarray(rows), np.asarray(weights) * math.log(1 + (total - len(rows) + 0.5) / (len(rows) + 0.5)))
        for term, (rows, weights) in postings.items()
    }
    qids = list(queries)
    ids = [did for did, _ in docs]
    ranking: Ranking = {}
    for qid, vector in zip(qids, Bm25SparseEncoder().encode_queries([queries[q] for q in qids]), strict=True):
        scores = np.zeros(total, dtype=np.float64)
        for term in vector.indices:
            if term in index:
                where, weight = index[term]
                scores[where] += weight
        ranking[qid] = [(did, score) for did, score in _top(ids, scores, top_k) if score > 0]
    return ranking


def _top(ids: Sequence[str], scores: np.ndarray, top_k: int) -> list[tuple[str, float]]:
    count = min(top_k, len(ids))
    if count <= 0:
        return []
    best = np.argpartition(-scores, count - 1)[:count] if count < len(ids) else np.arange(len(ids))
    return sorted(((ids[i], float(scores[i])) for i in best), key=lambda item: (-item[1], item[0]))


def _result(name: str, dataset: BeirDataset, ranking: Ranking, top_k: int) -> ModeResult:
    run = {qid: dict(ranking.get(qid, [])) for qid in dataset.queries}
    scores = evaluate(dataset.qrels, run, ks=(10, 100), metrics=("ndcg", "recall", "mrr"))
    return ModeResult(
        mode=name,
        metrics={metric: scores[metric] for metric in REPORTED},
        latency_ms={},
        queries=len(dataset.queries),
        top_k=top_k,
        run=run,
        units={name.split(":", 1)[1] if name != "baseline:rrf" else "dense+bm25": "document"},
    )


def run_baseline(engine: Engine, dataset: BeirDataset, *, top_k: int = 100) -> list[ModeResult]:
    """The baseline's rows, scored on ``dataset``'s queries.

    ``baseline:dense`` (when the engine has a dense source), ``baseline:bm25`` and ``baseline:rrf`` (of the two;
    bm25 alone without dense). They have no latency: the baseline is an exact scan
    of every document, not a search.
    """
    docs = documents(dataset)
    rankings: dict[str, Ranking] = {}
    results: list[ModeResult] = []
    if "dense" in engine.kinds:
        rankings["dense"] = dense_ranking(engine, docs, dataset.queries, top_k)
        results.append(_result("baseline:dense", dataset, rankings["dense"], top_k))
    rankings["bm25"] = bm25_ranking(docs, dataset.queries, top_k)
    results.append(_result("baseline:bm25", dataset, rankings["bm25"], top_k))
    fused = {
        qid: [(f.id, f.score) for f in fuse("rrf", {name: r[qid] for name, r in rankings.items()}, k=60, limit=top_k)]
        for qid in dataset.queries
    }
    results.append(_result("baseline:rrf", dataset, fused, top_k))
    return results


def baseline_delta(result: ModeResult, baselines: Sequence[ModeResult]) -> tuple[str, dict[str, float]] | None:
    """The baseline row ``result`` is compared with, and the difference per reported metric (engine - baseline).

    Dense is compared with baseline dense, a lexical mode with baseline bm25, hybrid with baseline rrf; None when
    that row is missing.
    """
    by_name = {b.mode: b for b in baselines}
    mode = result.mode.split("+", 1)[0].split(":", 1)[0]
    other = by_name.get(COUNTERPART.get(mode, ""))
    if other is None:
        return None
    return other.mode, {metric: result.metrics[metric] - other.metrics[metric] for metric in REPORTED}
