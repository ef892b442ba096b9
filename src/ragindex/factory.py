"""Settings -> concrete backends. The only module that imports concrete store / index / encoder classes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragindex.config.settings import Settings
from ragindex.errors import ConfigurationError

if TYPE_CHECKING:
    from ragindex.chunking.protocol import Chunker
    from ragindex.encoders.protocol import DenseEncoder, SparseEncoder
    from ragindex.index.protocol import VectorIndex
    from ragindex.loaders.registry import LoaderRegistry
    from ragindex.retrieval.rerank import Reranker
    from ragindex.store.sql import SqlTruthStore


def build_store(settings: Settings) -> SqlTruthStore:
    """The SQL truth store at ``RAGINDEX_DATABASE_URL`` (SQLite under the data dir by default)."""
    from ragindex.store.sql import SqlTruthStore

    return SqlTruthStore(settings.resolved_database_url)


def build_index(settings: Settings) -> VectorIndex:
    """Qdrant Edge under the data dir, or a Qdrant server / local path through qdrant-client."""
    if settings.index_backend == "edge":
        from ragindex.index.qdrant_edge import QdrantEdgeIndex

        return QdrantEdgeIndex(settings.index_dir)
    if settings.index_backend == "qdrant":
        try:
            from ragindex.index.qdrant_server import QdrantServerIndex
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise ConfigurationError("the Qdrant server backend needs: pip install 'ragindex[server]'") from exc
        api_key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        return QdrantServerIndex(
            url=settings.qdrant_url, api_key=api_key, path=settings.qdrant_path, timeout=settings.qdrant_timeout
        )
    raise ConfigurationError(f"unknown index backend {settings.index_backend!r}; valid: edge, qdrant")


def build_dense_encoder(settings: Settings, model: str | None = None) -> DenseEncoder:
    """The dense encoder (the model itself loads on first use).

    ``dense_provider=openai`` gives the OpenAI-compatible HTTP client for ``model`` (default
    ``RAGINDEX_DENSE_MODEL``) at ``RAGINDEX_DENSE_URL``; ``local`` the sentence-transformers model.
    """
    if settings.dense_provider == "openai":
        from ragindex.encoders.dense.openai_http import OpenAIHttpDenseEncoder

        if not settings.dense_url:
            raise ConfigurationError("dense_provider=openai needs RAGINDEX_DENSE_URL (the embeddings API base URL)")
        return OpenAIHttpDenseEncoder(
            settings.dense_url,
            model or settings.dense_model,
            api_key=settings.dense_api_key.get_secret_value() if settings.dense_api_key else None,
            dimensions=settings.dense_dimensions,
            send_dimensions=settings.dense_send_dimensions,
            batch_size=settings.embed_batch_size,
            timeout=settings.dense_timeout,
            max_retries=settings.dense_max_retries,
        )
    from ragindex.encoders.dense.sentence_transformers import SentenceTransformerDenseEncoder

    return SentenceTransformerDenseEncoder(
        model or settings.dense_model,
        device=settings.dense_device,
        precision=settings.dense_precision,
        batch_size=settings.embed_batch_size,
        offline=settings.hf_offline,
        threads=settings.torch_threads,
    )


def build_sparse_encoders(settings: Settings) -> dict[str, SparseEncoder]:
    """Sparse sources by vector name: ``bm25`` when enabled."""
    encoders: dict[str, SparseEncoder] = {}
    if settings.bm25_enabled:
        from ragindex.encoders.sparse.bm25 import Bm25SparseEncoder

        encoders["bm25"] = Bm25SparseEncoder(avg_len=settings.bm25_avg_len, k1=settings.bm25_k1, b=settings.bm25_b)
    provider = build_sparse_provider(settings)
    if provider is not None:
        encoders["sparse"] = provider
    return encoders


def build_sparse_provider(settings: Settings) -> SparseEncoder | None:
    """The learned sparse encoder of ``RAGINDEX_SPARSE_PROVIDER`` (None for ``none``); no model loads here."""
    if settings.sparse_provider == "none":
        return None
    if settings.sparse_provider == "bge_m3":
        from ragindex.encoders.sparse.bge_m3 import BgeM3SparseEncoder

        return BgeM3SparseEncoder(
            settings.sparse_model,
            device=settings.sparse_device,
            batch_size=settings.sparse_batch_size,
            max_length=settings.sparse_max_length,
            top_k=settings.sparse_top_k,
            min_weight=settings.sparse_min_weight,
            offline=settings.hf_offline,
            threads=settings.torch_threads,
        )
    return _build_http_sparse_provider(settings)


def _build_http_sparse_provider(settings: Settings) -> SparseEncoder:
    """``bge_m3_http`` / ``remote_bge_m3``: the HTTP encoders of :mod:`ragindex.encoders.sparse.bge_m3_http`."""
    from ragindex.encoders.sparse.bge_m3_http import BgeM3HttpSparseEncoder, RemoteBgeM3Encoder

    api_key = settings.sparse_http_api_key.get_secret_value() if settings.sparse_http_api_key else None
    if settings.sparse_provider == "bge_m3_http" and settings.sparse_http_endpoint:
        return BgeM3HttpSparseEncoder(
            settings.sparse_http_endpoint,
            top_k=settings.sparse_top_k,
            min_weight=settings.sparse_min_weight,
            max_length=settings.sparse_max_length,
            batch_size=settings.sparse_http_batch_size,
            timeout=settings.sparse_http_timeout,
            api_key=api_key,
        )
    if settings.sparse_provider == "remote_bge_m3" and settings.bge_m3_service_url:
        return RemoteBgeM3Encoder(
            settings.bge_m3_service_url,
            top_k=settings.sparse_top_k,
            min_weight=settings.sparse_min_weight,
            max_length=settings.sparse_max_length,
            timeout=settings.bge_m3_timeout,
            max_retries=settings.bge_m3_max_retries,
            api_key=api_key,
        )
    raise ConfigurationError(
        f"sparse provider {settings.sparse_provider!r} is unknown or has no URL; valid: none, bge_m3, "
        "bge_m3_http (RAGINDEX_SPARSE_HTTP_ENDPOINT), remote_bge_m3 (RAGINDEX_BGE_M3_SERVICE_URL)"
    )


def build_chunker(settings: Settings) -> Chunker:
    """The configured chunker (the structure chunker loads the dense model's tokenizer)."""
    from ragindex.chunking.factory import chunker_from_settings

    return chunker_from_settings(settings)


def build_loaders(settings: Settings) -> LoaderRegistry:
    """The loader registry with the records-loader settings."""
    from ragindex.loaders.registry import build_registry

    return build_registry(settings)


def build_reranker(settings: Settings) -> Reranker:
    """The cross-encoder reranker (the model itself loads on the first rerank)."""
    from ragindex.retrieval.rerank import CrossEncoderReranker

    return CrossEncoderReranker(
        settings.rerank_model,
        device=settings.rerank_device,
        batch_size=settings.rerank_batch_size,
        max_length=settings.rerank_max_length,
        offline=settings.hf_offline,
    )
