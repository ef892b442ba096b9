"""Fusion of per-source ranked candidate lists into one ranking: pure functions, stdlib only.

Every function takes ``lists``: for each source name (a :class:`~ragindex.types.VectorKind`: ``dense``, ``bm25``,
``sparse``) the candidates as ``(item id, raw score)`` pairs, already in rank order (best first). Every function returns
:class:`Fused` items sorted by fused score descending, ties broken by item id ascending, so the output is
deterministic. An id repeated inside one list keeps its first (best) position; later repeats are ignored.

:func:`rrf` and :func:`dbsf` reproduce Qdrant's native ``Fusion.Rrf(k, weights)`` and ``Fusion.Dbsf`` (the
server's ``lib/segment/src/common/{reciprocal_rank_fusion,score_fusion}.rs`` and qdrant-client's local mode),
so an in-process fusion and a fusion pushed down to Qdrant rank the same candidates the same way.
:func:`fuse` selects a fusion by name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from ragindex.errors import ValidationError
from ragindex.types import SourceScore, VectorKind

__all__ = ["FUSIONS", "SOURCE_ORDER", "Fused", "RankedLists", "boost_only", "combine_dedup", "dbsf", "fuse", "rrf"]

Candidate = tuple[str, float] | tuple[str, float, int]
"""``(item id, raw score)``, ranked by position; or ``(item id, raw score, rank)`` where items share a rank."""

RankedLists = Mapping[str, Sequence[Candidate]]
"""Per source name, the candidates in rank order, best first.

An explicit rank lets several items stand at one rank: the chunks of one section share the section's BM25 rank.
"""

SOURCE_ORDER: tuple[str, ...] = tuple(VectorKind)
"""The fixed source order used where sources must be visited in turn; other names follow alphabetically."""


@dataclass(frozen=True, slots=True)
class Fused:
    """One fused item: its fused score and, per source it came from, its raw score and 1-based rank there."""

    id: str
    score: float
    sources: dict[str, SourceScore]


def _ordered_sources(lists: RankedLists) -> list[str]:
    known = [name for name in SOURCE_ORDER if name in lists]
    return known + sorted(name for name in lists if name not in SOURCE_ORDER)


def _dedup(candidates: Sequence[Candidate]) -> list[tuple[str, float, int]]:
    """Return ``(id, raw score, 1-based rank)`` per distinct id, keeping the first occurrence's position or rank."""
    seen: set[str] = set()
    out: list[tuple[str, float, int]] = []
    for position, candidate in enumerate(candidates, start=1):
        item_id, score = candidate[0], candidate[1]
        if item_id not in seen:
            seen.add(item_id)
            out.append((item_id, float(score), candidate[2] if len(candidate) == 3 else position))
    return out


def _provenance(
    lists: RankedLists, deduped: Mapping[str, list[tuple[str, float, int]]] | None = None
) -> dict[str, dict[str, SourceScore]]:
    """Per item id, per source: its raw score and rank there (items in first-seen order).

    ``deduped``: each source's :func:`_dedup` list where the caller has it already.
    """
    sources: dict[str, dict[str, SourceScore]] = {}
    for name in _ordered_sources(lists):
        for item_id, score, rank in deduped[name] if deduped is not None else _dedup(lists[name]):
            sources.setdefault(item_id, {})[name] = SourceScore(score=score, rank=rank)
    return sources


def _sorted(scores: Mapping[str, float], sources: Mapping[str, dict[str, SourceScore]]) -> list[Fused]:
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [Fused(id=item_id, score=score, sources=sources[item_id]) for item_id, score in ranked]


def rrf(lists: RankedLists, *, k: int = 60, weights: Mapping[str, float] | None = None) -> list[Fused]:
    """Reciprocal rank fusion, exactly as Qdrant computes ``Fusion.Rrf(k, weights)``.

    An item at 0-based position ``p`` of a source with weight ``w`` contributes ``1 / ((p + 1) / w + k - 1)``;
    with ``w = 1`` that is the classic ``1 / (k + p)``. A larger weight compresses a source's positions (weight 3
    makes position 2 count like position 0), so it is not a multiplier of the contribution. Raw scores are ignored.

    A weight of 0 removes the source's contribution. Like Qdrant, items found only by such a source are still
    returned, with fused score 0.0, after every item with a positive score.

    Args:
        lists: Per source, ``(id, raw score)`` in rank order.
        k: The rank constant (at least 1); 60 is the customary value.
        weights: Optional weight per source name; sources not named get 1.0.

    Returns:
        The fused items, best first.

    Raises:
        ValidationError: ``k`` below 1, a negative weight, or a weight for a source that is not in ``lists``.
    """
    if isinstance(k, bool) or k < 1:
        raise ValidationError("k", f"the RRF rank constant must be an integer of at least 1, got {k!r}")
    weights = _checked_weights(lists, weights)

    scores: dict[str, float] = {}
    deduped = {name: _dedup(lists[name]) for name in _ordered_sources(lists)}
    for name, candidates in deduped.items():
        weight = float(weights.get(name, 1.0))
        for item_id, _score, rank in candidates:
            contribution = 0.0 if weight == 0 else 1.0 / (rank / weight + k - 1)
            scores[item_id] = scores.get(item_id, 0.0) + contribution
    return _sorted(scores, _provenance(lists, deduped))


