"""ragindex: documents to a hybrid search index that stays correct as the documents change.

The public API is re-exported lazily so that ``import ragindex`` stays cheap (no torch,
no Qdrant, no SQLAlchemy until something is used).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Engine": "ragindex.engine",
    "AsyncEngine": "ragindex.aio",
    "ThreadedEngine": "ragindex.threads",
    "Settings": "ragindex.config.settings",
    "Document": "ragindex.types",
    "ChunkDraft": "ragindex.types",
    "Hit": "ragindex.types",
    "SearchResult": "ragindex.types",
    "SourceScore": "ragindex.types",
    "SearchMode": "ragindex.types",
    "Expand": "ragindex.types",
    "GroupBy": "ragindex.types",
    "MergedHit": "ragindex.types",
    "Script": "ragindex.language",
    "Record": "ragindex.records",
    "RecordChunk": "ragindex.records",
    "RecordError": "ragindex.records",
    "FilterError": "ragindex.filters",
    "MetadataError": "ragindex.metadata",
    "ParsedDocument": "ragindex.store.records",
    "StatusReport": "ragindex.results",
    "SetStatus": "ragindex.results",
    "CollectionStatus": "ragindex.results",
    "ChunkUpdate": "ragindex.results",
    "DeleteResult": "ragindex.results",
    "ReindexResult": "ragindex.results",
    "StaleRelease": "ragindex.results",
    "RagindexError": "ragindex.errors",
    "InputError": "ragindex.errors",
    "ValidationError": "ragindex.errors",
    "ConfigurationError": "ragindex.errors",
    "BackendError": "ragindex.errors",
    "EncodingError": "ragindex.errors",
    "IntegrityError": "ragindex.errors",
    "NotFoundError": "ragindex.errors",
    "AuthenticationError": "ragindex.errors",
    "PermissionDeniedError": "ragindex.errors",
    "RetrievalError": "ragindex.errors",
    "RetrievalConfigurationError": "ragindex.errors",
    "RetrievalBackendError": "ragindex.errors",
    "RetrievalEncodingError": "ragindex.errors",
}

__all__ = [
    "__version__",
    "Engine",
    "AsyncEngine",
    "ThreadedEngine",
    "Settings",
    "Document",
    "ChunkDraft",
    "Hit",
    "SearchResult",
    "SourceScore",
    "SearchMode",
    "Expand",
    "GroupBy",
    "MergedHit",
    "Script",
    "Record",
    "RecordChunk",
    "RecordError",
    "FilterError",
    "MetadataError",
    "ParsedDocument",
    "StatusReport",
    "SetStatus",
    "CollectionStatus",
    "ChunkUpdate",
    "DeleteResult",
    "ReindexResult",
    "StaleRelease",
    "RagindexError",
    "InputError",
    "ValidationError",
    "ConfigurationError",
    "BackendError",
    "EncodingError",
    "IntegrityError",
    "NotFoundError",
    "AuthenticationError",
    "PermissionDeniedError",
    "RetrievalError",
    "RetrievalConfigurationError",
    "RetrievalBackendError",
    "RetrievalEncodingError",
]

if TYPE_CHECKING:
    from ragindex.aio import AsyncEngine
    from ragindex.config.settings import Settings
    from ragindex.engine import Engine
    from ragindex.errors import (
        AuthenticationError,
        BackendError,
        ConfigurationError,
        EncodingError,
        InputError,
        IntegrityError,
        NotFoundError,
        PermissionDeniedError,
        RagindexError,
        RetrievalBackendError,
        RetrievalConfigurationError,
        RetrievalEncodingError,
        RetrievalError,
        ValidationError,
    )
    from ragindex.filters import FilterError
    from ragindex.language import Script
    from ragindex.metadata import MetadataError
    from ragindex.records import Record, RecordChunk, RecordError
    from ragindex.results import (
        ChunkUpdate,
        CollectionStatus,
        DeleteResult,
        ReindexResult,
        SetStatus,
        StaleRelease,
        StatusReport,
    )
    from ragindex.store.records import ParsedDocument
    from ragindex.threads import ThreadedEngine
    from ragindex.types import (
        ChunkDraft,
        Document,
        Expand,
        GroupBy,
        Hit,
        MergedHit,
        SearchMode,
        SearchResult,
        SourceScore,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragindex' has no attribute {name!r}")
    return getattr(import_module(module), name)
