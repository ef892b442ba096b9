"""Fusion weights calibrated per set from the set itself, with no human labels.

A fixed fusion is not "never worse than its best source": where one source is weak on a set (a dense model that
does not know the set's language or jargon, a lexical source on paraphrased text), an equal-weight fusion pulls the
good source's answers down. The calibration asks the set itself which source to trust:

1. **Pseudo-queries.** Up to ``sample`` documents of the set, drawn by a hash of their id (stable across runs),
   each give one query with that document as the known answer: its title when it has one of at least three words
   (four Han characters) that no other document of the set shares, else a short span from the middle of one of its
   first sentences (:func:`query_of`). Documents whose query would be shorter are left out.
2. **Per source.** Each pseudo-query is searched once per source (``dense``, ``bm25``, ``sparse``: those a hybrid
   search runs), the hits pooled to documents (a document by its best chunk).
3. **Candidates.** The document lists are fused with the set's fusion under each candidate weighting
   (:data:`CANDIDATES`: equal weights, one source down-weighted to 0.5, 0.25 or 0), scored by MRR@10 of the
   known answers.
4. **Choice.** Equal weights stay unless one source is weak on the set (its MRR@10 below :data:`WEAK_RATIO` of
   the best source's) and a weighting that weighs it down beats equal weights by more than :data:`MARGIN`: a
   calibration moves the fusion only on clear evidence, never on noise.

The result, a :class:`~ragindex.store.records.FusionCalibration`, is recorded in the set's state (the store's
``fusion_calibrations``) with the set's document count; :func:`needs_refresh` says when an ingest has changed the
set enough to measure again. A hybrid search with the calibrated fusion applies the weights and shows each
source's weight in the hit's ``scores``. The language guard (:mod:`ragindex.language`) still decides per query:
a query in a script the dense model does not cover skips dense whatever its weight.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragindex.clock import utcnow
from ragindex.language import dominant_script
from ragindex.retrieval.fusion import fuse
from ragindex.store.records import DocumentFilter, FusionCalibration
from ragindex.types import Unit, VectorKind

if TYPE_CHECKING:
    from ragindex.engine import Engine
    from ragindex.store.protocol import CalibrationStore, TruthStore

__all__ = [
    "CANDIDATES",
    "CalibrationCache",
    "MARGIN",
    "MIN_DOCUMENTS",
    "PseudoQuery",
    "calibrate",
    "choose",
    "needs_refresh",
    "pseudo_queries",
    "run_calibration",
]

MIN_DOCUMENTS = 200
"""A set with fewer documents is not calibrated (too few pseudo-queries to tell sources apart)."""
SAMPLE = 200
"""Pseudo-queries drawn per calibration."""
MARGIN = 0.03
"""MRR@10 by which a weighting must beat equal weights to replace them."""
WEAK_RATIO = 0.5
"""A source whose pseudo-query MRR@10 is below this fraction of the best source's is weak on the set."""
REFRESH_RATIO = 0.5
"""A set whose document count moved by more than this fraction since its calibration is measured again."""
CANDIDATES: tuple[tuple[float, float], ...] = (
    (1.0, 1.0),
    (1.0, 0.5),
    (1.0, 0.25),
    (1.0, 0.0),
    (0.5, 1.0),
    (0.25, 1.0),
    (0.0, 1.0),
)
"""(dense weight, lexical weight) pairs tried; equal weights first. A lexical weight applies to bm25 and sparse."""
_DEPTH = 30
"""Chunk hits per source and pseudo-query (pooled to documents, MRR@10 reads the first 10)."""
SPAN_WORDS = 6
"""Words of a pseudo-query cut from a document's text."""
SPAN_HAN = 8
"""Characters of a pseudo-query cut from a Chinese document's text."""
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")
_HAN = re.compile(r"[\u3400-\u9fff]")

SearchFn = Callable[[str, str], Sequence[tuple[int, float]]]
"""``(query, source) -> [(doc_id, score)]`` chunk hits of one source, best first."""


@dataclass(frozen=True, slots=True)
class PseudoQuery:
    """A query drawn from a document, with that document as its answer."""

    doc_id: int
    text: str


def _long_enough(text: str) -> bool:
    if dominant_script(text) == "han":
        return len(_HAN.findall(text)) >= 4
    return len(text.split()) >= 3


