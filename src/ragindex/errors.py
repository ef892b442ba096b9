"""The one exception hierarchy of ragindex.

Every error ragindex raises across a layer boundary is a :class:`RagindexError`.
Families follow the failure class (bad input, misconfiguration, unreachable
backend, encoder failure, broken invariant, missing object) so that the CLI and
the HTTP service can map them to exit codes and statuses in one place. Foreign
exceptions are translated by the adapter that owns them and kept as
``__cause__``. Messages name the fix.
"""

from __future__ import annotations

from typing import Any


class RagindexError(Exception):
    """Root of every error raised by ragindex.

    Args:
        message: Human-readable description that names the fix.
        **context: Structured context (chunk_id, stage, backend, field, ...).
    """

    exit_code: int = 1
    http_status: int = 500

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        self.context = {k: v for k, v in context.items() if v is not None}

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable description (error class, message, context)."""
        return {
            "error": type(self).__name__,
            "message": self.message,
            **({"context": self.context} if self.context else {}),
        }


class InputError(RagindexError):
    """The caller passed something invalid: a bad argument, a missing path, an unreadable file."""

    exit_code = 2
    http_status = 400


class ValidationError(InputError):
    """A named field failed validation (non-positive user_id, top_k < 1, threshold out of range, ...)."""

    http_status = 422

    def __init__(self, field: str, message: str, **context: Any) -> None:
        super().__init__(f"{field}: {message}", field=field, **context)
        self.field = field


class DocumentTooLargeError(InputError):
    """A file exceeds the configured size limit."""

    http_status = 413


class UnsupportedFormatError(InputError):
    """No loader handles this file type."""

    http_status = 415


class DocumentLoadError(InputError):
    """A loader could not parse a file (corrupt pdf, invalid json, ...)."""


class ConfigurationError(RagindexError):
    """The deployment is misconfigured (missing extra, unknown backend, invalid setting)."""

    exit_code = 3
    http_status = 500


class IndexLockedError(ConfigurationError):
    """The embedded index is owned by another process (one owner per shard directory)."""

    exit_code = 4
    http_status = 503


class BackendError(RagindexError):
    """A store or index backend failed or is unreachable."""

    exit_code = 4
    http_status = 503


class StoreError(BackendError):
    """The SQL truth store failed."""


class IndexBackendError(BackendError):
    """The vector index failed (Qdrant Edge or a Qdrant server)."""


class EncodingError(RagindexError):
    """An encoder (dense, sparse, bm25, reranker) failed to produce vectors."""

    exit_code = 5
    http_status = 502


class IntegrityError(RagindexError):
    """An invariant would break: illegal state transition, fingerprint mismatch, lost claim."""

    exit_code = 6
    http_status = 409


class FingerprintMismatchError(IntegrityError):
    """The index was built with another model than the one configured."""


class IllegalTransitionError(IntegrityError):
    """A chunk state transition that the state machine does not allow."""


class NotFoundError(RagindexError):
    """The requested object (document, chunk, job, collection) does not exist for this tenant."""

    exit_code = 7
    http_status = 404


class RetrievalError(RagindexError):
    """Base of the retrieval-side families (seed section 9.3)."""


class RetrievalConfigurationError(RetrievalError, ConfigurationError):
    """Retrieval is misconfigured (disabled source, missing encoder, wrong model)."""


class RetrievalBackendError(RetrievalError, BackendError):
    """The index could not be queried (unreachable, timed out)."""


class RetrievalEncodingError(RetrievalError, EncodingError):
    """The query could not be encoded."""
