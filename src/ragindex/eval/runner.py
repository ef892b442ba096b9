"""Run a BEIR evaluation through the real pipeline: ingest the corpus into its own set, search every query per mode.

A mode is ``dense``, ``bm25``, ``sparse``, ``hybrid`` or ``hybrid:<fusion>`` (``rrf``, ``dbsf``, ``combine``,
``boost``), each optionally followed by ``+rerank`` (cross-encoder rerank of the fused candidates, e.g.
``hybrid+rerank``). A single source may name the unit it scores (``bm25:section``, ``dense:chunk``); the unit
must be the one the index gives that source, and every result reports the units of its sources. Hits are chunks;
a document's score is its best chunk's score, and the run keeps the ``top_k`` best documents per query. Latency
is the wall time around :meth:`Engine.search` per query (query encoding, index search, fusion and backfill),
after one untimed warm-up query per mode.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragindex.errors import ValidationError
from ragindex.eval.beir import BeirDataset, corpus_id, load_dataset
from ragindex.eval.metrics import evaluate
from ragindex.types import SearchMode, Unit

if TYPE_CHECKING:
    from ragindex.engine import Engine
    from ragindex.pipeline.sync import IngestReport, ProgressFn

__all__ = [
    "REPORTED",
    "ModeResult",
    "ModeSpec",
    "ingest_dataset",
    "parse_modes",
    "percentile",
    "run_eval",
    "run_mode",
    "source_units",
]

REPORTED: tuple[str, ...] = ("ndcg@10", "recall@10", "recall@100", "mrr@10")
"""The metrics each mode reports, in table order."""

_MODES = tuple(SearchMode)
_FUSIONS = ("rrf", "dbsf", "combine", "boost")
_UNITS = tuple(Unit)
_UNIT_HINTS: dict[str, str] = {
    Unit.CHUNK: "RAGINDEX_SECTION_MAX_CHARS=0 makes every source score chunks (the next ingest re-chunks)",
    Unit.SECTION: "sections carry the lexical sources (bm25, sparse); dense always scores chunks",
}
CHUNK_FACTOR = 3
"""Chunk hits requested per wanted document, so that ``top_k`` distinct documents survive the max-pooling."""


@dataclass(frozen=True, slots=True)
class ModeSpec:
    """One evaluated configuration: a search mode and, for hybrid, a fusion (None: the settings' default).

    ``unit``: the unit a single-source mode was asked to score (``bm25:section``); None when not named.
    """

    name: str
    mode: str
    fusion: str | None = None
    rerank: bool = False
    unit: str | None = None


@dataclass(slots=True)
class ModeResult:
    """The metrics and latency of one mode over the evaluated queries, and the unit each of its sources scored."""

    mode: str
    metrics: dict[str, float]
    latency_ms: dict[str, float]
    queries: int
    top_k: int
    run: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)
    units: dict[str, str] = field(default_factory=dict)
    baseline: str | None = None
    """With ``--baseline``: the baseline row this mode is compared with (``baseline:rrf`` for hybrid)."""
    delta: dict[str, float] = field(default_factory=dict)
    """With ``--baseline``: this mode's metric minus the baseline row's, per reported metric."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON entry printed by ``ragindex eval --json`` (the run itself is left out)."""
        entry: dict[str, Any] = {
            "mode": self.mode,
            **{name: round(self.metrics[name], 4) for name in REPORTED},
            "latency_ms": {k: round(v, 2) for k, v in self.latency_ms.items()},
            "queries": self.queries,
            "top_k": self.top_k,
            "units": dict(self.units),
        }
        if self.baseline is not None:
            entry["vs_baseline"] = {"mode": self.baseline, **{k: round(v, 4) for k, v in self.delta.items()}}
        return entry


def parse_modes(text: str | Sequence[str]) -> list[ModeSpec]:
    """``"dense,bm25,hybrid:dbsf"`` -> mode specs; errors name the bad entry and list the valid ones.

    Raises:
        ValidationError: An unknown mode, fusion or unit, a unit on hybrid, or a suffix other than ``+rerank``.
    """
    items = text.split(",") if isinstance(text, str) else list(text)
    specs: list[ModeSpec] = []
    for raw in items:
        name = raw.strip()
        if not name:
            continue
        base, plus, suffix = name.partition("+")
        if plus and suffix != "rerank":
            raise ValidationError("modes", f"{name!r}: unknown suffix {'+' + suffix!r}; valid: +rerank")
        mode, _, qualifier = base.partition(":")
        if mode not in _MODES:
            raise ValidationError(
                "modes", f"unknown mode {mode!r}; valid: {', '.join(_MODES)}, hybrid:<fusion> or <source>:<unit>"
            )
        fusion = qualifier if mode == SearchMode.HYBRID else ""
        unit = "" if mode == SearchMode.HYBRID else qualifier
        if fusion and fusion not in _FUSIONS:
            raise ValidationError("modes", f"unknown fusion {fusion!r}; valid: {', '.join(_FUSIONS)}")
        if unit and unit not in _UNITS:
            raise ValidationError("modes", f"{name!r}: unknown unit {unit!r}; valid: {', '.join(_UNITS)}")
        if name not in {s.name for s in specs}:
            specs.append(ModeSpec(name, mode, fusion=fusion or None, rerank=bool(plus), unit=unit or None))
    if not specs:
        raise ValidationError("modes", "give at least one mode")
    return specs


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def ingest_dataset(
    engine: Engine, dataset: BeirDataset, *, user_id: int, set_id: int, progress: ProgressFn | None = None
) -> IngestReport:
    """Sync the corpus file into (user_id, set_id) through the normal pipeline (incremental: unchanged is skipped)."""
    return engine.ingest([dataset.corpus], user_id=user_id, set_id=set_id, progress=progress)


def run_mode(
    engine: Engine,
    dataset: BeirDataset,
    spec: ModeSpec,
    *,
    top_k: int,
    user_id: int,
    set_id: int,
) -> ModeResult:
    """Search every query of ``dataset`` with one mode and score the document run against the qrels."""
    units = source_units(engine, spec)
    chunks = top_k * CHUNK_FACTOR

    def search(text: str) -> Any:
        return engine.search(
            text,
            user_id=user_id,
            set_id=set_id,
            mode=spec.mode,
            top_k=chunks,
            fusion=spec.fusion,
            candidates=chunks,
            rerank=spec.rerank,
            expand="none",  # the run is scored on chunks max-pooled per document, whatever the search defaults
            group_by="none",
        )

    if dataset.queries:
        search(next(iter(dataset.queries.values())))  # warm-up: model load, shard open
    run: dict[str, dict[str, float]] = {}
    latencies: list[float] = []
    for qid, text in dataset.queries.items():
        started = time.perf_counter()
        result = search(text)
        latencies.append((time.perf_counter() - started) * 1000.0)
        docs: dict[str, float] = {}
        for hit in result.hits:
            doc = corpus_id(hit.source)
            if doc not in docs or hit.score > docs[doc]:
                docs[doc] = hit.score
        best = sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)[:top_k]
        run[qid] = dict(best)
    scores = evaluate(dataset.qrels, run, ks=(10, 100), metrics=("ndcg", "recall", "mrr"))
    return ModeResult(
        mode=spec.name,
        metrics={name: scores[name] for name in REPORTED},
        latency_ms={"p50": percentile(latencies, 50), "p95": percentile(latencies, 95)},
        queries=len(dataset.queries),
        top_k=top_k,
        run=run,
        units=units,
    )


