"""The one exception hierarchy of ragindex.

Every error ragindex raises across a layer boundary is a :class:`RagindexError`.
Families follow the failure class (bad input, misconfiguration, unreachable
backend, encoder failure, broken invariant, missing object) so that the CLI and
the HTTP service can map them to exit codes and statuses in one place. Foreign
exceptions are translated by the adapter that owns them and kept as
``__cause__``. Messages name the fix.

The exit codes of the ``ragindex`` command are the families' ``exit_code`` plus the few outcomes
that are not errors (:func:`exit_codes` lists them all; the docs' exit-code table is checked against it).
"""

from __future__ import annotations

from typing import Any

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_PARTIAL = 8
EXIT_CRASH = 70  # EX_SOFTWARE of sysexits.h: an internal error, never confused with a domain outcome
EXIT_SIGINT = 130  # 128 + the signal number, as shells report a process stopped by it
EXIT_SIGTERM = 143


class RagindexError(Exception):
    """Root of every error raised by ragindex.

    Args:
        message: Human-readable description that names the fix.
        **context: Structured context (chunk_id, stage, backend, field, ...).
    """

    exit_code: int = EXIT_CRASH  # an error outside every family is a bug, like any unexpected exception
    http_status: int = 500

    def __init_subclass__(cls, *, exit_code: int | None = None, http_status: int | None = None, **kw: Any) -> None:
        """A family states its CLI exit code and HTTP status in its class line (unset: inherited)."""
        super().__init_subclass__(**kw)
        if exit_code is not None:
            cls.exit_code = exit_code
        if http_status is not None:
            cls.http_status = http_status

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


class InputError(RagindexError, exit_code=2, http_status=400):
    """The caller passed something invalid: a bad argument, a missing path, an unreadable file."""


class ValidationError(InputError, http_status=422):
    """A named field failed validation (non-positive user_id, top_k < 1, threshold out of range, ...)."""

    def __init__(self, field: str, message: str, **context: Any) -> None:
        super().__init__(f"{field}: {message}", field=field, **context)
        self.field = field


class DocumentTooLargeError(InputError, http_status=413):
    """A file exceeds the configured size limit."""


class UnsupportedFormatError(InputError, http_status=415):
    """No loader handles this file type."""


class DocumentLoadError(InputError):
    """A loader could not parse a file (corrupt pdf, invalid json, binary content, a parser crash, ...)."""


class ParseTimeoutError(DocumentLoadError):
    """Parsing one file took longer than ``RAGINDEX_PARSE_TIMEOUT_SECONDS`` (its parser process was killed)."""


class ChunkingTimeoutError(ParseTimeoutError):
    """Chunking one file's documents ran past its ``RAGINDEX_PARSE_TIMEOUT_SECONDS`` (its process was killed)."""


class MassDeleteError(InputError, http_status=409):
    """A sync would remove more of a folder's documents than ``RAGINDEX_MAX_REMOVE_FRACTION`` allows."""


class DestinationExistsError(InputError, http_status=409):
    """A backup, export or restore target that already holds something (give a new one, or ``--replace``)."""


class ArchiveError(InputError):
    """An export archive that cannot be imported: not an archive, an unknown format version, a checksum mismatch."""


class ConfigurationError(RagindexError, exit_code=3, http_status=500):
    """The deployment is misconfigured (missing extra, unknown backend, invalid setting)."""


class MissingExtraError(ConfigurationError, ImportError):
    """An optional dependency is not installed; the message names ``pip install 'ragindex[<extra>]'``.

    Also an :class:`ImportError`, so code that probes for an optional module (``except ImportError``) keeps working.

    Args:
        message: What needs the extra and the pip command.
        extra: The extra that provides the missing module.
        module: The module that could not be imported.
    """

    def __init__(self, message: str, *, extra: str, module: str) -> None:
        super().__init__(message, extra=extra, module=module)
        self.extra = extra
        self.name = module  # ImportError's attribute: the module that is missing


class IndexLockedError(ConfigurationError, exit_code=4, http_status=503):
    """The embedded index is owned by another process (one owner per shard directory)."""


