"""Tune ragindex's BM25 (``qdrant_edge.Bm25`` + an Edge shard with ``Modifier.Idf``) on BEIR SciFact.

Measures what ragindex actually does, minus the dense side: the corpus is loaded with the records loader
(title + blank line + text), chunked with ragindex's chunker, each chunk is encoded with the same
``Bm25Config`` as :class:`ragindex.encoders.sparse.bm25.Bm25SparseEncoder`, written to a fresh temporary
sparse-only Edge shard and searched with ``Query.Nearest(..., using="bm25")`` (the shard applies IDF over
chunks). Chunk hits are pooled to documents (max, or the sum of a document's top-2 chunks) and scored with
:func:`ragindex.eval.metrics.evaluate` on the 300 test queries.

The mean chunk length is measured in the tokens BM25 itself counts (after tokenising, stemming and
stopword removal): a term seen once in a chunk has weight ``(k1+1) / (1 + k1*(1-b+b*L/avg_len))``, so the
smallest weight of a chunk gives its length ``L`` exactly. The number of distinct terms is reported too.

Usage::

    .venv/bin/python -m bench.bm25_tuning                       # all experiments
    .venv/bin/python -m bench.bm25_tuning --experiments 1,2     # a subset
    .venv/bin/python -m bench.bm25_tuning --only 512:64:90:1.2:0.75 512:64:30:0.9:0.9  # size:overlap:avg_len:k1:b

``--units ingest`` cuts the units exactly as an ingest does (the default chunker, sections of at most ``size``
characters with their context lines; ``overlap`` is ignored) and scores the sections, what ragindex's BM25 scores.
Several ``--data`` directories with ``--only`` give one table, one column per collection and their mean (issue 28:
BM25 parameters chosen by the mean over collections, not by one)::

    .venv/bin/python -m bench.bm25_tuning --units ingest --data /work/shared/data/beir/scifact /tmp/ragindex-man-en \
        /tmp/ragindex-deb-en /tmp/ragindex-pyfaq --only 4000:0:150:1.2:0.75 4000:0:150:1.5:0.9
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragindex.chunking.factory import build_chunker
from ragindex.eval.beir import BeirDataset, corpus_id, load_dataset
from ragindex.eval.metrics import evaluate
from ragindex.loaders.records import RecordsLoader

BM25 = "bm25"
CHUNK_LIMIT = 300
"""Chunks fetched per query before pooling to documents."""


@dataclass(frozen=True)
class Setting:
    """One BM25 configuration at one chunking."""

    size: int
    overlap: int
    avg_len: float
    k1: float = 1.2
    b: float = 0.75

    def label(self) -> str:
        return f"{self.size}/{self.overlap} avg_len={self.avg_len:g} k1={self.k1:g} b={self.b:g}"


@dataclass
class Result:
    """nDCG@10 / recall@100 of one setting, per pooling."""

    setting: Setting
    chunks: int
    scores: dict[str, dict[str, float]]
    seconds: float


def bm25_model(avg_len: float, k1: float, b: float) -> Any:
    """The same model as ``Bm25SparseEncoder._load``."""
    import qdrant_edge as q

    stopwords = q.StopwordsSet(languages={q.Language.English, q.Language.Chinese})
    config = q.Bm25Config(k=k1, b=b, avg_len=avg_len, tokenizer=q.TokenizerType.Multilingual, stopwords=stopwords)
    return q.Bm25(config)


class Bench:
    """The dataset, its chunks per chunking (cached) and the runs."""

    def __init__(self, root: Path, units: str = "recursive") -> None:
        self.root = root
        self.units = units
        self.data: BeirDataset = load_dataset(root)
        documents = RecordsLoader().load(self.data.corpus, self.data.corpus.read_bytes())
        self.documents = [(corpus_id(d.source_uri), d) for d in documents]
        self._chunks: dict[tuple[int, int], list[tuple[str, str]]] = {}

    def chunks(self, size: int, overlap: int) -> list[tuple[str, str]]:
        """(corpus id, chunk text) of every chunk, as ragindex's recursive chunker cuts them."""
        key = (size, overlap)
        if key not in self._chunks and self.units == "ingest":
            self._chunks[key] = ingest_sections(self.documents, size)
        if key not in self._chunks:
            chunker = build_chunker("recursive", chunk_size=size, chunk_overlap=overlap)
            self._chunks[key] = [(did, c.text) for did, doc in self.documents for c in chunker.chunk(doc)]
        return self._chunks[key]

    def lengths(self, size: int, overlap: int) -> tuple[float, float, float]:
        """Mean BM25 token length, median token length and mean distinct terms of the chunks."""
        tokens, distinct = token_lengths([text for _, text in self.chunks(size, overlap)])
        return statistics.fmean(tokens), statistics.median(tokens), statistics.fmean(distinct)

    def run(self, setting: Setting) -> Result:
        """Index the chunks in a fresh sparse-only Edge shard, query, pool, evaluate."""
        t0 = time.perf_counter()
        model = bm25_model(setting.avg_len, setting.k1, setting.b)
        chunks = self.chunks(setting.size, setting.overlap)
        hits = bm25_hits(model, chunks, self.data.queries, CHUNK_LIMIT)
        scores = {name: evaluate(self.data.qrels, pool(hits, top), ks=(10, 100)) for name, top in POOLINGS.items()}
        return Result(setting, len(chunks), scores, time.perf_counter() - t0)


