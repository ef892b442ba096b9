"""``Client``: the blocking client of the ragindex HTTP service."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import httpx

from ragindex.client import calls, models
from ragindex.client.base import ClientBase
from ragindex.client.calls import Call, UploadFile
from ragindex.errors import BackendError
from ragindex.types import SearchResult

T = TypeVar("T")


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
    def search(
        self,
        query: str,
        *,
        set_id: int,
        doc_ids: Sequence[int] | None = None,
        mode: str | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
        fusion: str | None = None,
        rerank: bool | None = None,
        expand: str | None = None,
        context_chars: int | None = None,
        group_by: str | None = None,
        sources: Sequence[str] | None = None,
        on_source_error: str | None = None,
        **options: Any,
    ) -> SearchResult:
        """``POST /v1/search``: search one set of the key's tenant (the fields of ``ragindex search``).

        Args:
            query: The query text (empty: no hits).
            set_id: The set to search. Sets are per tenant: a set the key's tenant has no documents in answers
                no hits, whoever else has a set of that number.
            doc_ids: Only these documents.
            mode: ``dense``, ``bm25``, ``sparse`` or ``hybrid`` (default).
            top_k: Hits to return (default: the server's ``RAGINDEX_DEFAULT_TOP_K``).
            score_threshold: Drop hits below this score.
            fusion: Hybrid fusion: ``rrf``, ``dbsf``, ``combine`` or ``boost``.
            rerank: Cross-encoder rerank (a 422 where the service has none).
            expand: Each hit's ``context``: ``none``, ``neighbours`` or ``section``.
            context_chars: Most characters of a context.
            group_by: Merge hits of one ``section`` or ``document``.
            sources: Only these sources (``dense``, ``bm25``, ``sparse``), within the server's enabled ones.
            on_source_error: ``fail`` or ``degrade`` (answer from the other sources; the result's ``degraded``
                names the failed one).
            **options: Further request fields, sent as given (for options of newer servers).

        Returns:
            The same :class:`~ragindex.types.SearchResult` that :meth:`ragindex.Engine.search` returns (a hit's
            ``metadata`` is not sent over HTTP and is empty).
        """
        return self.send(
            calls.search(
                query,
                set_id=set_id,
                doc_ids=doc_ids,
                mode=mode,
                top_k=top_k,
                score_threshold=score_threshold,
                fusion=fusion,
                rerank=rerank,
                expand=expand,
                context_chars=context_chars,
                group_by=group_by,
                sources=list(sources) if sources is not None else None,
                on_source_error=on_source_error,
                **options,
            )
        )

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

    def documents(
        self,
        *,
        set_id: int | None = None,
        status: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> models.DocumentPageOut:
        """``GET /v1/documents``: a page of documents by id; pass ``next_cursor`` as ``cursor`` for the next."""
        return self.send(calls.documents(set_id=set_id, status=status, cursor=cursor, limit=limit))

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
    def jobs(
        self, *, status: str | None = None, cursor: str | None = None, limit: int | None = None
    ) -> models.JobPageOut:
        """``GET /v1/jobs``: a page of the tenant's jobs, newest first."""
        return self.send(calls.jobs(status=status, cursor=cursor, limit=limit))

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
        deadline = time.monotonic() + wait_s
        while True:
            job = self.job(job_id)
            if job.finished:
                return job
            if time.monotonic() > deadline:
                raise BackendError(f"job {job_id} is still {job.status} after {wait_s} s", job_id=job_id)
            time.sleep(poll_s)

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
