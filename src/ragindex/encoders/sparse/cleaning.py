"""The one cleaning rule for learned lexical weights, shared by every sparse provider.

BGE-M3 returns ``{token_id: weight}`` per text (locally ``output["lexical_weights"]``; the HTTP
services return the same mapping with string keys). Every provider passes it through
:func:`clean_lexical_weights` so that switching provider never changes what is written to the
index or how it is queried (seed section 6.6): drop weights below ``min_weight`` (and never keep a
weight <= 0), keep the ``top_k`` largest, sort the indices ascending.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ragindex.errors import EncodingError
from ragindex.types import SparseVector

__all__ = ["LexicalWeights", "clean_lexical_weights"]


LexicalWeights = Mapping[int | str, float] | Mapping[int, float] | Mapping[str, float]


def clean_lexical_weights(weights: LexicalWeights, *, top_k: int, min_weight: float) -> SparseVector:
    """Turn a ``{token_id: weight}`` mapping into a cleaned :class:`SparseVector`.

    Args:
        weights: Token id (int, or its decimal string as sent over HTTP) -> weight.
        top_k: Keep at most this many entries, the largest weights first (ties: the smaller id).
        min_weight: Drop weights below this value; weights <= 0 are always dropped
            (BGE-M3 weights come out of a ReLU, a zero weight carries no match).

    Returns:
        The vector with int indices in strictly ascending order and float values.

    Raises:
        EncodingError: A key is not an integer token id or a weight is not a finite number
            (a broken model output or a broken remote payload).
    """
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    merged: dict[int, float] = {}
    for key, raw in weights.items():
        try:
            index = int(key)
            value = float(raw)
        except (TypeError, ValueError) as exc:
            raise EncodingError(f"lexical weights must map token ids to numbers, got {key!r}: {raw!r}") from exc
        if index < 0 or not math.isfinite(value):
            raise EncodingError(f"invalid lexical weight {key!r}: {raw!r}")
        if value <= 0.0 or value < min_weight:
            continue
        if value > merged.get(index, 0.0):  # "7" and 7 name the same token: keep the larger weight
            merged[index] = value
    kept = sorted(merged.items(), key=lambda item: (-item[1], item[0]))[:top_k]
    kept.sort()
    return SparseVector(tuple(i for i, _ in kept), tuple(v for _, v in kept))
