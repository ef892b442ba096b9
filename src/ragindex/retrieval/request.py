"""A search request, validated when it is made: every error names its field (seed section 9.1)."""

from __future__ import annotations

import math
import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragindex.errors import ValidationError
from ragindex.retrieval.fusion import FUSIONS
from ragindex.retrieval.sources import OnSourceError, requested_sources, source_error_policy
from ragindex.types import SearchMode


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """A search request, checked when it is made: an error names the field (seed section 9.1)."""

    query: str
    user_id: int
    set_id: int
    doc_ids: tuple[int, ...] | None
    mode: SearchMode
    top_k: int
    score_threshold: float | None
    fusion: str
    candidates: int
    rerank: bool = False
    sources: tuple[str, ...] | None = None
    """Narrow the sources to these (within ``RAGINDEX_RECALL_ENABLED_SOURCES``); None: every enabled one."""
    on_source_error: OnSourceError = OnSourceError.FAIL
    """``fail``: a failing source fails the search; ``degrade``: the search goes on without it."""
    where: Any = None
    """A parsed metadata filter (:func:`ragindex.filters.parse_filter`), applied in the index and at backfill."""
    fields: Mapping[str, Any] = field(default_factory=dict)
    """The set's metadata field types the filter was parsed against (the backfill check reads values by them)."""
    vector: Sequence[float] | None = None
    """A dense query vector computed by the caller (with the set's dense model): the dense source searches with it
    instead of encoding ``query``, which then serves the lexical sources only (and may be empty in mode dense).
    Checked and kept as a tuple of floats (:func:`query_vector`)."""

    def __post_init__(self) -> None:
        validate_ids(user_id=self.user_id, set_id=self.set_id)
        object.__setattr__(self, "sources", requested_sources(self.sources))
        object.__setattr__(self, "on_source_error", source_error_policy(self.on_source_error))
        if self.sources is not None and self.mode != SearchMode.HYBRID and self.mode.value not in self.sources:
            raise ValidationError(
                "sources",
                f"mode {self.mode.value} searches {self.mode.value} only, which {','.join(self.sources)} leaves out; "
                f"add it or search with mode hybrid",
            )
        for doc_id in self.doc_ids or ():
            if not isinstance(doc_id, int) or isinstance(doc_id, bool) or doc_id < 1:
                raise ValidationError("doc_ids", f"must be positive integers, got {doc_id!r}")
        if not isinstance(self.top_k, int) or self.top_k < 1:
            raise ValidationError("top_k", f"must be >= 1, got {self.top_k!r}")
        if self.candidates < 1:
            raise ValidationError("candidates", f"must be >= 1, got {self.candidates!r}")
        if self.fusion not in FUSIONS:
            raise ValidationError("fusion", f"unknown fusion {self.fusion!r}; valid: {', '.join(sorted(FUSIONS))}")
        if self.score_threshold is not None:
            _check_threshold(self.score_threshold, self.mode, rerank=self.rerank)
        if self.vector is not None:
            object.__setattr__(self, "vector", query_vector(self.vector))
            self._check_vector_use()

    def _check_vector_use(self) -> None:
        """A query vector feeds the dense source: refused where no dense search would use it."""
        if self.mode not in (SearchMode.DENSE, SearchMode.HYBRID):
            raise ValidationError(
                "vector", f"mode {self.mode.value} does not search the dense source; search with mode dense or hybrid"
            )
        if self.sources is not None and SearchMode.DENSE.value not in self.sources:
            raise ValidationError(
                "vector", f"sources {','.join(self.sources)} leave out dense, which the vector is for"
            )
        if self.rerank and not self.query.strip():
            raise ValidationError("rerank", "the reranker reads the query text: give query with the vector")


def query_vector(values: Any) -> tuple[float, ...]:
    """``values`` (a sequence of numbers, e.g. a list or a 1-D numpy array) as a query vector of finite floats.

    Raises:
        ValidationError: ``vector``: not a flat sequence of numbers, empty, not finite, or all zeros (no direction
            to compare by).
    """
    if isinstance(values, np.ndarray):
        if values.ndim != 1 or values.dtype.kind not in "fiu":
            raise ValidationError("vector", f"must be a 1-D array of numbers, got shape {values.shape} {values.dtype}")
    elif isinstance(values, str | bytes) or not hasattr(values, "__len__"):
        raise ValidationError("vector", f"must be a list of numbers, got {type(values).__name__}")
    elif not {type(value) for value in values} <= {float, int}:  # the plain JSON case is checked at once
        values = [_number(value) for value in values]
    if not len(values):
        raise ValidationError("vector", "must not be empty")
    try:
        array = np.asarray(values, dtype=np.float64)
    except OverflowError:  # an int beyond any float
        raise ValidationError("vector", "must hold finite numbers, found an integer beyond a float's range") from None
    finite = np.isfinite(array)
    if not finite.all():
        raise ValidationError("vector", f"must hold finite numbers, found {array[~finite][0]!r}")
    if not array.any():
        raise ValidationError("vector", "must not be all zeros (a zero vector has no direction to compare by)")
    return tuple(array.tolist())


def _number(value: Any) -> float:
    try:
        if isinstance(value, bool | str | bytes):
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        raise ValidationError("vector", f"must be a flat list of numbers, found {reprlib.repr(value)}") from None


def validate_ids(**ids: int) -> None:
    """user_id, set_id (and any other id) must be positive integers."""
    for name, value in ids.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValidationError(name, f"must be a positive integer, got {value!r}")


def search_mode(mode: str) -> SearchMode:
    """The :class:`SearchMode` named ``mode``; a ValidationError listing the valid ones otherwise."""
    try:
        return SearchMode(mode)
    except ValueError:
        valid = ", ".join(m.value for m in SearchMode)
        raise ValidationError("mode", f"unknown mode {mode!r}; valid: {valid}") from None


def _check_threshold(value: float, mode: SearchMode, *, rerank: bool = False) -> None:
    if not math.isfinite(value):
        raise ValidationError("score_threshold", f"must be a finite number, got {value!r}")
    if rerank and not 0.0 <= value <= 1.0:
        raise ValidationError(
            "score_threshold", f"with rerank it applies to the rerank score (a sigmoid, in [0, 1]); got {value}"
        )
    if mode == SearchMode.DENSE and not 0.0 <= value <= 1.0:
        raise ValidationError("score_threshold", f"dense scores are cosine similarities in [0, 1]; got {value}")
    if value < 0.0:
        raise ValidationError("score_threshold", f"{mode.value} scores are never negative; got {value}")
