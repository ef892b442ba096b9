"""Encoder output checks: no vector leaves an encoder unless it has the right count, shape and finite values.

A model whose weights went NaN, a bf16 overflow, a remote service answering the wrong model or a truncated
list does not fail by itself: it returns numbers, and without a check they would be cached, written to the
index and searched. :func:`ragindex.factory` wraps every encoder that computes vectors (torch, ONNX, the
HTTP clients, BM25, BGE-M3) in :class:`CheckedDenseEncoder` / :class:`CheckedSparseEncoder`, below the query
LRU and the embedding cache, so a bad batch raises :class:`~ragindex.errors.EncodingError` there: the indexer
marks that batch FAILED (nothing reaches the index or the cache) and a search raises
:class:`~ragindex.errors.RetrievalEncodingError`.

Dense: an ``(n, dimension)`` float array for ``n`` texts, the encoder's own dimension, finite, unit length
(the protocol's promise; a zero vector has no direction to compare). Sparse: ``n`` :class:`SparseVector`, each
with integer indices in ``[0, 2**32)`` strictly increasing and finite values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragindex.encoders.protocol import DenseEncoder, DocumentRouter, SparseEncoder
from ragindex.encoders.wrapping import DenseEncoderWrapper
from ragindex.errors import EncodingError
from ragindex.types import SparseVector

UNIT_TOLERANCE = 1e-3
"""Largest accepted ``| ||v|| - 1 |`` of a dense vector (bf16 autocast re-normalised in float32 is ~1e-7)."""

MAX_SPARSE_INDEX = 2**32
"""Sparse indices are unsigned 32-bit in Qdrant."""


def check_dense(vectors: Any, *, count: int, dimension: int, encoder: str, side: str) -> np.ndarray:
    """``vectors`` as float32 if they are ``count`` finite unit vectors of ``dimension``, else EncodingError.

    Args:
        vectors: What the encoder returned.
        count: Texts given to it.
        dimension: Its dimension.
        encoder: Its fingerprint (for the message).
        side: ``documents`` or ``queries`` (for the message).

    Raises:
        EncodingError: Naming the encoder, what was wrong and where to look.
    """
    where = f"dense encoder {encoder!r} ({side})"
    try:
        out = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EncodingError(f"{where} returned something that is not a float matrix: {exc}", encoder=encoder) from exc
    if out.ndim != 2 or out.shape[0] != count:
        raise EncodingError(
            f"{where} returned an array of shape {out.shape} for {count} texts; expected ({count}, {dimension})",
            encoder=encoder,
        )
    if out.shape[1] != dimension:
        raise EncodingError(
            f"{where} returned {out.shape[1]}-dimensional vectors but its dimension is {dimension}: the model "
            "(or the service behind RAGINDEX_DENSE_URL) is not the one configured; check RAGINDEX_DENSE_MODEL and "
            "RAGINDEX_DENSE_DIMENSIONS",
            encoder=encoder,
            expected=dimension,
            got=int(out.shape[1]),
        )
    if count == 0:
        return out
    finite = np.isfinite(out).all(axis=1)
    if not finite.all():
        bad = int(count - finite.sum())
        raise EncodingError(
            f"{where} returned NaN or infinite values in {bad} of {count} vectors: the model's weights or the "
            "service are broken (with RAGINDEX_DENSE_PRECISION=bfloat16, try float32); nothing was indexed",
            encoder=encoder,
            bad=bad,
        )
    norms = np.linalg.norm(out, axis=1)
    off = np.abs(norms - 1.0) > UNIT_TOLERANCE
    if off.any():
        worst = float(norms[off][0])
        raise EncodingError(
            f"{where} returned {int(off.sum())} of {count} vectors that are not unit length (e.g. norm {worst:.4g}; "
            "a zero vector has no direction): the model or the service is broken; nothing was indexed",
            encoder=encoder,
        )
    return out


def check_sparse(vectors: Any, *, count: int, encoder: str, side: str) -> list[SparseVector]:
    """``vectors`` if they are ``count`` well-formed :class:`SparseVector`, else EncodingError.

    Raises:
        EncodingError: Naming the encoder, the first bad vector and what is wrong with it.
    """
    where = f"sparse encoder {encoder!r} ({side})"
    if not isinstance(vectors, Sequence) or len(vectors) != count:
        got = len(vectors) if isinstance(vectors, Sequence) else type(vectors).__name__
        raise EncodingError(f"{where} returned {got} vectors for {count} texts", encoder=encoder)
    for position, vector in enumerate(vectors):
        problem = _sparse_problem(vector)
        if problem:
            raise EncodingError(
                f"{where} returned a malformed vector for text {position}: {problem}; nothing was indexed",
                encoder=encoder,
            )
    return list(vectors)


def _sparse_problem(vector: Any) -> str:
    if not isinstance(vector, SparseVector):
        return f"a {type(vector).__name__}, not a SparseVector"
    indices = np.asarray(vector.indices)
    if indices.size:
        if indices.dtype.kind not in "iu":
            return f"indices of type {indices.dtype} are not integers"
        if indices.min() < 0 or indices.max() >= MAX_SPARSE_INDEX:
            return f"an index outside [0, 2**32) ({int(indices.min())} .. {int(indices.max())})"
        if (np.diff(indices) <= 0).any():
            return "indices are not strictly increasing"
    try:
        values = np.asarray(vector.values, dtype=np.float64)
    except (TypeError, ValueError):
        return "values that are not numbers"
    if not np.isfinite(values).all():
        return "NaN or infinite values"
    return ""


class CheckedDenseEncoder(DenseEncoderWrapper):
    """A :class:`DenseEncoder` whose every output passes :func:`check_dense` (everything else is ``inner``'s).

    A :class:`DocumentRouter` stays one: the encoder it picks for an ingest is checked too.

    Args:
        inner: The encoder that computes the vectors.
    """

    def __repr__(self) -> str:
        return f"CheckedDenseEncoder({self.inner!r})"

    def for_documents(self, count: int) -> DenseEncoder:
        """The inner router's pick for ``count`` chunks, checked; this encoder if ``inner`` is no router."""
        if isinstance(self.inner, DocumentRouter):
            picked = self.inner.for_documents(count)
            return picked if isinstance(picked, CheckedDenseEncoder) else CheckedDenseEncoder(picked)
        return self

    def bulk(self, count: int) -> bool:
        """The inner router's answer; True if ``inner`` is no router (it encodes every ingest)."""
        return self.inner.bulk(count) if isinstance(self.inner, DocumentRouter) else True

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Chunk vectors, checked."""
        vectors = self.inner.encode_documents(texts)
        return check_dense(
            vectors, count=len(texts), dimension=self.inner.dimension, encoder=self.fingerprint, side="documents"
        )

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors, checked."""
        vectors = self.inner.encode_queries(texts)
        return check_dense(
            vectors, count=len(texts), dimension=self.inner.dimension, encoder=self.fingerprint, side="queries"
        )


class CheckedSparseEncoder:
    """A :class:`SparseEncoder` whose every output passes :func:`check_sparse` (everything else is ``inner``'s).

    Args:
        inner: The encoder that computes the vectors.
    """

    def __init__(self, inner: SparseEncoder) -> None:
        self.inner = inner

    def __repr__(self) -> str:
        return f"CheckedSparseEncoder({self.inner!r})"

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def name(self) -> str:
        """See :attr:`SparseEncoder.name`."""
        return self.inner.name

    def encode_documents(self, texts: Sequence[str]) -> list[SparseVector]:
        """Sparse vectors of chunks, checked."""
        return check_sparse(self.inner.encode_documents(texts), count=len(texts), encoder=self.name, side="documents")

    def encode_queries(self, texts: Sequence[str]) -> list[SparseVector]:
        """Sparse vectors of queries, checked."""
        return check_sparse(self.inner.encode_queries(texts), count=len(texts), encoder=self.name, side="queries")
