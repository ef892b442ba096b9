"""BGE-M3 lexical weights from HTTP services: the ``bge_m3_http`` and ``remote_bge_m3`` sparse providers.

Both speak the ``POST {url}/encode`` contract of seed section 6.6 (served by ``ragindex encoder-server``
too)::

    request:  {"texts": [...], "return_dense": bool, "return_sparse": true, "return_colbert": false,
               "max_length"?: int, "batch_size"?: int}
    response: {"dense"?: [[float, ...], ...], "sparse": [{"<token_id>": weight, ...}, ...]}  # input order

* ``bge_m3_http`` (:class:`BgeM3HttpSparseEncoder`): the early bge-m3-server, sparse only, one
  attempt per request by default.
* ``remote_bge_m3`` (:class:`RemoteBgeM3Encoder`): a bge-m3-service that returns dense and sparse
  from one inference; requests are retried (4xx permanent; 5xx, network errors and timeouts retried
  with a linear backoff).

Every sparse mapping goes through :func:`~ragindex.encoders.sparse.cleaning.clean_lexical_weights` with
the same ``top_k`` / ``min_weight`` as the local ``bge_m3`` provider, so switching provider changes
how the weights are computed, never what is written to the index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragindex.encoders._http import HttpEncoder, RetryingJsonClient, float_matrix
from ragindex.encoders.sparse.cleaning import clean_lexical_weights
from ragindex.errors import ConfigurationError, EncodingError
from ragindex.types import SparseVector

__all__ = ["BgeM3HttpSparseEncoder", "RemoteBgeM3Encoder"]

DEFAULT_MODEL = "BAAI/bge-m3"


class _EncodeService(HttpEncoder):
    """``POST {url}/encode`` in batches, with the answers checked and the sparse weights cleaned.

    Args:
        url: Service root; requests go to ``{url}/encode``.
        top_k: Keep at most this many weights per text (the largest).
        min_weight: Drop weights below this value.
        max_length: Sent as ``max_length`` (tokens read per text) when given.
        batch_size: Texts per request.
        timeout: Seconds per request.
        max_retries: Retries of 5xx / 408 / 429 / network / timeout failures, linear backoff; a 4xx
            is permanent. Default: the provider's :attr:`default_max_retries`.
        backoff: Linear backoff step in seconds (the n-th retry waits ``n * backoff``).
        api_key: Bearer token (e.g. ``ragindex encoder-server --api-key``).
        model: The served model's identity, part of :attr:`name`.
    """

    provider = ""
    default_max_retries = 0
    sends_batch_size = False
    """Whether requests carry ``batch_size`` (the texts per request)."""

    def __init__(
        self,
        url: str,
        *,
        top_k: int = 256,
        min_weight: float = 0.0,
        max_length: int | None = None,
        batch_size: int = 32,
        timeout: float = 30.0,
        max_retries: int | None = None,
        backoff: float = 0.5,
        api_key: str | None = None,
        model: str = DEFAULT_MODEL,
    ) -> None:
        if top_k < 1 or batch_size < 1:
            raise ConfigurationError(f"top_k and batch_size must be >= 1, got {top_k}, {batch_size}")
        self.url = url.rstrip("/")
        self.top_k = top_k
        self.min_weight = float(min_weight)
        self.max_length = max_length
        self.batch_size = batch_size
        self.model = model
        self._http = RetryingJsonClient(
            self.url,
            timeout=timeout,
            max_retries=self.default_max_retries if max_retries is None else max_retries,
            backoff=backoff,
            api_key=api_key,
            service=f"{self.provider} service",
        )

    @property
    def name(self) -> str:
        """``<provider>:<model>|top_k=<k>|min_weight=<w>`` (recorded in the index metadata)."""
        return f"{self.provider}:{self.model}|top_k={self.top_k}|min_weight={self.min_weight:g}"

    def encode_documents(self, texts: Sequence[str]) -> list[SparseVector]:
        """Cleaned lexical weights of document chunks."""
        return self._run(texts, dense=False)[0]

    def encode_queries(self, texts: Sequence[str]) -> list[SparseVector]:
        """Cleaned lexical weights of queries (BGE-M3's sparse side is symmetric)."""
        return self._run(texts, dense=False)[0]

    def _run(self, texts: Sequence[str], *, dense: bool) -> tuple[list[SparseVector], list[np.ndarray]]:
        sparse: list[SparseVector] = []
        vectors: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            payload: dict[str, Any] = {
                "texts": batch,
                "return_dense": dense,
                "return_sparse": True,
                "return_colbert": False,
            }
            if self.max_length is not None:
                payload["max_length"] = self.max_length
            if self.sends_batch_size:
                payload["batch_size"] = self.batch_size
            body = self._http.post_json("/encode", payload)
            if not isinstance(body, dict):
                raise EncodingError(f"{self.provider} service answered {type(body).__name__}, not a JSON object")
            sparse.extend(self._clean(body.get("sparse"), len(batch)))
            if dense:
                vectors.append(_dense_rows(body.get("dense"), len(batch), self.provider))
        return sparse, vectors

    def _clean(self, items: Any, n: int) -> list[SparseVector]:
        if not isinstance(items, list) or len(items) != n:
            got = len(items) if isinstance(items, list) else "no"
            raise EncodingError(f"{self.provider} service answered {got} sparse vectors for {n} texts")
        out = []
        for item in items:
            if not isinstance(item, dict):
                raise EncodingError(f"{self.provider} service answered a sparse vector that is not an object")
            out.append(clean_lexical_weights(item, top_k=self.top_k, min_weight=self.min_weight))
        return out


def _dense_rows(rows: Any, n: int, provider: str) -> np.ndarray:
    if not isinstance(rows, list) or len(rows) != n:
        got = len(rows) if isinstance(rows, list) else "no"
        raise EncodingError(f"{provider} service answered {got} dense vectors for {n} texts")
    return float_matrix(rows, service=f"{provider} service", noun="dense vectors")


class BgeM3HttpSparseEncoder(_EncodeService):
    """The ``bge_m3_http`` provider: sparse only, from an early bge-m3-server.

    Takes the arguments of the base service (``url``: the server root, ``RAGINDEX_SPARSE_HTTP_ENDPOINT``).
    Requests carry ``batch_size``. One attempt per request by default (``max_retries=0``: the early
    server's client made one attempt; failed chunks are retried by the pipeline and ``repair``).
    """

    provider = "bge_m3_http"
    default_max_retries = 0
    sends_batch_size = True


class RemoteBgeM3Encoder(_EncodeService):
    """The ``remote_bge_m3`` provider: a bge-m3-service returning dense and sparse from one inference.

    Takes the arguments of the base service (``url``: ``RAGINDEX_BGE_M3_SERVICE_URL``); requests are
    retried 3 times by default. :meth:`encode_documents` / :meth:`encode_queries` ask for sparse only
    (``return_dense: false``, less to transfer); :meth:`encode_with_dense` returns both when the dense
    side wants to reuse the same inference.
    """

    provider = "remote_bge_m3"
    default_max_retries = 3
    sends_batch_size = False

    def encode_with_dense(self, texts: Sequence[str]) -> tuple[list[SparseVector], np.ndarray]:
        """Cleaned sparse vectors and L2-normalised float32 dense vectors (n, dim) from one inference."""
        sparse, parts = self._run(texts, dense=True)
        if not parts:
            return sparse, np.zeros((0, 0), dtype=np.float32)
        dims = {p.shape[1] for p in parts}
        if len(dims) > 1:
            raise EncodingError(f"remote_bge_m3 service answered dense vectors of several sizes: {sorted(dims)}")
        dense = np.concatenate(parts)
        norms = np.linalg.norm(dense, axis=1, keepdims=True)
        np.divide(dense, norms, out=dense, where=norms > 0)
        return sparse, dense