def _checked_weights(lists: RankedLists, weights: Mapping[str, float] | None) -> dict[str, float]:
    """``weights`` as a dict, refusing a source without a list and a negative weight."""
    checked = dict(weights or {})
    unknown = sorted(set(checked) - set(lists))
    if unknown:
        valid = ", ".join(sorted(lists)) or "(none)"
        raise ValidationError("weights", f"no candidate list for source(s) {', '.join(unknown)}; valid: {valid}")
    negative = sorted(name for name, weight in checked.items() if not weight >= 0)
    if negative:
        raise ValidationError(
            "weights", f"weights must be >= 0 (0 removes a source); got {negative[0]}={checked[negative[0]]}"
        )
    return checked


def _distribution_normalised(candidates: list[tuple[str, float, int]]) -> list[float]:
    """Map scores to ``[mean - 3 std, mean + 3 std] -> [0, 1]`` the way Qdrant does (sample std, no clamping)."""
    values = [score for _id, score, _rank in candidates]
    n = len(values)
    if n == 1:
        return [0.5]
    mean = sum(values) / n
    variance = sum((value - mean) ** 2 for value in values) / (n - 1)
    if variance == 0:
        return [0.5] * n
    std = variance**0.5
    low, high = mean - 3 * std, mean + 3 * std
    return [(value - low) / (high - low) for value in values]


def dbsf(lists: RankedLists, *, weights: Mapping[str, float] | None = None) -> list[Fused]:
    """Distribution-based score fusion, exactly as Qdrant computes ``Fusion.Dbsf`` (without ``weights``).

    Per source, each raw score ``s`` becomes ``(s - (μ - 3σ)) / 6σ`` where ``μ`` is the mean and ``σ`` the
    *sample* standard deviation (n − 1) of that list's scores; a list of one item, or whose scores are all equal,
    normalises to 0.5. The normalised scores are summed over sources. As in Qdrant the result is not clamped: a
    score more than 3σ from the mean (possible in lists longer than 10) normalises outside ``[0, 1]``.
    Empty lists are skipped.

    ``weights`` multiply each source's normalised scores before the sum (a set's calibration,
    :mod:`ragindex.retrieval.calibration`); a source not named weighs 1.0, and 0 removes its contribution (its items
    are still returned, as with RRF).

    Args:
        lists: Per source, ``(id, raw score)`` in rank order; higher raw scores must mean better.
        weights: Optional weight per source name (>= 0).

    Returns:
        The fused items, best first.

    Raises:
        ValidationError: A negative weight, or a weight for a source that is not in ``lists``.
    """
    weights = _checked_weights(lists, weights)
    scores: dict[str, float] = {}
    deduped = {name: _dedup(lists[name]) for name in _ordered_sources(lists)}
    for name, candidates in deduped.items():
        if not candidates:
            continue
        weight = float(weights.get(name, 1.0))
        for (item_id, _score, _rank), normalised in zip(candidates, _distribution_normalised(candidates), strict=True):
            scores[item_id] = scores.get(item_id, 0.0) + weight * normalised
    return _sorted(scores, _provenance(lists, deduped))


def combine_dedup(lists: RankedLists) -> list[Fused]:
    """Union of the sources deduplicated by id, interleaved by rank (seed "combine and dedup").

    Raw scores of different sources are not comparable, so none is used: the output takes each source's
    rank-1 item in the fixed order dense, bm25, sparse (then other sources alphabetically), then each
    source's rank-2 item, and so on; an id already taken is skipped. The fused score is ``1 / position``
    (1-based) in that interleaved list, so it decreases strictly and ties never occur.

    Args:
        lists: Per source, ``(id, raw score)`` in rank order.

    Returns:
        The fused items in interleaved order.
    """
    deduped = [_dedup(lists[name]) for name in _ordered_sources(lists)]
    order: list[str] = []
    taken: set[str] = set()
    for depth in range(max((len(c) for c in deduped), default=0)):
        for candidates in deduped:
            if depth < len(candidates) and candidates[depth][0] not in taken:
                taken.add(candidates[depth][0])
                order.append(candidates[depth][0])
    sources = _provenance(lists)
    return [
        Fused(id=item_id, score=1.0 / position, sources=sources[item_id]) for position, item_id in enumerate(order, 1)
    ]


