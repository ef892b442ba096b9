"""Dense retrieval quality per dense unit: the same model on the units each chunking cuts (issue 28).

Each corpus is cut exactly as an ingest cuts it (:func:`bench.dense_units.units`: records loader, the chunker the
settings give, sections and context lines; the indexed text of each chunk), once per chunking given as
``NAME=ENV,ENV``. Every unit is encoded with the engine's own dense encoder (document prompt, through the engine's
embedding cache, so units shared by two chunkings or two runs are encoded once), the queries with its query
encoder, and each document scores its best unit (exact cosine: what ``ragindex eval``'s dense row measures
through the index, without the ingest's writes). Beside them, ``whole`` is one unit per document, as the
``--baseline``'s dense row encodes it.

Usage::

    .venv/bin/python -m bench.dense_unit_eval /work/shared/data/beir/scifact /tmp/ragindex-pyfaq --cache /tmp/due \\
        --chunking recursive= window=RAGINDEX_CHUNKER=structure,RAGINDEX_CHUNK_TOKENS=0,RAGINDEX_CHUNK_TOKEN_OVERLAP=32
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.dense_units import units_with_ids
from ragindex.config import Settings
from ragindex.engine import Engine
from ragindex.eval.baseline import documents
from ragindex.eval.beir import load_dataset
from ragindex.eval.metrics import evaluate
from ragindex.hashing import sha256_text

_BATCH = 64


def _encode(engine: Engine, texts: Sequence[str]) -> np.ndarray:
    from ragindex.encoders.cached import CachedDenseEncoder

    encoder = CachedDenseEncoder(engine.dense, engine.store)
    matrix = np.zeros((len(texts), engine.dense.dimension), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)  # as the indexer batches
    encoder.plan(len(texts))
    for start in range(0, len(order), _BATCH):
        rows = order[start : start + _BATCH]
        batch = [texts[i] for i in rows]
        matrix[rows] = encoder.encode_documents(batch, [sha256_text(t) for t in batch])
    return matrix


def score(engine: Engine, data: Path, cut: list[tuple[str, str]], top_k: int = 100) -> dict[str, float]:
    """nDCG@10 and recall@100 of dense on ``cut`` (``(corpus id, unit text)``), each document by its best unit."""
    dataset = load_dataset(data)
    matrix = _encode(engine, [text for _, text in cut])
    doc_ids = sorted({did for did, _ in cut})
    column = {did: i for i, did in enumerate(doc_ids)}
    owner = np.array([column[did] for did, _ in cut])
    qids = list(dataset.queries)
    queries = engine.dense.encode_queries([dataset.queries[q] for q in qids])
    run: dict[str, dict[str, float]] = {}
    for row, qid in enumerate(qids):
        sims = matrix @ np.asarray(queries[row], dtype=np.float32)
        best = np.full(len(doc_ids), -np.inf, dtype=np.float32)
        np.maximum.at(best, owner, sims)
        top = np.argsort(-best)[:top_k]
        run[qid] = {doc_ids[i]: float(best[i]) for i in top}
    return evaluate(dataset.qrels, run, ks=(10, 100), metrics=("ndcg", "recall"))


def _fit(whole: list[tuple[str, str]], cut: list[tuple[str, str]], engine: Engine) -> list[tuple[str, str]]:
    """Each document as one unit when it fits the dense model's window, else its units from ``cut``."""
    from ragindex.chunking.tokens import tokenizer_for_model

    tokenizer = tokenizer_for_model(engine.settings.dense_model)
    window = tokenizer.max_length - 2  # [CLS] and [SEP]
    fits = {did for did, text in whole if tokenizer.count(text) <= window}
    return [(did, text) for did, text in whole if did in fits] + [(did, t) for did, t in cut if did not in fits]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", nargs="+", type=Path)
    parser.add_argument("--chunking", nargs="+", default=["recursive="])
    parser.add_argument("--cache", type=Path, required=True, help="Data dir of the embedding cache (kept)")
    parser.add_argument(
        "--fit",
        action="store_true",
        help="Also: each document whole if it fits the window, else the first chunking's units",
    )
    args = parser.parse_args(argv)
    print("| collection | dense unit | units | nDCG@10 | recall@100 | s |")
    print("|---|---|---:|---:|---:|---:|")
    with Engine(Settings(_env_file=None, data_dir=args.cache)) as engine:
        for data in args.data:
            specs: list[tuple[str, list[tuple[str, str]]]] = [
                ("whole", [(did, text) for did, text in documents(load_dataset(data))])
            ]
            for spec in args.chunking:
                name, _, env = spec.partition("=")
                saved = dict(os.environ)
                os.environ.update(dict(item.split("=", 1) for item in env.split(",") if item))
                try:
                    specs.append((name, units_with_ids(data / "corpus.jsonl", Settings(_env_file=None))))
                finally:
                    os.environ.clear()
                    os.environ.update(saved)
            if args.fit:
                specs.append(("fit", _fit(specs[0][1], specs[1][1], engine)))
            for name, cut in specs:
                started = time.perf_counter()
                figures = score(engine, data, cut)
                print(
                    f"| {data.name} | {name} | {len(cut)} | {figures['ndcg@10']:.4f} | {figures['recall@100']:.4f} "
                    f"| {time.perf_counter() - started:.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
