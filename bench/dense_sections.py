"""Does dense retrieval on sections help as a second dense source? (issue 10, point 1)

ragindex scores BM25 on sections and dense on chunks. This measures what a third source, the same dense model
on the sections, would add. Every unit is cut exactly as ragindex's ingest cuts it (records loader, the
configured chunker, :func:`ragindex.chunking.sections.with_sections` with the default section size and context
lines) and encoded with the configured dense encoder (:func:`ragindex.factory.build_dense_encoder`, the shipped
model: it reads a section's first 256 tokens); BM25 is ragindex's own (``qdrant_edge.Bm25`` in an Edge shard
applying IDF, :func:`bench.bm25_tuning.bm25_hits`). Each source is pooled to documents (a document scores by its
best unit, as ``ragindex eval`` does) and the document lists are fused with ragindex's own fusions
(:func:`ragindex.retrieval.fusion.fuse`), with and without the section dense list.

The fusion here is at document level, a simplification of the engine's (which fuses chunks, each carrying its
section's lexical score): its two-source figures are printed next to the three-source ones so the difference is
read within one method, and ``ragindex eval``'s own hybrid figure is the reference for the absolute level.

``--baseline`` adds the issue's whole-document baseline on the same collection: the same model on whole documents
(title + text, truncated by the model), BM25 on whole documents with bm25s's settings (k1 1.5, b 0.75, the
collection's own mean length; ragindex's tokenizer, which reproduces bm25s's SciFact figure: 0.6866 vs 0.6863),
fused by RRF k=60 as the baseline script did.

Vectors are kept in ``--cache`` (one ``.npz`` per dataset and setting) so a second run encodes nothing.

Usage::

    .venv/bin/python -m bench.dense_sections --data /work/shared/data/beir/scifact
    .venv/bin/python -m bench.dense_sections --data /tmp/ragindex-en --baseline
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.bm25_tuning import bm25_hits, bm25_model, pool, token_lengths
from ragindex.chunking.sections import with_sections
from ragindex.config import Settings
from ragindex.eval.beir import BeirDataset, corpus_id, load_dataset
from ragindex.eval.metrics import evaluate
from ragindex.factory import build_chunker, build_dense_encoder
from ragindex.loaders.records import RecordsLoader
from ragindex.retrieval.fusion import fuse
from ragindex.store.records import indexed_text
from ragindex.types import Unit

UNIT_LIMIT = 300
"""Units fetched per source and query before pooling to documents."""
CANDIDATES = 100
"""Documents per source handed to the fusion."""
Units = list[tuple[str, str]]
"""(corpus id, indexed text) per unit."""


def cut(data: BeirDataset, settings: Settings) -> tuple[Units, Units, Units]:
    """The chunks and the sections of every corpus document, as ragindex's ingest cuts and indexes them, and the
    documents whole.
    """
    chunker = build_chunker(settings)
    chunks: Units = []
    sections: Units = []
    documents: Units = []
    for doc in RecordsLoader().load(data.corpus, data.corpus.read_bytes()):
        did = corpus_id(doc.source_uri)
        documents.append((did, doc.text))
        drafts = with_sections(
            doc, chunker.chunk(doc), max_chars=settings.section_max_chars, contextual=settings.contextual_chunks
        )
        for draft in drafts:
            unit = (did, indexed_text(draft.text, draft.context))
            (sections if draft.unit == Unit.SECTION else chunks).append(unit)
    return chunks, sections, documents


def encode(units: Units, settings: Settings, cache: Path) -> np.ndarray:
    """Unit vectors from the configured dense encoder, longest first in batches (as the indexer sorts), cached."""
    digest = hashlib.sha256("\0".join(t for _, t in units).encode() + settings.dense_model.encode()).hexdigest()
    path = cache / f"{digest[:24]}.npy"
    if path.exists():
        return np.load(path)
    encoder = build_dense_encoder(settings)
    order = sorted(range(len(units)), key=lambda i: len(units[i][1]), reverse=True)
    vectors = np.zeros((len(units), encoder.dimension), dtype=np.float32)
    t0 = time.perf_counter()
    batch = 256
    for start in range(0, len(order), batch):
        rows = order[start : start + batch]
        vectors[rows] = encoder.encode_documents([units[i][1] for i in rows])
    print(f"  encoded {len(units)} units in {time.perf_counter() - t0:.0f} s", flush=True)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def dense_hits(
    units: Units, vectors: np.ndarray, query_vectors: np.ndarray, qids: Sequence[str]
) -> dict[str, list[tuple[str, float]]]:
    """Per query, the ``UNIT_LIMIT`` best ``(corpus id, cosine)`` units (exact search)."""
    hits: dict[str, list[tuple[str, float]]] = {}
    scores = query_vectors @ vectors.T
    for row, qid in enumerate(qids):
        top = np.argpartition(-scores[row], UNIT_LIMIT)[:UNIT_LIMIT]
        top = top[np.argsort(-scores[row][top])]
        hits[qid] = [(units[i][0], float(scores[row][i])) for i in top]
    return hits


def ranked(run: dict[str, float]) -> list[tuple[str, float]]:
    """A document run as a ranked list, best first, ties by id, cut to ``CANDIDATES``."""
    return sorted(run.items(), key=lambda kv: (-kv[1], kv[0]))[:CANDIDATES]


def fused(
    fusion: str, sources: dict[str, dict[str, dict[str, float]]], qids: Sequence[str]
) -> dict[str, dict[str, float]]:
    """Per query, the document runs of ``sources`` fused by ragindex's ``fusion``."""
    return {
        qid: {f.id: f.score for f in fuse(fusion, {name: ranked(run[qid]) for name, run in sources.items()})}
        for qid in qids
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/beir/scifact"))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ragindex-dense-sections"))
    parser.add_argument("--baseline", action="store_true", help="add the whole-document baseline (issue 10)")
    args = parser.parse_args(argv)

    settings = Settings()
    data = load_dataset(args.data)
    chunks, sections, documents = cut(data, settings)
    print(f"{args.data}: {len(chunks)} chunks, {len(sections)} sections, {len(data.queries)} queries", flush=True)
    qids = list(data.queries)
    query_vectors = build_dense_encoder(settings).encode_queries([data.queries[q] for q in qids])
    sources = {
        "dense": pool(dense_hits(chunks, encode(chunks, settings, args.cache), query_vectors, qids), 1),
        "dense_section": pool(dense_hits(sections, encode(sections, settings, args.cache), query_vectors, qids), 1),
        "bm25": pool(bm25_hits(bm25_model(settings.bm25_avg_len, settings.bm25_k1, settings.bm25_b), sections,
                               data.queries, UNIT_LIMIT), 1),
    }  # fmt: skip
    runs: dict[str, dict[str, dict[str, float]]] = dict(sources)
    for fusion in ("dbsf", "rrf"):
        for names in (("dense", "bm25"), ("dense", "bm25", "dense_section"), ("dense", "dense_section")):
            runs[f"{fusion}({' + '.join(names)})"] = fused(fusion, {n: sources[n] for n in names}, qids)
    if args.baseline:
        mean_tokens = statistics.fmean(token_lengths([text for _, text in documents])[0])
        print(f"  documents: {len(documents)}, mean BM25 length {mean_tokens:.0f} tokens", flush=True)
        whole = {
            "baseline dense (documents)": pool(
                dense_hits(documents, encode(documents, settings, args.cache), query_vectors, qids), 1
            ),
            "baseline bm25 (documents, k1 1.5)": pool(
                bm25_hits(bm25_model(mean_tokens, 1.5, 0.75), documents, data.queries, UNIT_LIMIT), 1
            ),
        }
        runs.update(whole)
        runs["baseline rrf k=60"] = fused("rrf", whole, qids)
    print("| run | nDCG@10 | recall@100 | MRR@10 |\n|---|---:|---:|---:|")
    for label, run in runs.items():
        m = evaluate(data.qrels, run, ks=(10, 100))
        print(f"| {label} | {m['ndcg@10']:.4f} | {m['recall@100']:.4f} | {m['mrr@10']:.4f} |", flush=True)


if __name__ == "__main__":
    main()
