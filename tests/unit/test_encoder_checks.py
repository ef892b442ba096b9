"""The encoder output checks (pure): what a dense or sparse batch must look like to leave an encoder."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from ragindex.encoders.checked import CheckedDenseEncoder, CheckedSparseEncoder, check_dense, check_sparse
from ragindex.encoders.dense.routed import RoutedDenseEncoder
from ragindex.errors import EncodingError
from ragindex.language import Script
from ragindex.types import SparseVector


def units(n: int, dim: int = 4) -> np.ndarray:
    out = np.arange(1, n * dim + 1, dtype=np.float32).reshape(n, dim)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_good_dense_vectors_pass_as_float32() -> None:
    out = check_dense(units(3).astype(np.float64), count=3, dimension=4, encoder="e", side="documents")
    assert out.dtype == np.float32 and out.shape == (3, 4)
    assert check_dense(np.zeros((0, 4)), count=0, dimension=4, encoder="e", side="queries").shape == (0, 4)


@pytest.mark.parametrize(
    ("vectors", "count", "message"),
    [
        (units(2), 3, "shape (2, 4) for 3 texts"),
        (units(3)[0], 3, "shape (4,) for 3 texts"),
        (units(3, dim=5), 3, "5-dimensional vectors but its dimension is 4"),
        (np.where(np.eye(3, 4) > 0, np.nan, units(3)), 3, "NaN or infinite values in 3 of 3"),
        (np.vstack([units(2), [[math.inf, 0, 0, 0]]]), 3, "NaN or infinite values in 1 of 3"),
        (np.vstack([units(2), np.zeros((1, 4))]), 3, "1 of 3 vectors that are not unit length"),
        (units(3) * 2, 3, "not unit length (e.g. norm 2"),
        ([[1.0, 0.0], [1.0]], 2, "not a float matrix"),
    ],
)
def test_bad_dense_vectors_are_encoding_errors(vectors: object, count: int, message: str) -> None:
    with pytest.raises(EncodingError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        check_dense(vectors, count=count, dimension=4, encoder="st:m", side="documents")
    assert "dense encoder 'st:m' (documents)" in info.value.message


def test_good_sparse_vectors_pass() -> None:
    vectors = [SparseVector((0, 5, 2**32 - 1), (0.5, 1.0, -2.0)), SparseVector((), ())]
    assert check_sparse(vectors, count=2, encoder="bm25", side="queries") == vectors


@pytest.mark.parametrize(
    ("vectors", "message"),
    [
        ([SparseVector((1,), (1.0,))], "returned 1 vectors for 2 texts"),
        ([SparseVector((1,), (1.0,)), {"1": 1.0}], "a dict, not a SparseVector"),
        ([SparseVector((1,), (1.0,)), SparseVector((3, 3), (1.0, 1.0))], "not strictly increasing"),
        ([SparseVector((1,), (1.0,)), SparseVector((4, 2), (1.0, 1.0))], "not strictly increasing"),
        ([SparseVector((1,), (1.0,)), SparseVector((-1,), (1.0,))], r"outside \[0, 2\*\*32\)"),
        ([SparseVector((1,), (1.0,)), SparseVector((2**32,), (1.0,))], r"outside \[0, 2\*\*32\)"),
        ([SparseVector((1,), (1.0,)), SparseVector((1.5,), (1.0,))], "are not integers"),  # type: ignore[arg-type]
        ([SparseVector((1,), (1.0,)), SparseVector((1,), (math.nan,))], "NaN or infinite values"),
        ([SparseVector((1,), (1.0,)), SparseVector((1,), ("x",))], "not numbers"),  # type: ignore[arg-type]
    ],
)
def test_bad_sparse_vectors_are_encoding_errors(vectors: list[object], message: str) -> None:
    with pytest.raises(EncodingError, match=message):
        check_sparse(vectors, count=2, encoder="bm25", side="documents")


class Fixed:
    """A dense encoder returning given vectors (the checked wrapper is what is tested, not this)."""

    fingerprint = "st:fixed"
    cache_key = "st:fixed|float32"
    dimension = 4
    languages = frozenset({Script.LATIN})

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors
        self.closed = False

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.vectors[: len(texts)]

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.vectors[: len(texts)]

    def close(self) -> None:
        self.closed = True


def test_the_checked_dense_encoder_checks_both_sides_and_delegates_the_rest() -> None:
    good, bad = Fixed(units(2)), Fixed(np.full((2, 4), np.nan, dtype=np.float32))
    checked = CheckedDenseEncoder(good)
    assert (checked.fingerprint, checked.cache_key, checked.dimension) == ("st:fixed", "st:fixed|float32", 4)
    assert checked.encode_queries(["a", "b"]).shape == (2, 4)
    checked.close()
    assert good.closed
    assert checked.for_documents(10) is checked  # no router inside: itself
    for encode in (CheckedDenseEncoder(bad).encode_documents, CheckedDenseEncoder(bad).encode_queries):
        with pytest.raises(EncodingError, match="NaN"):
            encode(["a", "b"])


def test_a_router_picks_checked_encoders() -> None:
    light = CheckedDenseEncoder(Fixed(np.full((2, 4), np.nan, dtype=np.float32)))
    router = RoutedDenseEncoder(CheckedDenseEncoder(Fixed(units(2))), lambda: light, max_batch=2)
    assert router.for_documents(2) is light
    outer = CheckedDenseEncoder(RoutedDenseEncoder(Fixed(units(2)), lambda: Fixed(units(2)), max_batch=2))
    picked = outer.for_documents(2)
    assert isinstance(picked, CheckedDenseEncoder) and isinstance(picked.inner, Fixed)


def test_the_checked_sparse_encoder_checks_both_sides() -> None:
    class Sparse:
        name = "bm25:test"

        def encode_documents(self, texts: Sequence[str]) -> list[SparseVector]:
            return [SparseVector((2, 1), (1.0, 1.0)) for _ in texts]

        def encode_queries(self, texts: Sequence[str]) -> list[SparseVector]:
            return []

    checked = CheckedSparseEncoder(Sparse())
    assert checked.name == "bm25:test"
    with pytest.raises(EncodingError, match="'bm25:test' \\(documents\\).*strictly increasing"):
        checked.encode_documents(["a"])
    with pytest.raises(EncodingError, match="returned 0 vectors for 1 texts"):
        checked.encode_queries(["a"])
