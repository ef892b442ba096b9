"""A mergeable score histogram with fixed logarithmic bins (relative accuracy 1%), for the score-drift watch.

A score ``x > 0`` falls in bin ``ceil(log(x) / log(gamma))`` with ``gamma = (1 + a) / (1 - a)``: every value of a bin
is within ``a`` (1%) of the bin's representative, so any quantile is read back within 1% of a true sample value
(DDSketch's scheme, without its collapsing: scores are clamped to [1e-9, 1e9], which bounds the bins to about 2,100
per sign). Negative scores (a cosine below 0) have bins of their own, and values within 1e-9 of 0 are counted as 0.

The bins do not depend on the data, so two histograms merge by adding counts: the same window is filled by every
process that searches (CLI runs, the service, workers), and adding a score costs one ``log`` and a dict update.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["RELATIVE_ACCURACY", "ScoreSketch"]

RELATIVE_ACCURACY = 0.01
_GAMMA = (1 + RELATIVE_ACCURACY) / (1 - RELATIVE_ACCURACY)
_LOG_GAMMA = math.log(_GAMMA)
_MIN = 1e-9
_MAX = 1e9


def _bin(value: float) -> int:
    return math.ceil(math.log(min(value, _MAX)) / _LOG_GAMMA)


def _value(index: int) -> float:
    return 2 * _GAMMA**index / (_GAMMA + 1)


class ScoreSketch:
    """Counts of scores in fixed logarithmic bins; quantiles within 1% (relative) of a sample value.

    Not thread-safe: the caller holds a lock around :meth:`add` and :meth:`merge`.
    """

    __slots__ = ("count", "neg", "pos", "total", "zero")

    def __init__(self) -> None:
        self.pos: dict[int, int] = {}
        self.neg: dict[int, int] = {}
        self.zero = 0
        self.count = 0
        self.total = 0.0

    def add(self, value: float) -> None:
        """Count one score (NaN and infinities are ignored: they are not scores)."""
        if not math.isfinite(value):
            return
        self.count += 1
        self.total += value
        if value > _MIN:
            key = _bin(value)
            self.pos[key] = self.pos.get(key, 0) + 1
        elif value < -_MIN:
            key = _bin(-value)
            self.neg[key] = self.neg.get(key, 0) + 1
        else:
            self.zero += 1

    def extend(self, values: Iterable[float]) -> None:
        """Count several scores."""
        for value in values:
            self.add(value)

    def merge(self, other: ScoreSketch) -> None:
        """Add the counts of ``other`` to this one."""
        for key, n in other.pos.items():
            self.pos[key] = self.pos.get(key, 0) + n
        for key, n in other.neg.items():
            self.neg[key] = self.neg.get(key, 0) + n
        self.zero += other.zero
        self.count += other.count
        self.total += other.total

    @property
    def mean(self) -> float | None:
        """The mean score (exact), or None when empty."""
        return self.total / self.count if self.count else None

    def quantile(self, q: float) -> float | None:
        """The ``q``-quantile (0 <= q <= 1) within 1% of a sample value (lower rank), or None when empty.

        Raises:
            ValueError: ``q`` is outside [0, 1].
        """
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"a quantile is in [0, 1], got {q}")
        if not self.count:
            return None
        rank = q * (self.count - 1)
        seen = 0
        for key in sorted(self.neg, reverse=True):  # the most negative first
            seen += self.neg[key]
            if seen > rank:
                return -_value(key)
        seen += self.zero
        if seen > rank:
            return 0.0
        for key in sorted(self.pos):
            seen += self.pos[key]
            if seen > rank:
                return _value(key)
        return _value(max(self.pos)) if self.pos else 0.0  # not reached: the counts add up to ``count``

    def to_dict(self) -> dict[str, Any]:
        """The JSON form stored in the truth store (bins keyed by their index as a string)."""
        return {
            "n": self.count,
            "sum": self.total,
            "zero": self.zero,
            "pos": {str(k): n for k, n in sorted(self.pos.items())},
            "neg": {str(k): n for k, n in sorted(self.neg.items())},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ScoreSketch:
        """A sketch from :meth:`to_dict`'s form (None or an empty mapping: an empty sketch)."""
        sketch = cls()
        if not data:
            return sketch
        sketch.count = int(data.get("n", 0))
        sketch.total = float(data.get("sum", 0.0))
        sketch.zero = int(data.get("zero", 0))
        sketch.pos = {int(k): int(n) for k, n in dict(data.get("pos", {})).items()}
        sketch.neg = {int(k): int(n) for k, n in dict(data.get("neg", {})).items()}
        return sketch

    def copy(self) -> ScoreSketch:
        """An independent copy."""
        other = ScoreSketch()
        other.merge(self)
        return other
