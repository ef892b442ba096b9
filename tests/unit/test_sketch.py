"""The score histogram of the drift watch: quantiles within 1% of a sample value, exact merges, bounded bins."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable

import pytest

from ragindex.sketch import RELATIVE_ACCURACY, ScoreSketch


def exact(values: list[float], q: float) -> float:
    """The sample at the lower rank of ``q`` (what the sketch approximates)."""
    ordered = sorted(values)
    return ordered[math.floor(q * (len(ordered) - 1))]


@pytest.mark.parametrize(
    "draw",
    [
        lambda r: r.uniform(0.05, 0.95),  # cosine similarities
        lambda r: r.lognormvariate(1.0, 1.2),  # BM25 scores: unbounded, skewed
        lambda r: r.uniform(-0.3, 0.9),  # a dense model with negative cosines
    ],
    ids=["cosine", "bm25", "signed"],
)
def test_quantiles_are_within_the_relative_accuracy_of_the_sample(draw: Callable[[random.Random], float]) -> None:
    rng = random.Random(7)
    values = [draw(rng) for _ in range(5000)]
    sketch = ScoreSketch()
    sketch.extend(values)
    assert sketch.count == 5000
    assert sketch.mean == pytest.approx(sum(values) / len(values))
    for q in (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0):
        want = exact(values, q)
        got = sketch.quantile(q)
        assert got is not None
        assert abs(got - want) <= RELATIVE_ACCURACY * abs(want) + 1e-12, (q, got, want)


def test_merge_equals_one_sketch_of_every_value_and_survives_json() -> None:
    rng = random.Random(3)
    left, right = [rng.uniform(0, 30) for _ in range(700)], [rng.uniform(5, 9) for _ in range(300)]
    a, b, both = ScoreSketch(), ScoreSketch(), ScoreSketch()
    a.extend(left)
    b.extend(right)
    both.extend(left + right)
    a.merge(b)
    assert (a.pos, a.neg, a.zero, a.count) == (both.pos, both.neg, both.zero, both.count)
    stored = ScoreSketch.from_dict(json.loads(json.dumps(a.to_dict())))
    assert [stored.quantile(q) for q in (0.1, 0.5, 0.9)] == [both.quantile(q) for q in (0.1, 0.5, 0.9)]
    assert stored.mean == pytest.approx(both.mean)


def test_zero_negative_empty_and_non_finite_values() -> None:
    sketch = ScoreSketch()
    assert sketch.quantile(0.5) is None and sketch.mean is None
    sketch.extend([0.0, -2.0, float("nan"), float("inf"), 3.0])
    assert sketch.count == 3  # NaN and inf are not scores
    assert sketch.quantile(0.0) == pytest.approx(-2.0, rel=RELATIVE_ACCURACY)
    assert sketch.quantile(0.5) == 0.0
    assert sketch.quantile(1.0) == pytest.approx(3.0, rel=RELATIVE_ACCURACY)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        sketch.quantile(1.5)
    assert ScoreSketch.from_dict(None).count == 0


def test_bins_are_bounded_whatever_the_values() -> None:
    sketch = ScoreSketch()
    sketch.extend(10.0**e for e in range(-30, 31))
    sketch.extend(1e300 * k for k in range(1, 50))
    # clamped to [1e-9, 1e9]: at most ln(1e18) / ln(gamma) bins, about 2,100
    assert (
        len(sketch.pos) <= math.ceil(math.log(1e18) / math.log((1 + RELATIVE_ACCURACY) / (1 - RELATIVE_ACCURACY))) + 1
    )
    assert sketch.quantile(1.0) == pytest.approx(1e9, rel=RELATIVE_ACCURACY)
