"""Encoder seams: dense (document/query vectors) and sparse (bm25, BGE-M3 lexical weights)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ragindex.language import Script
from ragindex.types import SparseVector


class DenseEncoder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    ``fingerprint`` names the vector space (model identity and dimension policy): an index built
    with one fingerprint must never be queried with another. ``cache_key`` additionally names
    everything that changes the exact numbers (e.g. precision), so cached vectors of different
    precision are never mixed. Neither property may load the model.
    Failures raise :class:`ragindex.errors.EncodingError`.
    """

    @property
    def fingerprint(self) -> str:
        """Identity of the vector space (model name or path; no model load)."""
        ...

    @property
    def cache_key(self) -> str:
        """Key of the embedding cache: fingerprint plus precision (no model load)."""
        ...

    @property
    def dimension(self) -> int:
        """Vector dimension (may load the model)."""
        ...

    @property
    def languages(self) -> frozenset[Script]:
        """Scripts the model embeds meaningfully (no model load).

        The hybrid search skips the dense source for a query whose dominant script is not in this set. It is
        deliberately not part of ``fingerprint``: the vector space does not change with it, and an index must
        not be invalidated by a better guess. The default, :func:`ragindex.language.model_scripts`, guesses from
        the model's name; ``RAGINDEX_DENSE_LANGUAGES`` overrides it.
        """
        ...

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of document chunks, shape (n, dimension), float32, unit length."""
        ...

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of queries, shape (n, dimension), float32, unit length."""
        ...


@runtime_checkable
class DocumentRouter(Protocol):
    """A dense encoder that picks the runtime by the size of an ingest (torch for bulk, ONNX for a few chunks)."""

    def for_documents(self, count: int) -> DenseEncoder:
        """The encoder (with its own ``cache_key``) for an ingest that embeds ``count`` chunks."""
        ...

    def bulk(self, count: int) -> bool:
        """Whether :meth:`for_documents` gives ``count`` chunks to the bulk runtime (cheap: loads nothing)."""
        ...


class SparseEncoder(Protocol):
    """Turns texts into sparse vectors (BM25 term weights or learned lexical weights)."""

    @property
    def name(self) -> str:
        """Identity of the sparse model and its configuration (recorded in the index metadata)."""
        ...

    def encode_documents(self, texts: Sequence[str]) -> list[SparseVector]:
        """Sparse vectors of document chunks."""
        ...

    def encode_queries(self, texts: Sequence[str]) -> list[SparseVector]:
        """Sparse vectors of queries."""
        ...