class BackendError(RagindexError, exit_code=4, http_status=503):
    """A store or index backend failed or is unreachable."""


class StoreError(BackendError):
    """The SQL truth store failed."""


class IndexBackendError(BackendError):
    """The vector index failed (Qdrant Edge or a Qdrant server)."""


class EncodingError(RagindexError, exit_code=5, http_status=502):
    """An encoder (dense, sparse, bm25, reranker) failed to produce vectors."""


class IntegrityError(RagindexError, exit_code=6, http_status=409):
    """An invariant would break: illegal state transition, fingerprint mismatch, lost claim."""


class FingerprintMismatchError(IntegrityError):
    """The index was built with another model than the one configured."""


class SetConflictError(IntegrityError):
    """An import would write into a set that holds other content (``--replace`` replaces it)."""


class IllegalTransitionError(IntegrityError):
    """A chunk state transition that the state machine does not allow."""


class Interrupted(RagindexError, exit_code=130, http_status=503):
    """A signal (SIGINT, SIGTERM) stopped the operation at a batch boundary; its claims were given back."""


class NotFoundError(RagindexError, exit_code=7, http_status=404):
    """The requested object (document, chunk, job, collection) does not exist for this tenant."""


class AuthenticationError(RagindexError, exit_code=2, http_status=401):
    """No API key, or an unknown or revoked one (the HTTP service and its client)."""


class PermissionDeniedError(RagindexError, exit_code=2, http_status=403):
    """The key is valid but its role may not do this (admin endpoints of the HTTP service)."""


class JobStateError(RagindexError, exit_code=2, http_status=409):
    """The job is not in a state that allows this (cancelling a job that already finished)."""


class RetrievalError(RagindexError):
    """Base of the retrieval-side families (seed section 9.3)."""


class RetrievalConfigurationError(RetrievalError, ConfigurationError):
    """Retrieval is misconfigured (disabled source, missing encoder, wrong model)."""


class RerankerUnavailableError(RetrievalConfigurationError, http_status=422):
    """A search asked for rerank and no reranker model can be loaded (``RAGINDEX_RERANK_MODEL``).

    422, not 500: the request asked for something this deployment does not offer; the same search
    without rerank works.
    """


class SourceUnavailableError(RetrievalConfigurationError, http_status=422):
    """A search asked for a source (by ``sources`` or its mode) that this deployment disables or lacks.

    422, not 500: the same search over the enabled sources works. A setting that enables no source at all
    stays a :class:`RetrievalConfigurationError` (500): no request can be served then.
    """


class RetrievalBackendError(RetrievalError, BackendError):
    """The index could not be queried (unreachable, timed out)."""


class RetrievalEncodingError(RetrievalError, EncodingError):
    """The query could not be encoded."""


def exit_codes() -> dict[int, str]:
    """Every exit code of the ``ragindex`` command and what it means, in order.

    The error families give theirs (``exit_code`` on the class); the rest are outcomes of the commands.
    """
    codes = {
        EXIT_OK: "ok: everything asked for was done",
        EXIT_MISMATCH: "`verify`: index and truth store differ (run `ragindex repair`); `eval --reference`: drift",
        InputError.exit_code: "bad usage or input (the message names the field or the file)",
        ConfigurationError.exit_code: "configuration: an invalid setting, a missing extra or model",
        BackendError.exit_code: "a store or index backend failed, or another process owns the embedded index",
        EncodingError.exit_code: "an encoder (dense, sparse, reranker) failed",
        IntegrityError.exit_code: "integrity: e.g. the index was built with another model",
        NotFoundError.exit_code: "not found: the document, chunk or collection does not exist",
        EXIT_PARTIAL: "partial: some documents or chunks failed; they are listed, the rest is done "
        "(`ingest`, `repair`, `reindex`, `update-chunk`, `delete`)",
        EXIT_CRASH: "unexpected error (a bug): one line on stderr names the log file with the traceback",
        EXIT_SIGINT: "stopped by SIGINT (Ctrl-C); run the same command again to finish",
        EXIT_SIGTERM: "stopped by SIGTERM; run the same command again to finish",
    }
    return dict(sorted(codes.items()))