def query_of(title: str | None, first_chunk: str) -> str | None:
    """A document's pseudo-query, or None when neither its title nor its text gives one long enough.

    The title if it has three words (four Han characters); else a short span from the middle of the longest of the
    first chunk's first three sentences: :data:`SPAN_WORDS` words, or :data:`SPAN_HAN` characters of Chinese text.
    A short span, not the whole sentence: a query as long as a sentence of its answer is found by any source (both
    score near 1.0 on it, even a dense model on a language it does not know), so it cannot tell them apart; real
    queries are short and say part of what the answer says.
    """
    if title and _long_enough(title.strip()):
        return title.strip()
    text = " ".join(first_chunk.split())
    if not text:
        return None
    sentences = _SENTENCE.split(text)[:3]
    sentence = max(sentences, key=len)
    if dominant_script(sentence) == "han":
        chars = sentence.replace(" ", "")
        start = max(0, (len(chars) - SPAN_HAN) // 2)
        candidate = chars[start : start + SPAN_HAN]
    else:
        words = sentence.split()
        start = max(0, (len(words) - SPAN_WORDS) // 2)
        candidate = " ".join(words[start : start + SPAN_WORDS])
    return candidate if _long_enough(candidate) else None


def set_documents(store: TruthStore, user_id: int, set_id: int) -> list[tuple[int, str | None]]:
    """``(doc_id, title)`` of every active document of the set."""
    ids: list[tuple[int, str | None]] = []
    after = 0
    while True:
        page = store.document_page(DocumentFilter(user_id, set_id, None), after=after, limit=1000)
        if not page:
            return ids
        ids += [(d.doc_id, _title(d.metadata)) for d in page]
        after = page[-1].doc_id


def pseudo_queries(
    store: TruthStore, documents: Sequence[tuple[int, str | None]], sample: int = SAMPLE
) -> list[PseudoQuery]:
    """Up to ``sample`` pseudo-queries of ``documents`` (``(doc_id, title)``), drawn by a hash of the doc_id."""
    titles = Counter(title for _, title in documents if title)
    drawn = sorted(documents, key=lambda item: hashlib.sha256(str(item[0]).encode()).hexdigest())
    queries: list[PseudoQuery] = []
    for doc_id, title in drawn:
        if len(queries) >= sample:
            break
        chunks = sorted(store.chunks_of_document(doc_id, unit=Unit.CHUNK), key=lambda r: r.chunk_index)
        unique = title if title and titles[title] == 1 else None  # a title many documents share names none of them
        text = query_of(unique, chunks[0].content if chunks else "")
        if text is not None:
            queries.append(PseudoQuery(doc_id, text))
    return queries


def _title(metadata: Mapping[str, Any]) -> str | None:
    title = metadata.get("title")
    return title if isinstance(title, str) else None


def _pooled(hits: Sequence[tuple[int, float]]) -> list[tuple[str, float]]:
    best: dict[str, float] = {}
    for doc_id, score in hits:
        key = str(doc_id)
        if key not in best:
            best[key] = score
    return list(best.items())


def _reciprocal_rank(ranked: Sequence[str], answer: str) -> float:
    for position, item in enumerate(ranked[:10], start=1):
        if item == answer:
            return 1.0 / position
    return 0.0


def weak_sources(per_source: Mapping[str, float]) -> list[str]:
    """The sources whose pseudo-query MRR@10 is below :data:`WEAK_RATIO` of the best source's."""
    best = max(per_source.values(), default=0.0)
    return [source for source, value in per_source.items() if best > 0 and value < WEAK_RATIO * best]


def choose(scores: Mapping[tuple[float, float], float], per_source: Mapping[str, float]) -> tuple[float, float]:
    """The weighting to use: equal weights, unless a source is weak and weighing it down clearly helps.

    With a weak source (:func:`weak_sources`), the best weighting that weighs it down, if it beats equal weights by
    more than :data:`MARGIN`. Pseudo-queries are spans of their answers, which favours a lexical source (it matches
    the words exactly): a source is called weak only when it trails by far, and equal weights stay otherwise.
    """
    weak = weak_sources(per_source)
    dense_weak = VectorKind.DENSE in weak
    lexical_weak = any(source != VectorKind.DENSE for source in weak)
    if dense_weak == lexical_weak:  # neither weak (or both: nothing to prefer)
        return CANDIDATES[0]
    allowed = [p for p in scores if (p[0] < p[1] if dense_weak else p[1] < p[0])]
    equal = scores[CANDIDATES[0]]
    best = max(allowed, key=lambda pair: (scores[pair], -abs(pair[0] - pair[1])))
    return best if scores[best] > equal + MARGIN else CANDIDATES[0]


def calibrate(
    search: SearchFn,
    queries: Sequence[PseudoQuery],
    sources: Sequence[str],
    *,
    fusion: str,
    user_id: int,
    set_id: int,
    documents: int,
) -> FusionCalibration:
    """Measure every candidate weighting on ``queries`` and record the chosen one (see the module docstring).

    Args:
        search: Runs one source for one query (chunk hits as ``(doc_id, score)``).
        queries: The pseudo-queries with their answers.
        sources: The sources a hybrid search runs (one source alone: nothing to weigh, equal weights).
        fusion: The fusion the weights are for.
        user_id: The set's tenant.
        set_id: The set.
        documents: The set's document count now.
    """
    lists = [{source: _pooled(search(q.text, source)) for source in sources} for q in queries]
    per_source = {
        source: _mean(
            [_reciprocal_rank([d for d, _ in ls[source]], str(q.doc_id)) for q, ls in zip(queries, lists, strict=True)]
        )
        for source in sources
    }
    scores: dict[tuple[float, float], float] = {}
    if len(sources) > 1 and VectorKind.DENSE in sources:
        for pair in CANDIDATES:
            weights = _weights(pair, sources)
            ranks = [
                _reciprocal_rank([f.id for f in fuse(fusion, ls, weights=weights)], str(q.doc_id))
                for q, ls in zip(queries, lists, strict=True)
            ]
            scores[pair] = _mean(ranks)
        chosen = choose(scores, per_source)
    else:
        chosen = CANDIDATES[0]
    report = {
        "queries": len(queries),
        "mrr@10": {source: round(value, 4) for source, value in per_source.items()},
        "candidates": [{"dense": d, "lexical": lex, "mrr@10": round(value, 4)} for (d, lex), value in scores.items()],
    }
    return FusionCalibration(
        user_id=user_id,
        set_id=set_id,
        fusion=fusion,
        weights=_weights(chosen, sources),
        documents=documents,
        report=report,
        created_at=utcnow(),
    )


def _weights(pair: tuple[float, float], sources: Sequence[str]) -> dict[str, float]:
    dense, lexical = pair
    return {str(source): dense if source == VectorKind.DENSE else lexical for source in sources}


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def needs_refresh(calibration: FusionCalibration | None, documents: int, fusion: str) -> bool:
    """Whether a set of ``documents`` documents should be calibrated (again) for ``fusion``.

    None below :data:`MIN_DOCUMENTS`; otherwise when it has no calibration, one for another fusion, or one measured
    when its document count differed by more than :data:`REFRESH_RATIO` (either way).
    """
    if documents < MIN_DOCUMENTS:
        return False
    if calibration is None or calibration.fusion != fusion:
        return True
    before = max(calibration.documents, 1)
    return abs(documents - before) / before > REFRESH_RATIO


def is_neutral(weights: Mapping[str, float]) -> bool:
    """Whether ``weights`` fuse as no weights at all (every one 1.0)."""
    return all(w == 1.0 for w in weights.values())


def run_calibration(
    engine: Engine, *, user_id: int, set_id: int, force: bool = True, sample: int = SAMPLE
) -> FusionCalibration | None:
    """Calibrate the set's fusion through ``engine``'s own searches and record it (:meth:`Engine.calibrate_fusion`).

    Returns the set's calibration: the new one, or the recorded one when no refresh was due (without ``force``);
    None for an empty set, or one below :data:`MIN_DOCUMENTS` that was never calibrated (without ``force``).
    """
    from ragindex.retrieval.sources import enabled_by_setting, resolve

    fusion = engine.settings.fusion
    current = engine.store.fusion_calibration(user_id, set_id)
    documents = set_documents(engine.store, user_id, set_id)
    if not documents or (not force and not needs_refresh(current, len(documents), fusion)):
        return current
    sources = resolve(True, None, engine.kinds, enabled_by_setting(engine.settings.recall_enabled_sources), None)

    def search(text: str, source: str) -> list[tuple[int, float]]:
        result = engine.search(
            text, user_id=user_id, set_id=set_id, mode=source, top_k=_DEPTH, rerank=False, expand="none",
            group_by="none",
        )  # fmt: skip
        return [(hit.doc_id, hit.score) for hit in result.hits]

    queries = pseudo_queries(engine.store, documents, sample)
    with engine._unobserved_searches():  # pseudo-queries are not users' queries: no drift sample of them
        calibration = calibrate(
            search, queries, sources, fusion=fusion, user_id=user_id, set_id=set_id, documents=len(documents)
        )
    engine.store.save_fusion_calibration(calibration)
    engine.calibrations.forget(user_id, set_id)
    return calibration


class CalibrationCache:
    """The sets' calibrations as searches read them: from the store, kept for ``ttl`` seconds per set.

    Another process's new calibration is seen within ``ttl``; this process's own at once (:meth:`forget`).
    """

    def __init__(self, store: CalibrationStore, ttl: float = 30.0) -> None:
        self.store = store
        self.ttl = ttl
        self._lock = threading.Lock()
        self._entries: dict[tuple[int, int], tuple[float, FusionCalibration | None]] = {}

    def get(self, user_id: int, set_id: int) -> FusionCalibration | None:
        """The set's calibration (None: none recorded)."""
        key = (user_id, set_id)
        now = time.monotonic()
        with self._lock:
            entry = self._entries.get(key)
        if entry is not None and entry[0] > now:
            return entry[1]
        calibration = self.store.fusion_calibration(user_id, set_id)
        with self._lock:
            self._entries[key] = (now + self.ttl, calibration)
        return calibration

    def forget(self, user_id: int, set_id: int) -> None:
        """Read the set's calibration from the store on its next search."""
        with self._lock:
            self._entries.pop((user_id, set_id), None)