def ingest_sections(documents: Sequence[tuple[str, Any]], max_chars: int) -> list[tuple[str, str]]:
    """(corpus id, indexed text) of every section as an ingest with the default settings and
    ``RAGINDEX_SECTION_MAX_CHARS=max_chars`` cuts it (context line included)."""
    from ragindex.chunking.sections import with_sections
    from ragindex.config import Settings
    from ragindex.factory import build_chunker as build_settings_chunker
    from ragindex.store.records import indexed_text
    from ragindex.types import Unit

    settings = Settings(_env_file=None)
    chunker = build_settings_chunker(settings)
    out: list[tuple[str, str]] = []
    for did, doc in documents:
        if doc.error is not None:
            continue
        drafts = with_sections(doc, chunker.chunk(doc), max_chars=max_chars, contextual=settings.contextual_chunks)
        unit = Unit.SECTION if max_chars > 0 else Unit.CHUNK
        out += [(did, indexed_text(d.text, d.context)) for d in drafts if d.unit == unit]
    return out


def token_lengths(texts: Sequence[str]) -> tuple[list[float], list[int]]:
    """The length in BM25 tokens and the number of distinct terms of each text (as BM25 itself counts them)."""
    k1, b, avg_len = 1.2, 0.75, 100.0
    model = bm25_model(avg_len, k1, b)
    tokens: list[float] = []
    distinct: list[int] = []
    for text in texts:
        vector = model.embed_document(text)
        distinct.append(len(vector.indices))
        if vector.values:
            weight = min(vector.values)  # a term seen once (there is one in practically every text)
            tokens.append(avg_len * ((k1 + 1) / weight - 1 - k1 * (1 - b)) / (k1 * b))
        else:
            tokens.append(0.0)
    return tokens, distinct


def bm25_hits(
    model: Any, units: Sequence[tuple[str, str]], queries: dict[str, str], limit: int
) -> dict[str, list[tuple[str, float]]]:
    """Per query, the ``limit`` best ``(corpus id, score)`` units: ``units`` indexed in a fresh sparse-only Edge
    shard that applies IDF over them, as ragindex's index does.
    """
    import qdrant_edge as q

    owner: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="bm25-tuning-") as tmp:
        config = q.EdgeConfig(
            sparse_vectors={BM25: q.EdgeSparseVectorParams(modifier=q.Modifier.Idf)}, max_search_threads=1
        )
        shard = q.EdgeShard.create(str(Path(tmp) / "shard"), config)
        batch: list[Any] = []
        for did, text in units:
            vector = model.embed_document(text)
            pid = str(uuid.uuid4())
            owner[pid] = did
            sparse = q.SparseVector(list(vector.indices), list(vector.values))
            batch.append(q.Point(id=pid, vector={BM25: sparse}, payload={"doc_id": did}))
            if len(batch) >= 1000:
                shard.update(q.UpdateOperation.upsert_points(batch))
                batch = []
        if batch:
            shard.update(q.UpdateOperation.upsert_points(batch))
        hits: dict[str, list[tuple[str, float]]] = {}
        for qid, text in queries.items():
            vector = model.embed_query(text)
            request = q.QueryRequest(
                limit=limit,
                query=q.Query.Nearest(q.SparseVector(list(vector.indices), list(vector.values)), using=BM25),
                with_payload=False,
                with_vector=False,
            )
            hits[qid] = [(owner[str(p.id)], float(p.score)) for p in shard.query(request)]
        del shard
    return hits


POOLINGS = {"max": 1, "top2sum": 2}


def pool(hits: dict[str, list[tuple[str, float]]], top: int) -> dict[str, dict[str, float]]:
    """Document score = sum of its ``top`` best chunk scores (``top=1``: max pooling, what ragindex does)."""
    run: dict[str, dict[str, float]] = {}
    for qid, pairs in hits.items():
        per_doc: dict[str, list[float]] = {}
        for did, score in pairs:  # best first
            kept = per_doc.setdefault(did, [])
            if len(kept) < top:
                kept.append(score)
        run[qid] = {did: sum(values) for did, values in per_doc.items()}
    return run


