"""Dense / BM25 / sparse / hybrid search with truth backfill and ghost-hit filtering.

The read path mirrors the write path (seed section 9): validate -> (empty query: no
encoder, no index call) -> encode the query per source -> search the tenant's bucket ->
fuse -> backfill every hit from the truth store, dropping any chunk that is not ACTIVE.
Candidates are over-fetched so that dropped ghosts do not shrink top_k. With rerank, the first
``rerank_candidates`` live candidates are scored by a cross-encoder and sorted by that score (in [0, 1]).
Which sources run, and what a failing source does (fail, or degrade to the others), is
:mod:`ragindex.retrieval.sources`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any

import numpy as np

from ragindex.encoders.protocol import DenseEncoder, SparseEncoder
from ragindex.errors import (
    ConfigurationError,
    RagindexError,
    RetrievalBackendError,
    RetrievalConfigurationError,
    RetrievalEncodingError,
    ValidationError,
)
from ragindex.index.protocol import TenantFilter, VectorIndex, VectorQuery
from ragindex.index.routing import bucket_of
from ragindex.language import dominant_script
from ragindex.pipeline.payloads import row_metadata
from ragindex.retrieval.context import StoreReads, group_key
from ragindex.retrieval.fusion import Candidate, Fused, fuse
from ragindex.retrieval.request import SearchRequest as SearchRequest
from ragindex.retrieval.request import search_mode as search_mode
from ragindex.retrieval.request import validate_ids as validate_ids
from ragindex.retrieval.rerank import Reranker
from ragindex.retrieval.sources import SourceFailures, resolve
from ragindex.retrieval.terms import best_match, query_terms
from ragindex.store.protocol import ChunkStore
from ragindex.store.records import ChunkView, FusionCalibration
from ragindex.types import (
    CHUNK_FIELDS,
    BBox,
    GroupBy,
    Hit,
    MergedHit,
    SearchMode,
    SearchResult,
    SourceScore,
    Unit,
    VectorKind,
)

_BACKFILL_MARGIN = 10
"""Candidates read beyond those needed, so that a few ghosts do not cost a second read."""
_MAX_CANDIDATES = 1000
"""Most candidates per source a search asks the index for when ghosts crowd out live chunks."""


@dataclass(eq=False)
class Retriever:
    """The read path over one collection.

    Args:
        store: Truth store (backfill).
        index: Vector index.
        collection: Callable returning the collection reads use (None: nothing indexed yet).
        dense: Callable returning the dense encoder (created lazily: the model loads on first use).
        sparse: Sparse encoders by source name (``bm25``, ``sparse``).
        bucket_count: Tenant buckets.
        rrf_k: RRF constant.
        rrf_weights: Per-source RRF weights.
        calibration: The set's fusion calibration (:mod:`~ragindex.retrieval.calibration`): a hybrid search with its
            fusion applies its weights (over ``rrf_weights``) and shows each source's weight in the hits' scores.
        reranker: Callable returning the reranker (created lazily: called only when a request reranks).
        rerank_candidates: Live (backfilled) fused candidates the reranker scores.
        enabled_sources: The sources searches may run (``RAGINDEX_RECALL_ENABLED_SOURCES``); None: every
            configured one.
        observe: Given each ranked score list of a search: ``(source, fingerprint, scores)`` for every source run,
            the ``fused`` list of a hybrid search and the ``rerank`` list (the score-drift watch; memory only).
    """

    store: ChunkStore
    index: Callable[[], VectorIndex]
    collection: Callable[[], str | None]
    dense: Callable[[], DenseEncoder]
    sparse: Mapping[str, SparseEncoder]
    _: KW_ONLY
    bucket_count: int
    rrf_k: int = 60
    rrf_weights: Mapping[str, float] | None = None
    calibration: FusionCalibration | None = None
    reranker: Callable[[], Reranker] | None = None
    rerank_candidates: int = 50
    enabled_sources: tuple[str, ...] | None = None
    observe: Callable[[str, str, Sequence[float]], None] | None = None

    def __post_init__(self) -> None:
        self.rrf_weights = dict(self.rrf_weights or {})

    def sources_for(self, mode: SearchMode, requested: tuple[str, ...] | None = None) -> tuple[str, ...]:
        """Which sources a mode queries: hybrid, every configured and enabled one (narrowed to ``requested``).

        Raises:
            RetrievalConfigurationError: The mode's source, or a requested one, is not configured or is disabled
                by ``RAGINDEX_RECALL_ENABLED_SOURCES``; or no source is left (see :func:`~.sources.resolve`).
        """
        hybrid = mode == SearchMode.HYBRID
        configured = (VectorKind.DENSE.value, *self.sparse)
        return resolve(hybrid, None if hybrid else mode.value, configured, self.enabled_sources, requested)

    def search(self, request: SearchRequest) -> SearchResult:
        """Run one validated request."""
        return self.run(request)[0]

    def run(
        self, request: SearchRequest, *, group_by: GroupBy = GroupBy.NONE, keep: int | None = None
    ) -> tuple[SearchResult, StoreReads]:
        """Run one validated request; also return the rows it read (expansion reuses them).

        With ``group_by``, the first ``request.top_k`` hits are grouped as :func:`~.context.group_hits` does and
        the first ``keep`` groups returned (each with its folded hits in ``merged``): only the kept hits are built.
        """
        started = time.perf_counter()
        latency: dict[str, float] = {}
        sources = self.sources_for(request.mode, request.sources)
        if request.vector is not None:
            self._check_vector(request, sources)
        elif not request.query.strip():
            return SearchResult(hits=(), latency_ms={"total": 0.0}, mode=request.mode.value), StoreReads()
        collection = self.collection()
        if collection is None:
            return SearchResult(hits=(), latency_ms={"total": _ms(started)}, mode=request.mode.value), StoreReads()
        sources, skipped, warnings = self._language_guard(request, sources)
        failures = SourceFailures(request.on_source_error)

        if VectorKind.DENSE in sources:  # the first query of a process loads the model: report it as its own phase
            t0 = time.perf_counter()
            try:
                _ = self.dense().dimension  # a remote encoder without a configured dimension asks the server
            except ConfigurationError:
                raise
            except RagindexError as exc:
                failures.record(VectorKind.DENSE.value, _encoding_error(VectorKind.DENSE.value, exc))
            if (load := _ms(t0)) > 1.0:
                latency["model_load"] = load
        t0 = time.perf_counter()
        queries = self._encode(request, [s for s in sources if s not in failures.errors], failures)
        latency["encode"] = _ms(t0)

        hybrid = request.mode == SearchMode.HYBRID
        per_source = request.candidates if hybrid else request.top_k * 2 + 10
        if request.rerank:  # over-fetch so that the reranker sees rerank_candidates live chunks
            per_source = max(per_source, self.rerank_candidates + (0 if hybrid else 10))
        # a filtered search's scores are those of a subset of the set: they would move the set's score windows
        # a caller's vector may come from elsewhere than this engine's encoder: the watch samples our own encodes
        first, reads = request.where is None and request.vector is None, StoreReads()
        terms = query_terms(request.query)
        # grouped by section, a lexical section is shown only if its group is kept: resolve it then (see _backfill)
        lazy = group_by == GroupBy.SECTION and request.where is None and not request.rerank
        while True:
            fused, full, pending = self._fused(request, queries, collection, per_source, failures, latency, watch=first)
            first = False
            t0 = time.perf_counter()
            fused, views, deferred, enough = self._backfill(fused, request, pending, terms, reads, lazy=lazy)
            latency["backfill"] = latency.get("backfill", 0.0) + _ms(t0)
            # ghosts (removed chunks whose points are not purged yet) took the places of live chunks, and the
            # index has more: ask it again for more (only where a crash or a bulk delete left many ghosts)
            if enough or not full or per_source >= _MAX_CANDIDATES:
                break
            per_source = min(per_source * 4, _MAX_CANDIDATES)
        if request.rerank:
            fused = self._rerank(request.query, fused, views, latency)
            if request.where is None:
                self._watch("rerank", [item.score for item in fused])
        t0 = time.perf_counter()
        shown = request.top_k if keep is None else keep
        hits = self._hits(fused, views, deferred, request, group_by, shown, skipped, terms=terms, reads=reads)
        if group_by != GroupBy.NONE:
            latency["group"] = _ms(t0)
        latency["total"] = _ms(started)
        result = SearchResult(
            hits=tuple(hits),
            latency_ms=latency,
            mode=request.mode.value,
            warnings=warnings,
            degraded=failures.degraded,
        )
        reads.rows = {hit.chunk_id: views[hit.chunk_id].chunk for hit in hits}
        return result, reads

    def _fused(
        self,
        request: SearchRequest,
        queries: Mapping[str, VectorQuery],
        collection: str,
        per_source: int,
        failures: SourceFailures,
        latency: dict[str, float],
        *,
        watch: bool,
    ) -> tuple[list[Fused], bool, set[str]]:
        """Each source's ``per_source`` best candidates, as chunks, fused.

        Also returns whether any source filled its list, and the lexical ids that still stand for a section's
        best-matching chunk (see :meth:`_chunk_lists`). With ``watch`` the score lists go to the score-drift watch
        (the first round of a search only).
        """
        hybrid = request.mode == SearchMode.HYBRID
        bucket = bucket_of(request.user_id, self.bucket_count)
        tenant = TenantFilter(request.user_id, request.set_id, request.doc_ids, where=request.where)
        t0 = time.perf_counter()
        lists: dict[str, list[tuple[str, float]]] = {}
        index = self.index()
        for source, vector_query in queries.items():
            if source in failures.errors:  # failed on an earlier round (degrade): not asked again
                continue
            threshold = None if hybrid or request.rerank else request.score_threshold
            try:
                lists[source] = index.search(
                    collection, bucket, vector_query, tenant, limit=per_source, score_threshold=threshold
                )
            except ConfigurationError:  # e.g. another process owns the embedded index: never degraded
                raise
            except RagindexError as exc:
                error = RetrievalBackendError(f"{source} search failed: {exc.message}", source=source)
                error.__cause__ = exc
                failures.record(source, error)
        failures.check_left(lists)
        latency["search"] = latency.get("search", 0.0) + _ms(t0)
        if watch:
            for source, items in lists.items():
                self._watch(source, [score for _, score in items])

        t0 = time.perf_counter()
        full = any(len(items) >= per_source for items in lists.values())
        if not hybrid and not request.rerank:  # one lexical list: only its first sections can become hits
            keep = per_source - request.top_k  # top_k + 10 on the first round: the margin covers a few ghosts
            lists = {s: items if s == VectorKind.DENSE else items[:keep] for s, items in lists.items()}
        ranked, pending = self._chunk_lists(lists)
        weights, calibrated = self._weights(request.fusion, ranked)
        fused = fuse(request.fusion, ranked, k=self.rrf_k, weights=weights) if hybrid else _single(ranked)
        if hybrid and calibrated:
            fused = [_weighed(item, calibrated) for item in fused]
        latency["fuse"] = latency.get("fuse", 0.0) + _ms(t0)
        if watch and hybrid:
            self._watch("fused", [item.score for item in fused], fusion=request.fusion, sources=tuple(lists))
        return fused, full, pending

    def _weights(
        self, fusion: str, ranked: Mapping[str, Sequence[Candidate]]
    ) -> tuple[dict[str, float] | None, dict[str, float]]:
        """The fusion's weights over the sources in ``ranked``, and the calibrated ones among them (shown in scores).

        A set's calibration applies to its own fusion; without one (or with all weights 1.0, which fuse as none)
        ``rrf`` takes ``rrf_weights`` and the other fusions none.
        """
        cal = self.calibration
        if cal is not None and cal.fusion == fusion and len(ranked) > 1:
            weights = {s: float(w) for s, w in cal.weights.items() if s in ranked}
            if any(w != 1.0 for w in weights.values()):
                return weights, weights
        if fusion != "rrf":
            return None, {}
        return {s: w for s, w in (self.rrf_weights or {}).items() if s in ranked} or None, {}

    def _backfill(
        self,
        fused: Sequence[Fused],
        request: SearchRequest,
        pending: set[str],
        terms: frozenset[str],
        reads: StoreReads,
        *,
        lazy: bool,
    ) -> tuple[list[Fused], dict[str, ChunkView], set[str], bool]:
        """The live rows of the fused candidates, read page by page until enough of them are live.

        Hits need ``top_k`` live chunks (rerank: ``rerank_candidates``); candidates past that are never read,
        unless ghosts, bare sections or the score threshold thin the first page out (then the next page is).
        A ``pending`` section on a page is replaced by its chunk sharing most ``terms`` with the query
        (:meth:`_resolve`) before the page's rows are read; one without live chunks stands for itself (an index
        built without sections, or a bare section that is not a hit).

        With ``lazy`` (grouping by section, no filter, no rerank) a pending section is not resolved here: only
        whether it has a live chunk is read, and a live one counts as one usable candidate, its id kept in the
        ``deferred`` set returned. :meth:`_hits` resolves the few that become hits; the others only take their
        place in the ranking (a lexical section beyond the kept groups is never shown, and no kept group can fold
        it in, since dense found none of its chunks). Returns the candidates, the rows, the deferred sections, and
        whether there were enough.
        """
        want, threshold = (self.rerank_candidates, None) if request.rerank else (request.top_k, request.score_threshold)
        page = want + _BACKFILL_MARGIN
        fused = list(fused)
        views: dict[str, ChunkView] = {}
        deferred: set[str] = set()
        start = 0
        while start < len(fused):
            end = min(start + page, len(fused))
            if sections := [fused[at].id for at in range(start, end) if fused[at].id in pending]:
                if lazy:
                    deferred |= self.store.live_sections(sections)
                else:
                    self._resolve(fused, range(start, end), sections, terms, reads)
            views |= self.store.backfill([fused[at].id for at in range(start, end) if fused[at].id not in deferred])
            start += page
            if sum(1 for item in fused[:start] if _usable(item, views, threshold, request, deferred)) >= want:
                return fused, views, deferred, True
        return fused, views, deferred, False

    def _resolve(
        self,
        fused: list[Fused],
        places: Iterable[int],
        sections: Sequence[str],
        terms: frozenset[str],
        reads: StoreReads,
    ) -> None:
        """Replace each of ``sections`` at ``places`` of ``fused`` by its chunk sharing most ``terms`` with the query.

        One narrow read of the sections' chunks (id, text and lines: they go to ``reads``, and the hits' context
        reuses them); the wide row is read for the chunk that stands for each. A section without live chunks stays.
        """
        members = self.store.section_chunks(sections)
        reads.sections.update(members)
        for at in places:
            item = fused[at]
            if item.id in members:
                fused[at] = Fused(best_match(terms, members[item.id]), item.score, item.sources)

    def _hits(
        self,
        fused: list[Fused],
        views: dict[str, ChunkView],
        deferred: set[str],
        request: SearchRequest,
        group_by: GroupBy,
        keep: int,
        skipped: Mapping[str, str],
        *,
        terms: frozenset[str],
        reads: StoreReads,
    ) -> list[Hit]:
        """The hits of :func:`_kept`, each deferred section among them resolved first (with its row read).

        A section whose chunks went away meanwhile (or whose chunk's row did) is no longer usable, and the groups
        are kept again without it; each round resolves what it keeps, so this ends.
        """
        while True:
            kept = _kept(fused, views, deferred, request, group_by, keep)
            wanted = {item.id for item, _ in kept if item.id in deferred}
            if not wanted:
                return [_hit(n, item, views[item.id], merged, skipped) for n, (item, merged) in enumerate(kept, 1)]
            places = [at for at, item in enumerate(fused) if item.id in wanted]
            self._resolve(fused, places, sorted(wanted), terms, reads)
            views |= self.store.backfill([fused[at].id for at in places if fused[at].id not in wanted])
            deferred -= wanted

    def _watch(self, source: str, scores: Sequence[float], *, fusion: str = "", sources: tuple[str, ...] = ()) -> None:
        """Hand one ranked score list to the score-drift watch, with the fingerprint of what scored it."""
        if self.observe is None or not scores:
            return
        if source == VectorKind.DENSE:
            fingerprint = self.dense().fingerprint
        elif source == "fused":  # fused scores depend on the fusion and on which sources took part
            fingerprint = f"{fusion}(k={self.rrf_k})" if fusion == "rrf" else fusion
            fingerprint += ":" + "+".join(sources)
        elif source == "rerank" and self.reranker is not None:
            fingerprint = self.reranker().name
        else:
            fingerprint = self.sparse[source].name
        self.observe(source, fingerprint, scores)

    def _language_guard(
        self, request: SearchRequest, sources: tuple[str, ...]
    ) -> tuple[tuple[str, ...], dict[str, str], tuple[str, ...]]:
        """Drop the dense source for a query whose dominant script the dense model does not cover.

        Returns the sources to run, the skipped ones with their reason, and warnings. With another source to
        run (hybrid with BM25 or learned sparse) dense is skipped, so the hybrid ranks as those sources alone
        would instead of fusing in near-random neighbours (measured in docs/evaluation.md, "Chinese check").
        When dense is the only source (mode dense, or hybrid with nothing else enabled) it still runs, since
        it is what was asked for, and the result carries a warning. A request with its own vector is not
        guarded: the caller chose the dense model's input, and the text's script says nothing about it.
        """
        if VectorKind.DENSE not in sources or request.vector is not None:
            return sources, {}, ()
        script = dominant_script(request.query)
        encoder = self.dense()
        if script is None or script in encoder.languages:
            return sources, {}, ()
        reason = f"model does not cover {script} script"
        others = tuple(source for source in sources if source != VectorKind.DENSE)
        if others:
            return others, {VectorKind.DENSE.value: reason}, ()
        return (
            sources,
            {},
            (
                f"dense: {reason} ({encoder.fingerprint}): this ranking is unreliable; use mode bm25 or hybrid, "
                "or a multilingual model (RAGINDEX_DENSE_MODEL)",
            ),
        )

    def _chunk_lists(self, lists: Mapping[str, list[tuple[str, float]]]) -> tuple[dict[str, list[Candidate]], set[str]]:
        """Lexical sources rank sections; fusion ranks chunks: each section stands for its chunks, at its rank.

        A section's chunks that dense also found take the section's score and rank (so a chunk combines its own
        dense evidence with its section's lexical evidence). The map from those chunks to their sections is one
        narrow read of the dense candidates' section ids (:meth:`~ragindex.store.protocol.ChunkStore.chunk_sections`).
        A section none of whose chunks dense found keeps its own id here: it is returned as pending, and backfill
        replaces it by the chunk that shares most terms with the query, reading the chunks of only those sections
        that reach a backfilled page. Its fused score does not depend on which chunk that is (the chunk has no
        other evidence), so the ranking is the one reading every section's chunks first would give.
        """
        out: dict[str, list[Candidate]] = {source: list(items) for source, items in lists.items()}
        lexical = [source for source in lists if source != VectorKind.DENSE]
        if not lexical:
            return out, set()
        dense = [cid for cid, _ in lists.get(VectorKind.DENSE, ())]
        found: dict[str, list[tuple[int, str]]] = {}
        for chunk_id, (section_id, index) in (self.store.chunk_sections(dense) if dense else {}).items():
            found.setdefault(section_id, []).append((index, chunk_id))
        pending: set[str] = set()
        for source in lexical:
            expanded: list[Candidate] = []
            for rank, (uid, score) in enumerate(lists[source], 1):
                chunks = found.get(uid)
                if chunks is None:
                    pending.add(uid)
                    expanded.append((uid, score, rank))
                else:
                    expanded += [(cid, score, rank) for _, cid in sorted(chunks)]
            out[source] = expanded
        return out, pending

    def _rerank(
        self, query: str, fused: Sequence[Fused], views: Mapping[str, ChunkView], latency: dict[str, float]
    ) -> list[Fused]:
        """Score the first ``rerank_candidates`` live candidates with the cross-encoder and sort by that score.

        Each item's score becomes its rerank score and its sources gain ``rerank`` (score and 1-based rank);
        ties keep the fused order. Candidates beyond ``rerank_candidates`` are dropped.
        """
        if self.reranker is None:
            raise RetrievalConfigurationError("rerank was requested but no reranker is configured", source="rerank")
        live = [item for item in fused if item.id in views][: self.rerank_candidates]
        if not live:
            latency["rerank"] = 0.0
            return []
        reranker = self.reranker()
        t0 = time.perf_counter()
        reranker.load()  # the first rerank of a process loads the model: report it as its own phase
        if (load := _ms(t0)) > 1.0:
            latency["rerank_model_load"] = load
        t0 = time.perf_counter()
        try:
            scores = reranker.rerank(query, [views[item.id].chunk.content for item in live])
        except (RetrievalConfigurationError, RetrievalEncodingError):
            raise
        except RagindexError as exc:
            raise RetrievalEncodingError(f"rerank failed: {exc.message}", source="rerank") from exc
        if len(scores) != len(live):
            raise RetrievalEncodingError(
                f"the reranker returned {len(scores)} scores for {len(live)} candidates", source="rerank"
            )
        order = sorted(range(len(live)), key=lambda i: -scores[i])  # stable: ties keep the fused order
        reranked = [
            Fused(
                id=live[i].id,
                score=scores[i],
                sources={**live[i].sources, "rerank": SourceScore(score=scores[i], rank=rank)},
            )
            for rank, i in enumerate(order, 1)
        ]
        latency["rerank"] = _ms(t0)
        return reranked

    def _check_vector(self, request: SearchRequest, sources: Sequence[str]) -> None:
        """A caller's query vector: the dense model's dimension, and query text for every other source to run.

        Raises:
            ValidationError: ``vector`` of another dimension, or ``query`` empty while a lexical source runs.
        """
        assert request.vector is not None
        lexical = [source for source in sources if source != VectorKind.DENSE]
        if lexical and not request.query.strip():
            raise ValidationError(
                "query",
                f"mode {request.mode.value} also searches {', '.join(lexical)}, which need the query text: give "
                "query with the vector, or search with mode dense",
            )
        encoder = self.dense()
        if len(request.vector) != encoder.dimension:
            raise ValidationError(
                "vector",
                f"has {len(request.vector)} dimensions; the set's dense model ({encoder.fingerprint}) gives "
                f"{encoder.dimension}: encode the query with that model",
            )

    def _encode(
        self, request: SearchRequest, sources: Sequence[str], failures: SourceFailures
    ) -> dict[str, VectorQuery]:
        """The query vector of each source; a source whose encoder fails goes to ``failures`` (which may raise).

        The dense source takes the request's own vector when it has one (unit length, as the encoder's are).
        """
        query = request.query
        out: dict[str, VectorQuery] = {}
        for source in sources:
            try:
                if source == VectorKind.DENSE and request.vector is not None:
                    out[source] = VectorQuery(using=VectorKind.DENSE, dense=_unit(request.vector))
                elif source == VectorKind.DENSE:
                    out[source] = VectorQuery(using=VectorKind.DENSE, dense=self.dense().encode_queries([query])[0])
                else:
                    out[source] = VectorQuery(using=source, sparse=self.sparse[source].encode_queries([query])[0])
            except ConfigurationError:  # a missing extra or model is a deployment error, never degraded
                raise
            except RagindexError as exc:
                failures.record(source, _encoding_error(source, exc))
        failures.check_left(out)
        return out


def _unit(values: Sequence[float]) -> np.ndarray:
    """``values`` (finite, not all zero) scaled to unit length, in float32 as the encoders give vectors.

    Scaled by the largest magnitude first, so that neither huge (1e300) nor tiny (1e-320) numbers overflow or
    vanish on the way.
    """
    vector = np.asarray(values, dtype=np.float64)
    vector /= np.abs(vector).max()
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def _encoding_error(source: str, exc: RagindexError) -> RetrievalEncodingError:
    """``exc`` of ``source``'s encoder as the retrieval encoding error (kept as its cause)."""
    if isinstance(exc, RetrievalEncodingError):
        return exc
    error = RetrievalEncodingError(f"{source} query encoding failed: {exc.message}", source=source)
    error.__cause__ = exc
    return error


def _single(lists: Mapping[str, Sequence[Candidate]]) -> list[Fused]:
    (source, items), *_ = lists.items()
    return [
        Fused(id=item[0], score=item[1], sources={source: SourceScore(item[1], item[2] if len(item) == 3 else rank)})
        for rank, item in enumerate(items, 1)
    ]


def _usable(
    item: Fused,
    views: Mapping[str, ChunkView],
    threshold: float | None,
    request: SearchRequest,
    deferred: AbstractSet[str] = frozenset(),
) -> bool:
    """Whether a fused candidate can become a hit: live, a chunk, at or above the threshold, matching the filter.

    A ghost (REMOVED in the truth store, not yet purged from the index) has no view; a section row is a lexical
    hit whose chunks are all gone. A chunk whose document's metadata changed after its copy was written matches
    the filter in the index but not here: it is never returned under its old values. A ``deferred`` section (one
    with live chunks, not resolved yet: never with a filter) is usable at or above the threshold.
    """
    view = views.get(item.id)
    if view is None:
        return item.id in deferred and (threshold is None or item.score >= threshold)
    if view.unit == Unit.SECTION:
        return False
    if threshold is not None and item.score < threshold:
        return False
    if request.where is None:
        return True
    from ragindex.filters import matches  # loaded by the filtered search that set ``where``

    return matches(request.where, row_metadata(view.doc_metadata, view.chunk), request.fields)


def _kept(
    fused: Sequence[Fused],
    views: Mapping[str, ChunkView],
    deferred: AbstractSet[str],
    request: SearchRequest,
    group_by: GroupBy,
    keep: int,
) -> list[tuple[Fused, list[MergedHit]]]:
    """The first ``request.top_k`` usable candidates, grouped by ``group_by`` into ``keep`` at most.

    Grouping folds a later hit of a kept group into its keeper's ``merged`` with the rank it had before
    grouping (:func:`~.context.group_hits`). A ``deferred`` section groups as the chunk that will stand for it.
    """
    kept: list[tuple[Fused, list[MergedHit]]] = []
    groups: dict[Hashable, int] = {}
    rank = 0
    for item in fused:
        if not _usable(item, views, request.score_threshold, request, deferred):
            continue
        rank += 1
        if group_by == GroupBy.NONE:
            kept.append((item, []))
        else:
            view = views.get(item.id)
            key = ("section", item.id) if view is None else group_key(view, group_by)
            at = groups.get(key)
            if at is not None:
                kept[at][1].append(MergedHit(chunk_id=item.id, rank=rank, score=item.score, scores=item.sources))
            elif len(kept) < keep:
                groups[key] = len(kept)
                kept.append((item, []))
        if rank == request.top_k:
            break
    return kept[:keep]


def _hit(rank: int, item: Fused, view: ChunkView, merged: Sequence[MergedHit], skipped: Mapping[str, str]) -> Hit:
    chunk = view.chunk
    return Hit(
        rank=rank,
        chunk_id=chunk.chunk_id,
        doc_id=chunk.doc_id,
        set_id=chunk.set_id,
        score=item.score,
        source=view.source_uri,
        filename=view.filename,
        text=chunk.content,
        page=chunk.page,
        section=chunk.section,
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        scores=item.sources,
        metadata=_hit_metadata(view),
        skipped=skipped,
        merged=tuple(merged),
        chunk_type=chunk.chunk_type,
        bbox=BBox.from_list(chunk.metadata.get("bbox")),
        record=view.record,
    )


def _hit_metadata(view: ChunkView) -> dict[str, Any]:
    """The document's metadata, the chunk's own facts but its box (``ocr``, ``pages``), its own fields over both."""
    own = {k: v for k, v in view.chunk.metadata.items() if k not in ("bbox", CHUNK_FIELDS)}
    fields = view.chunk.metadata.get(CHUNK_FIELDS) or {}
    return {**view.doc_metadata, **own, **fields}


def _weighed(item: Fused, weights: Mapping[str, float]) -> Fused:
    """``item`` with each source's calibrated weight on its score."""
    sources = {k: replace(v, weight=weights[k]) if k in weights else v for k, v in item.sources.items()}
    return replace(item, sources=sources)


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)
