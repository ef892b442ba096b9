"""Contract suites: pytest classes every backend of a seam must pass (subclass one, override its fixture).

Importing this package imports pytest; it is meant for test code only.
"""

from __future__ import annotations

from ragindex.testing.contracts.vector_index import (
    SCORE_TOLERANCE,
    VectorIndexContract,
    assert_same_ranking,
    ranking_agreement,
)

__all__ = ["SCORE_TOLERANCE", "VectorIndexContract", "assert_same_ranking", "ranking_agreement"]
