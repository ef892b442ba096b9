"""Settings -> concrete backends. The only module that imports concrete store / index / encoder classes."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, TypedDict

from ragindex.config.settings import Settings
from ragindex.errors import ConfigurationError
from ragindex.types import VectorKind

if TYPE_CHECKING:
    from ragindex.chunking.protocol import Chunker
    from ragindex.config.sections import RuntimeSettings, SparseSettings
    from ragindex.encoders.dense.sentence_transformers import SentenceTransformerDenseEncoder
    from ragindex.encoders.protocol import DenseEncoder, SparseEncoder
    from ragindex.index.ownership import IndexOwnership
    from ragindex.index.protocol import VectorIndex
    from ragindex.loaders.registry import LoaderRegistry
    from ragindex.pipeline.lease import ProcessOwner
    from ragindex.retrieval.rerank import Reranker
    from ragindex.store.protocol import TruthStore


class _SparseCleaning(TypedDict):
    """How every BGE-M3 sparse encoder (local, HTTP, remote) cuts and cleans its output: ``RAGINDEX_SPARSE_*``."""

    top_k: int
    min_weight: float
    max_length: int


def _sparse_cleaning(sparse: SparseSettings) -> _SparseCleaning:
    return _SparseCleaning(
        top_k=sparse.sparse_top_k, min_weight=sparse.sparse_min_weight, max_length=sparse.sparse_max_length
    )


class _HttpSparseKeywords(_SparseCleaning):
    """What the HTTP and the remote BGE-M3 encoders both take: the cleaning and the bearer token."""

    api_key: str | None


class _LocalRuntime(TypedDict):
    """How a local (torch) model loads and runs: ``RAGINDEX_HF_OFFLINE``, ``RAGINDEX_TORCH_THREADS``."""

    offline: bool
    threads: int | None


def _local_runtime(runtime: RuntimeSettings) -> _LocalRuntime:
    return _LocalRuntime(offline=runtime.hf_offline, threads=runtime.torch_threads)


def build_store(settings: Settings) -> TruthStore:
    """The SQL truth store at ``RAGINDEX_DATABASE_URL`` (SQLite under the data dir by default)."""
    from ragindex.store.sql import SqlTruthStore

    return SqlTruthStore(settings.resolved_database_url)


def build_search_store(settings: Settings) -> TruthStore:
    """The truth store of a process that only searches (the one-shot CLI search).

    On a SQLite store that exists and is up to date: the standard library's ``sqlite3`` for the calls a search makes
    (no SQLAlchemy import: ~0.2 s of a one-shot search), the full store for any other call, opened on first use
    (:class:`~ragindex.store.sqlite_search.SqliteSearchStore`). Otherwise the full store.
    """
    url = settings.resolved_database_url
    if url.startswith("sqlite:"):
        from ragindex.store.sqlite_search import SqliteSearchStore

        store = SqliteSearchStore.open(url, lambda: build_store(settings))
        if store is not None:
            return store  # the search path's methods are its own, the rest the full store's (its __getattr__)
    return build_store(settings)


def build_index_ownership(settings: Settings) -> IndexOwnership | None:
    """The one-owner-process lock of an embedded index (Edge, or a qdrant-client local path); None for a server."""
    from ragindex.index.ownership import IndexOwnership

    index = settings.index
    if index.index_backend == "edge":
        return IndexOwnership(settings.store.index_dir, wait_s=index.index_lock_wait)
    in_memory = str(index.qdrant_path) == ":memory:"  # qdrant-client's in-memory local mode: one process by nature
    if index.index_backend == "qdrant" and index.qdrant_url is None and index.qdrant_path is not None and not in_memory:
        return IndexOwnership(index.qdrant_path, wait_s=index.index_lock_wait)
    return None


def build_process_owner(settings: Settings, store: TruthStore) -> ProcessOwner:
    """The index lock (embedded) and the claim lease of this process's engine.

    Holding the lock proves every other owner gone only where nothing reaches the store without it: SQLite.
    """
    from ragindex.pipeline.lease import ProcessOwner

    return ProcessOwner(
        store,
        build_index_ownership(settings),
        lease_seconds=settings.claim_lease_seconds,
        heartbeat_seconds=settings.claim_heartbeat_seconds,
        private_store=store.dialect == "sqlite",
        max_attempts=settings.max_attempts,
    )


def build_index(settings: Settings, ownership: IndexOwnership | None = None) -> VectorIndex:
    """Qdrant Edge under the data dir, or a Qdrant server / local path through qdrant-client.

    ``ownership``: the Edge directory's lock when the caller holds it already (see :func:`build_index_ownership`).
    """
    index = settings.index
    if index.index_backend == "edge":
        from ragindex.index.qdrant_edge import QdrantEdgeIndex

        return QdrantEdgeIndex(settings.store.index_dir, ownership)
    if index.index_backend == "qdrant":
        from ragindex.index.qdrant_server import QdrantServerIndex  # its constructor names the missing extra

        api_key = index.qdrant_api_key.get_secret_value() if index.qdrant_api_key else None
        return QdrantServerIndex(
            url=index.qdrant_url, api_key=api_key, path=index.qdrant_path, timeout=index.qdrant_timeout
        )
    raise ConfigurationError(f"unknown index backend {index.index_backend!r}; valid: edge, qdrant")


def build_dense_encoder(settings: Settings, model: str | None = None) -> DenseEncoder:
    """The dense encoder (the model itself loads on first use).

    ``dense_provider=openai`` gives the OpenAI-compatible HTTP client for ``model`` (default
    ``RAGINDEX_DENSE_MODEL``) at ``RAGINDEX_DENSE_URL``; ``local`` the sentence-transformers model behind a
    :class:`~ragindex.encoders.dense.routed.RoutedDenseEncoder`: the query-vector LRU, and the model's ONNX
    export for queries and small ingests unless ``RAGINDEX_LIGHT_ENCODER=off``. Every runtime (HTTP, torch,
    ONNX) is wrapped in a :class:`~ragindex.encoders.checked.CheckedDenseEncoder`, below both caches. The
    prompts (``RAGINDEX_DENSE_QUERY_PROMPT`` / ``_DOCUMENT_PROMPT``) apply to ``model``, whichever it is.
    """
    from ragindex.encoders.checked import CheckedDenseEncoder

    dense = settings.dense
    if dense.dense_provider == "openai":
        from ragindex.encoders.dense.openai_http import OpenAIHttpDenseEncoder

        if not dense.dense_url:
            raise ConfigurationError("dense_provider=openai needs RAGINDEX_DENSE_URL (the embeddings API base URL)")
        remote = OpenAIHttpDenseEncoder(
            dense.dense_url,
            model or dense.dense_model,
            api_key=dense.dense_api_key.get_secret_value() if dense.dense_api_key else None,
            dimensions=dense.dense_dimensions,
            send_dimensions=dense.dense_send_dimensions,
            batch_size=dense.embed_batch_size,
            timeout=dense.dense_timeout,
            max_retries=dense.dense_max_retries,
            languages=dense.dense_scripts,
            query_prompt=dense.dense_query_prompt,
            document_prompt=dense.dense_document_prompt,
        )
        return CheckedDenseEncoder(remote)
    from ragindex.encoders.dense.routed import RoutedDenseEncoder
    from ragindex.encoders.dense.sentence_transformers import SentenceTransformerDenseEncoder

    int8 = dense.dense_precision == "int8"  # every text through the ONNX export's int8 copy; torch only as fallback
    heavy = SentenceTransformerDenseEncoder(
        model or dense.dense_model,
        device=dense.dense_device,
        precision="auto" if int8 else dense.dense_precision,
        batch_size=dense.dense_batch_size,
        **_local_runtime(settings.runtime),
        languages=dense.dense_scripts,
        query_prompt=dense.dense_query_prompt,
        document_prompt=dense.dense_document_prompt,
    )
    light = None
    if dense.light_encoder == "auto" and dense.dense_device == "cpu":  # built on first use
        light = functools.partial(build_light_dense_encoder, settings, heavy)
    return RoutedDenseEncoder(
        CheckedDenseEncoder(heavy),
        light,
        max_batch=dense.light_encoder_max_batch,
        query_cache=dense.query_cache_size,
        all_documents=int8,
    )


def build_light_dense_encoder(settings: Settings, heavy: SentenceTransformerDenseEncoder) -> DenseEncoder | None:
    """The ONNX Runtime encoder of ``heavy``'s model and prompts (exported on first use), checked; or None.

    Raises:
        ConfigurationError: The export or the load failed (the caller falls back to torch with a warning).
    """
    from ragindex.chunking.tokens import resolve_model_dir
    from ragindex.encoders.checked import CheckedDenseEncoder
    from ragindex.encoders.dense.onnx import prepare_onnx_encoder

    light = prepare_onnx_encoder(
        resolve_model_dir(heavy.source),
        fingerprint=heavy.fingerprint,
        languages=heavy.languages,
        prompts=heavy.prompts,
        model_fingerprint=heavy.model_fingerprint,
        cache_dir=settings.dense.onnx_cache_dir,
        batch_size=settings.dense.embed_batch_size,
        threads=settings.runtime.torch_threads,
        query_precision=settings.dense.query_precision,
        document_precision="int8" if settings.dense.dense_precision == "int8" else "float32",
    )
    return CheckedDenseEncoder(light) if light is not None else None


def build_sparse_encoders(settings: Settings) -> dict[str, SparseEncoder]:
    """Sparse sources by vector name: ``bm25`` when enabled, ``sparse`` with a provider; each output checked."""
    from ragindex.encoders.checked import CheckedSparseEncoder

    encoders: dict[str, SparseEncoder] = {}
    bm25 = settings.bm25
    if bm25.bm25_enabled:
        from ragindex.encoders.sparse.bm25 import Bm25SparseEncoder

        pinned = {name for name in ("k1", "b", "avg_len") if f"bm25_{name}" in settings.model_fields_set}
        encoders[VectorKind.BM25] = CheckedSparseEncoder(
            Bm25SparseEncoder(avg_len=bm25.bm25_avg_len, k1=bm25.bm25_k1, b=bm25.bm25_b, pinned=pinned)
        )
    provider = build_sparse_provider(settings)
    if provider is not None:
        encoders[VectorKind.SPARSE] = CheckedSparseEncoder(provider)
    return encoders


def build_sparse_provider(settings: Settings) -> SparseEncoder | None:
    """The learned sparse encoder of ``RAGINDEX_SPARSE_PROVIDER`` (None for ``none``); no model loads here."""
    sparse = settings.sparse
    if sparse.sparse_provider == "none":
        return None
    if sparse.sparse_provider == "bge_m3":
        from ragindex.encoders.sparse.bge_m3 import BgeM3SparseEncoder

        return BgeM3SparseEncoder(
            sparse.sparse_model,
            device=sparse.sparse_device,
            batch_size=sparse.sparse_batch_size,
            **_sparse_cleaning(sparse),
            **_local_runtime(settings.runtime),
        )
    return _build_http_sparse_provider(sparse)


def _build_http_sparse_provider(sparse: SparseSettings) -> SparseEncoder:
    """``bge_m3_http`` / ``remote_bge_m3``: the HTTP encoders of :mod:`ragindex.encoders.sparse.bge_m3_http`."""
    from ragindex.encoders.sparse.bge_m3_http import BgeM3HttpSparseEncoder, RemoteBgeM3Encoder

    api_key = sparse.sparse_http_api_key.get_secret_value() if sparse.sparse_http_api_key else None
    common = _HttpSparseKeywords(**_sparse_cleaning(sparse), api_key=api_key)
    if sparse.sparse_provider == "bge_m3_http" and sparse.sparse_http_endpoint:
        return BgeM3HttpSparseEncoder(
            sparse.sparse_http_endpoint,
            batch_size=sparse.sparse_http_batch_size,
            timeout=sparse.sparse_http_timeout,
            **common,
        )
    if sparse.sparse_provider == "remote_bge_m3" and sparse.bge_m3_service_url:
        return RemoteBgeM3Encoder(
            sparse.bge_m3_service_url, timeout=sparse.bge_m3_timeout, max_retries=sparse.bge_m3_max_retries, **common
        )
    raise ConfigurationError(
        f"sparse provider {sparse.sparse_provider!r} is unknown or has no URL; valid: none, bge_m3, "
        "bge_m3_http (RAGINDEX_SPARSE_HTTP_ENDPOINT), remote_bge_m3 (RAGINDEX_BGE_M3_SERVICE_URL)"
    )


def build_chunker(settings: Settings) -> Chunker:
    """The configured chunker (the structure chunker and ``chunk_whole_if_fits`` load the dense model's tokenizer)."""
    from ragindex.chunking.factory import chunker_from_settings

    local = settings.dense_provider == "local"
    return chunker_from_settings(settings.chunking, tokenizer_model=settings.dense_model, local_model=local)


def build_loaders(settings: Settings) -> LoaderRegistry:
    """The loader registry with the records-loader settings."""
    from ragindex.loaders.registry import build_registry

    return build_registry(settings.loading)


def build_reranker(settings: Settings) -> Reranker:
    """The cross-encoder reranker (the model itself loads on the first rerank)."""
    from ragindex.retrieval.rerank import CrossEncoderReranker

    rerank = settings.rerank
    return CrossEncoderReranker(
        rerank.rerank_model,
        device=rerank.rerank_device,
        batch_size=rerank.rerank_batch_size,
        max_length=rerank.rerank_max_length,
        offline=settings.runtime.hf_offline,
    )