def _min_max(candidates: list[tuple[str, float, int]]) -> dict[str, float]:
    """Min-max normalise a list's scores to ``[0, 1]``; when all are equal every item gets 1.0 (presence counts)."""
    if not candidates:
        return {}
    low = min(score for _id, score, _rank in candidates)
    high = max(score for _id, score, _rank in candidates)
    if high == low:
        return {item_id: 1.0 for item_id, _score, _rank in candidates}
    return {item_id: (score - low) / (high - low) for item_id, score, _rank in candidates}


def boost_only(lists: RankedLists, *, primary: str = VectorKind.DENSE, boost_weight: float = 0.2) -> list[Fused]:
    """Keep the primary source's items only; the other sources boost their scores (seed "dense only, BM25 boosts").

    Fused score = primary raw score + ``boost_weight`` × Σ over the other sources of the item's score there,
    min-max normalised to ``[0, 1]`` within that source's list (0 when the item is absent from it; 1.0 for every
    item of a list whose scores are all equal). Items that only other sources found are dropped.

    Args:
        lists: Per source, ``(id, raw score)`` in rank order.
        primary: The source whose items are kept. If it is absent or empty, the first non-empty source in the
            order dense, bm25, sparse (then alphabetical) is the primary instead.
        boost_weight: Multiplier of the normalised boost, at least 0.

    Returns:
        The primary source's items, best fused score first.

    Raises:
        ValidationError: ``boost_weight`` is negative.
    """
    if not boost_weight >= 0:
        raise ValidationError("boost_weight", f"must be >= 0, got {boost_weight!r}")
    if not lists.get(primary):
        primary = next((name for name in _ordered_sources(lists) if lists[name]), primary)
    base = _dedup(lists.get(primary, ()))
    boosts = [_min_max(_dedup(lists[name])) for name in _ordered_sources(lists) if name != primary]
    scores = {item_id: score + boost_weight * sum(b.get(item_id, 0.0) for b in boosts) for item_id, score, _ in base}
    return _sorted(scores, _provenance(lists))


FUSIONS: dict[str, Callable[..., list[Fused]]] = {
    "boost": boost_only,
    "combine": combine_dedup,
    "dbsf": dbsf,
    "rrf": rrf,
}
"""The fusions :func:`fuse` can select, by name."""


def fuse(
    name: str,
    lists: RankedLists,
    *,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
    primary: str = VectorKind.DENSE,
    boost_weight: float = 0.2,
    limit: int | None = None,
) -> list[Fused]:
    """Fuse ``lists`` with the fusion called ``name`` and keep the best ``limit`` items.

    Each fusion receives only the options it takes (``k`` goes to ``rrf``, ``weights`` to ``rrf`` and ``dbsf``,
    ``primary`` and ``boost_weight`` to ``boost``); the others are ignored.

    Args:
        name: One of ``boost``, ``combine``, ``dbsf``, ``rrf``.
        lists: Per source, ``(id, raw score)`` in rank order.
        k: RRF rank constant.
        weights: Weight per source name (``rrf``, ``dbsf``).
        primary: The source whose items ``boost`` keeps.
        boost_weight: The multiplier of ``boost``'s normalised boosts.
        limit: Keep at most this many items (all when None).

    Returns:
        The fused items, best first.

    Raises:
        ValidationError: An unknown fusion name (the message lists the valid ones), a ``limit`` below 0, or
            invalid options for the selected fusion.
    """
    function = FUSIONS.get(name)
    if function is None:
        raise ValidationError("fusion", f"unknown fusion {name!r}; valid: {', '.join(sorted(FUSIONS))}")
    if limit is not None and limit < 0:
        raise ValidationError("limit", f"must be >= 0, got {limit}")
    options = {"k": k, "weights": weights, "primary": primary, "boost_weight": boost_weight}
    accepted = _accepted(function)
    fused = function(lists, **{key: value for key, value in options.items() if key in accepted})
    return fused if limit is None else fused[:limit]


@cache
def _accepted(function: Callable[..., list[Fused]]) -> frozenset[str]:
    """The keyword options a fusion function takes (read once per function, not per search)."""
    return frozenset(inspect.signature(function).parameters)