def table(title: str, results: Sequence[Result]) -> str:
    lines = [
        f"### {title}",
        "",
        "| setting | chunks | nDCG@10 (max) | R@100 (max) | nDCG@10 (top2sum) | R@100 (top2sum) | s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        m, s = r.scores["max"], r.scores["top2sum"]
        lines.append(
            f"| {r.setting.label()} | {r.chunks} | {m['ndcg@10']:.4f} | {m['recall@100']:.4f} | "
            f"{s['ndcg@10']:.4f} | {s['recall@100']:.4f} | {r.seconds:.1f} |"
        )
    return "\n".join(lines)


def mean_table(settings: Sequence[Setting], per_data: dict[str, list[Result]]) -> str:
    """nDCG@10 (max pooling) of every setting on every collection, and the mean over collections."""
    names = list(per_data)
    lines = [
        "### nDCG@10 per collection (max pooling) and the mean",
        "",
        "| setting | " + " | ".join(names) + " | mean |",
        "|---|" + "---:|" * (len(names) + 1),
    ]
    for i, setting in enumerate(settings):
        values = [per_data[name][i].scores["max"]["ndcg@10"] for name in names]
        cells = " | ".join(f"{v:.4f}" for v in values)
        lines.append(f"| {setting.label()} | {cells} | {statistics.fmean(values):.4f} |")
    return "\n".join(lines)


def best(results: Iterable[Result]) -> Result:
    return max(results, key=lambda r: r.scores["max"]["ndcg@10"])


def run_all(bench: Bench, settings: Sequence[Setting], title: str) -> list[Result]:
    results = []
    for setting in settings:
        results.append(bench.run(setting))
        m = results[-1].scores["max"]
        print(f"  {setting.label()}: nDCG@10={m['ndcg@10']:.4f} R@100={m['recall@100']:.4f}", flush=True)
    print(table(title, results) + "\n", flush=True)
    return results


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, nargs="+", default=[Path("/work/shared/data/beir/scifact")])
    parser.add_argument(
        "--units",
        choices=("recursive", "ingest"),
        default="recursive",
        help="recursive: the recursive chunker at each size; ingest: sections as an ingest cuts them",
    )
    parser.add_argument("--experiments", default="1,2,3", help="comma list of 1 (avg_len), 2 (k1, b), 3 (chunking)")
    parser.add_argument("--only", nargs="+", help="settings size:overlap:avg_len:k1:b (instead of the experiments)")
    args = parser.parse_args(argv)

    if args.only:
        settings = []
        for spec in args.only:
            size, overlap, avg_len, k1, b = spec.split(":")
            settings.append(Setting(int(size), int(overlap), float(avg_len), float(k1), float(b)))
        per_data: dict[str, list[Result]] = {}
        for root in args.data:
            bench = Bench(root, args.units)
            print(f"{root}: {len(bench.documents)} documents, {len(bench.data.queries)} queries", flush=True)
            per_data[root.name] = run_all(bench, settings, f"chosen settings on {root.name}")
        if len(per_data) > 1:
            print(mean_table(settings, per_data), flush=True)
        return

    if len(args.data) > 1:
        parser.error("several --data directories need --only")
    bench = Bench(args.data[0], args.units)
    print(f"{len(bench.documents)} documents, {len(bench.data.queries)} queries", flush=True)

    wanted = {int(x) for x in args.experiments.split(",") if x.strip()}
    for size, overlap in ((512, 64), (1024, 128), (2000, 0)):
        mean, median, distinct = bench.lengths(size, overlap)
        print(
            f"chunking {size}/{overlap}: {len(bench.chunks(size, overlap))} chunks, BM25 tokens mean {mean:.1f} "
            f"median {median:.1f}, distinct terms mean {distinct:.1f}",
            flush=True,
        )
    measured = round(bench.lengths(512, 64)[0])
    best_avg, best_k1, best_b = 90.0, 1.2, 0.75
    if 1 in wanted:
        avg_lens = sorted({float(measured), 30.0, 50.0, 90.0, 150.0, 256.0})
        results = run_all(bench, [Setting(512, 64, a) for a in avg_lens], "1. avg_len at 512/64, k1=1.2, b=0.75")
        best_avg = best(results).setting.avg_len
    if 2 in wanted:
        grid = [Setting(512, 64, best_avg, k1, b) for k1 in (0.9, 1.2, 1.5) for b in (0.3, 0.5, 0.75, 0.9)]
        results = run_all(bench, grid, f"2. k1 x b at 512/64, avg_len={best_avg:g}")
        top = best(results).setting
        best_k1, best_b = top.k1, top.b
    if 3 in wanted:
        settings = []
        for size, overlap in ((512, 64), (1024, 128), (2000, 0)):
            settings.append(Setting(size, overlap, best_avg, best_k1, best_b))
            own = float(round(bench.lengths(size, overlap)[0]))
            if own != best_avg:
                settings.append(Setting(size, overlap, own, best_k1, best_b))
        run_all(bench, settings, f"3. chunking with k1={best_k1:g} b={best_b:g} (avg_len: best, and measured)")


if __name__ == "__main__":
    main()
