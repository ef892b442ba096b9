"""Failures of one file or one document during a sync: recorded, reported, and the sync goes on.

A file that cannot be read or parsed becomes a FAILED document carrying its error, with a pipeline run whose
failed stage is LOADING; a document that cannot be chunked keeps its previous version (if any) and gets a run
failed at CHUNKING. Each failure is one entry of :attr:`IngestReport.failures
<ragindex.pipeline.sync.IngestReport.failures>`: ``{"path", "source", "stage", "error", "doc_id"}``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from ragindex.errors import (
    BackendError,
    ConfigurationError,
    DocumentLoadError,
    IntegrityError,
    Interrupted,
    RagindexError,
)
from ragindex.store.protocol import TruthStore
from ragindex.store.records import NewDocument
from ragindex.store.states import RunStatus, Stage
from ragindex.types import VectorKind

log = logging.getLogger(__name__)


RUN_ERRORS = (ConfigurationError, BackendError, IntegrityError, Interrupted)
"""Errors that concern the whole run and stop it: a misconfiguration (or a locked index), an unreachable store or
index, a broken invariant, a stop requested while a file was being parsed. Recording them as one file's failure
would only repeat them for every file (or record a stop as the file's fault)."""


def fails_alone(exc: Exception) -> bool:
    """Whether ``exc`` is one file's or document's problem: bad input, or anything a reader or parser raised."""
    return not isinstance(exc, RUN_ERRORS)


def describe(exc: Exception, path: Path) -> str:
    """The one-line error of a failed file or document (a ragindex error's message names the file already)."""
    if isinstance(exc, RagindexError):
        return exc.message
    return f"{printable(path.name)}: {type(exc).__name__}: {exc}"


def printable(uri: str) -> str:
    r"""``uri`` with the bytes of a name that is not valid UTF-8 shown as ``\xff`` escapes."""
    return os.fsencode(uri).decode("utf-8", errors="backslashreplace")


def check_name(path: Path) -> None:
    """Raise DocumentLoadError for a file name that is not valid UTF-8 (the truth store keeps names as text)."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise DocumentLoadError(
            f"{printable(str(path))}: the file name is not valid UTF-8; rename the file", path=printable(str(path))
        ) from exc


class FailureLog:
    """Records failures in the truth store and collects the report's entries.

    Args:
        store: The truth store.
        kinds: The enabled vector kinds (the stages of a run).
        entries: The report's failure list, appended to.
    """

    def __init__(self, store: TruthStore, kinds: tuple[str, ...], entries: list[dict[str, Any]]) -> None:
        self.store = store
        self.kinds = kinds
        self.entries = entries

    def file_failed(
        self, path: Path, exc: Exception, *, user_id: int, set_id: int, job_id: str | None, file_hash: str = ""
    ) -> None:
        """A file that could not be read or loaded: a FAILED document (source = the file) and a failed run."""
        message = describe(exc, path)
        uri = str(path)
        log.warning("%s", message)
        doc_id: int | None = None
        try:
            uri.encode("utf-8")
        except UnicodeEncodeError:  # the store cannot hold the name: reported only (the message says to rename)
            uri = printable(uri)
        else:
            try:
                size = path.stat().st_size
            except OSError:
                size = 0
            document = NewDocument(
                user_id=user_id,
                set_id=set_id,
                source_uri=uri,
                file_uri=uri,
                file_hash=file_hash,
                content_hash="",
                filename=path.name,
                size=size,
                parser="none",
            )
            doc_id = self.store.record_failed_document(document, f"{type(exc).__name__}: {message}")
            self._failed_run(doc_id, job_id, Stage.LOADING, message, 0.0)
        self.entries.append(_entry(uri, uri, Stage.LOADING, message, doc_id))

    def document_failed(
        self,
        doc: NewDocument,
        exc: Exception,
        *,
        job_id: str | None,
        elapsed_ms: float,
        staged: tuple[int, int] | None = None,
    ) -> None:
        """A document that could not be chunked (or failed right after its chunks were staged): FAILED at CHUNKING.

        Not staged, it keeps its previous chunks and hashes and gets a failed run; ``staged`` (doc_id, run_id):
        its new chunks are recorded, and the run that staged them is closed as failed.
        """
        message = describe(exc, Path(doc.source_uri))
        log.warning("%s", message)
        if staged is None:
            doc_id = self.store.upsert_document(doc)
            self._failed_run(doc_id, job_id, Stage.CHUNKING, message, elapsed_ms)
        else:
            doc_id, run_id = staged
            self._close_failed(run_id, Stage.CHUNKING, message, elapsed_ms)
        self.store.set_document_status(doc_id, RunStatus.FAILED, message)
        self.entries.append(_entry(doc.file_uri, doc.source_uri, Stage.CHUNKING, message, doc_id))

    def index_failed(self, *, file_uri: str, source_uri: str, doc_id: int, stage: str, error: str | None) -> None:
        """A document whose chunks did not all reach the index (its run is settled FAILED by the sync)."""
        self.entries.append(_entry(file_uri, source_uri, stage, error or f"{stage.lower()} copies failed", doc_id))

    def _failed_run(self, doc_id: int, job_id: str | None, stage: Stage, message: str, elapsed_ms: float) -> None:
        run_id = self.store.start_run(
            doc_id, job_id=job_id, bm25=VectorKind.BM25 in self.kinds, sparse=VectorKind.SPARSE in self.kinds
        )
        self._close_failed(run_id, stage, message, elapsed_ms)

    def _close_failed(self, run_id: int, stage: Stage, message: str, elapsed_ms: float) -> None:
        if stage in (Stage.CHUNKING, Stage.LOADING):
            self.store.set_stage(run_id, stage, RunStatus.FAILED, duration_ms=elapsed_ms)
        self.store.finish_run(run_id, RunStatus.FAILED, total_ms=elapsed_ms, failed_stage=stage, error=message)


def _entry(file_uri: str, source_uri: str, stage: str, error: str, doc_id: int | None) -> dict[str, Any]:
    return {"path": file_uri, "source": source_uri, "stage": str(stage), "error": error, "doc_id": doc_id}
