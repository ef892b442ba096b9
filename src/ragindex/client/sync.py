"""``Client``: the blocking client of the ragindex HTTP service."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar, Unpack

import httpx

from ragindex.client import calls, models
from ragindex.client.base import ClientBase, name_method
from ragindex.client.calls import Call, UploadFile

T = TypeVar("T")
P = ParamSpec("P")


def _sending(route: Callable[P, Call[T]]) -> Callable[Concatenate[Client, P], T]:
    """A :class:`Client` method taking ``route``'s arguments and returning the answer to its call."""

    def method(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.send(route(*args, **kwargs))

    name_method(method, route, "Client")
    return method


class Client(ClientBase):
    """A typed, blocking client of ``ragindex serve``: one method per route.

    Errors come back as the :class:`~ragindex.errors.RagindexError` the service raised (``NotFoundError`` for a
    404, ``AuthenticationError`` for a 401, ``ValidationError`` for a 422, ...); a service that is down or does
    not answer in time raises :class:`~ragindex.errors.BackendError` naming the URL.

    Args:
        url: The service's base URL, e.g. ``http://127.0.0.1:8000``.
        api_key: A key from ``ragindex keys create``; every ``/v1`` route needs one.
        timeout: Seconds to wait for the connection and for each read or write (None: wait forever).
        headers: More headers for every request.

    Example:
        >>> with Client("http://127.0.0.1:8000", api_key=key) as client:  # doctest: +SKIP
        ...     for hit in client.search("largest moon", set_id=1, top_k=3).hits:
        ...         print(hit.score, hit.filename, hit.text[:60])
    """

    _http: httpx.Client

    def _connect(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=self._headers, timeout=self.timeout)

    def send(self, call: Call[T]) -> T:
        """Send one :class:`~ragindex.client.calls.Call` and read its answer (the methods below use it)."""
        try:
            response = self._http.request(**call.request_kwargs())
        except httpx.TransportError as exc:
            raise self._failed(exc) from exc
        return self._answer(call, response)

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ probes (no key needed)
    def health(self) -> models.Health:
        """``GET /healthz``: the process is up."""
        return self.send(calls.healthz())

    def ready(self) -> models.Readiness:
        """``GET /readyz``: whether the store and the index answer (``.ready``; a 503 is returned, not raised)."""
        return self.send(calls.readyz())

    def metrics(self) -> str:
        """``GET /metrics``: the Prometheus exposition text."""
        return self.send(calls.metrics())

    # ------------------------------------------------------------------ search
    search = _sending(calls.search)
    upsert_records = _sending(calls.upsert_records)
    record = _sending(calls.record)
    delete_record = _sending(calls.delete_record)

    # ------------------------------------------------------------------ documents and sets
    def upload(self, set_id: int, files: Sequence[UploadFile]) -> models.JobAccepted:
        """``POST /v1/sets/{set_id}/documents``: save the files and queue their ingest (poll :meth:`wait_for_job`).

        Args:
            set_id: The set of the key's tenant to add them to; re-uploading a name updates that document.
            files: Paths (sent under their file name) or ``(name, bytes)`` pairs.
        """
        return self.send(calls.upload(set_id, files))

    def ingest(self, set_id: int, files: Sequence[UploadFile], *, wait_s: float = 600.0) -> models.JobDetail:
        """Upload files and wait for their job to end; the job is returned whatever its outcome (check ``status``)."""
        return self.wait_for_job(self.upload(set_id, files).job_id, wait_s=wait_s)

    def sets(self) -> models.SetList:
        """``GET /v1/sets``: the key's tenant's sets that hold documents, with counts per status."""
        return self.send(calls.sets())

    def set_documents(self, set_id: int) -> models.SetDocuments:
        """``GET /v1/sets/{set_id}/documents``: every document of the set with its status."""
        return self.send(calls.set_documents(set_id))

    def documents(self, **page: Unpack[calls.DocumentQuery]) -> models.DocumentPageOut:
        """``GET /v1/documents``: a page of documents by id; pass ``next_cursor`` as ``cursor`` for the next.

        Args: ``set_id``, ``status``, ``cursor``, ``limit`` (all optional).
        """
        return self.send(calls.documents(**page))

    def document(self, doc_id: int, *, chunks: bool = False) -> models.DocumentDetailOut:
        """``GET /v1/documents/{doc_id}``: its fields, last run, chunk counts (and every chunk with ``chunks``)."""
        return self.send(calls.document(doc_id, chunks=chunks))

    def parsed_document(self, doc_id: int) -> models.ParsedDocumentOut:
        """``GET /v1/documents/{doc_id}/parsed``: the markdown it was parsed into, with its layout blocks."""
        return self.send(calls.parsed_document(doc_id))

    def delete_document(self, doc_id: int) -> models.Deletion:
        """``DELETE /v1/documents/{doc_id}``: gone from search at once, then purged from the index."""
        return self.send(calls.delete_document(doc_id))

    # ------------------------------------------------------------------ jobs
    def jobs(self, **page: Unpack[calls.PageQuery]) -> models.JobPageOut:
        """``GET /v1/jobs``: a page of the tenant's jobs (``status``, ``cursor``, ``limit``), newest first."""
        return self.send(calls.jobs(**page))

    def job(self, job_id: str) -> models.JobDetail:
        """``GET /v1/jobs/{job_id}``: status, live progress, each document's run, the report when done."""
        return self.send(calls.job(job_id))

    def cancel_job(self, job_id: str) -> models.JobCancelOut:
        """``DELETE /v1/jobs/{job_id}``: ``cancelled`` for a queued job, ``cancelling`` for a running one."""
        return self.send(calls.cancel_job(job_id))

    def wait_for_job(self, job_id: str, *, wait_s: float = 600.0, poll_s: float = 0.25) -> models.JobDetail:
        """Poll a job until it succeeded, failed or was cancelled, and return it.

        Raises:
            BackendError: It is still running after ``wait_s`` seconds (it goes on; call again to keep waiting).
        """
        wait = calls.JobWait(job_id, wait_s)
        while not wait.ended(job := self.job(job_id)):
            time.sleep(poll_s)
        return job

    # ------------------------------------------------------------------ chunks
    def chunk(self, chunk_id: str) -> models.ChunkOut:
        """``GET /v1/chunks/{chunk_id}``: an ACTIVE chunk with its per-kind index statuses."""
        return self.send(calls.chunk(chunk_id))

    def update_chunk(
        self, chunk_id: str, *, text: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> models.ChunkUpdate:
        """``PATCH /v1/chunks/{chunk_id}``: new text (re-embedded only if it changed) and/or metadata to merge."""
        return self.send(calls.update_chunk(chunk_id, text=text, metadata=metadata))

    def delete_chunk(self, chunk_id: str) -> models.Deletion:
        """``DELETE /v1/chunks/{chunk_id}``: gone from search at once, then purged from the index."""
        return self.send(calls.delete_chunk(chunk_id))

    # ------------------------------------------------------------------ who am I, and admin routes
    def me(self) -> models.KeyInfo:
        """``GET /v1/me``: the key's id, tenant and role."""
        return self.send(calls.me())

    def status(self) -> models.StatusReport:
        """``GET /v1/status`` (admin key): documents and chunks per status per set, collections, job queue."""
        return self.send(calls.status())

    def verify(self) -> models.VerifyReport:
        """``POST /v1/verify`` (admin key): compare the truth store with the index (read-only)."""
        return self.send(calls.verify())

    def repair(self, *, dry_run: bool = False) -> models.RepairReport:
        """``POST /v1/repair`` (admin key): converge the index copies to the truth store."""
        return self.send(calls.repair(dry_run=dry_run))

    def optimize(self) -> models.OptimizeResult:
        """``POST /v1/optimize`` (admin key): build the HNSW graphs; an embedded service stalls while it runs."""
        return self.send(calls.optimize())