def source_units(engine: Engine, spec: ModeSpec) -> dict[str, str]:
    """The unit each source of ``spec`` scores in ``engine``'s index (hybrid: every source it runs).

    Raises:
        ValidationError: ``spec`` names a unit its source does not score here (the message says which it does).
        SourceUnavailableError: The mode's source is not configured or is disabled (as the search would raise).
    """
    from ragindex.pipeline.sync_limits import scored_units
    from ragindex.retrieval.sources import enabled_by_setting, resolve

    hybrid = spec.mode == SearchMode.HYBRID
    enabled = enabled_by_setting(engine.settings.recall_enabled_sources)
    sources = resolve(hybrid, None if hybrid else spec.mode, engine.kinds, enabled, None)
    units = scored_units(engine.kinds, engine.settings.section_max_chars)
    if spec.unit is not None and spec.unit != units[spec.mode]:
        raise ValidationError(
            "modes",
            f"{spec.name!r}: {spec.mode} scores {units[spec.mode]}s in this index, not {spec.unit}s; "
            f"{_UNIT_HINTS[spec.unit]}",
        )
    return {source: units[source] for source in sources}


def limit(dataset: BeirDataset, count: int | None) -> BeirDataset:
    """The dataset restricted to its first ``count`` judged queries (None: all)."""
    if count is None:
        return dataset
    if count < 1:
        raise ValidationError("limit_queries", f"must be >= 1, got {count}")
    kept = list(dataset.queries)[:count]
    return BeirDataset(
        root=dataset.root,
        corpus=dataset.corpus,
        queries={qid: dataset.queries[qid] for qid in kept},
        qrels={qid: dataset.qrels[qid] for qid in kept},
    )


def run_eval(
    engine: Engine,
    dataset_dir: str | Path,
    modes: str | Sequence[str],
    top_k: int = 100,
    user_id: int = 1,
    set_id: int = 9001,
    limit_queries: int | None = None,
    *,
    baseline: bool = False,
    on_ingest: Callable[[IngestReport], None] | None = None,
    progress: ProgressFn | None = None,
) -> list[ModeResult]:
    """Ingest the dataset's corpus into (user_id, set_id), then evaluate every mode on the test queries.

    Args:
        engine: The engine (its data dir holds the eval set; reuse it and a second eval embeds nothing).
        dataset_dir: A BEIR-layout directory.
        modes: ``"dense,bm25,hybrid"`` or a list of mode names.
        top_k: Documents kept per query (recall@100 needs >= 100).
        user_id: Tenant of the eval set.
        set_id: The eval set.
        limit_queries: Evaluate only the first N test queries.
        baseline: Also run the whole-document baseline (:mod:`ragindex.eval.baseline`) on the same queries: its
            rows (``baseline:dense``, ``baseline:bm25``, ``baseline:rrf``) follow the modes', and each mode
            carries its difference from its counterpart (``delta``).
        on_ingest: Called with the ingest report (``chunks.embedded`` is 0 when nothing changed).
        progress: Ingest progress callback.

    Raises:
        ValidationError: Bad modes, top_k or dataset layout.
        SourceUnavailableError: A mode's source is not configured or is disabled (before the ingest).
    """
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValidationError("top_k", f"must be >= 1, got {top_k!r}")
    specs = parse_modes(modes)
    for spec in specs:
        source_units(engine, spec)  # a unit the index does not give, or a source it lacks, fails before the ingest
    dataset = limit(load_dataset(dataset_dir), limit_queries)
    report = ingest_dataset(engine, dataset, user_id=user_id, set_id=set_id, progress=progress)
    if on_ingest is not None:
        on_ingest(report)
    results = [run_mode(engine, dataset, spec, top_k=top_k, user_id=user_id, set_id=set_id) for spec in specs]
    if not baseline:
        return results
    from ragindex.eval.baseline import baseline_delta, run_baseline

    baselines = run_baseline(engine, dataset, top_k=top_k)
    for result in results:
        compared = baseline_delta(result, baselines)
        if compared is not None:
            result.baseline, result.delta = compared
    return results + baselines
