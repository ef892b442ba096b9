"""``AsyncClient``: the asyncio client of the ragindex HTTP service (the same methods as ``Client``, awaited)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping, Sequence
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar, Unpack

import httpx

from ragindex.client import calls, models
from ragindex.client.base import ClientBase, name_method
from ragindex.client.calls import Call, UploadFile

T = TypeVar("T")
P = ParamSpec("P")


def _sending(route: Callable[P, Call[T]]) -> Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, T]]:
    """An :class:`AsyncClient` coroutine method taking ``route``'s arguments and returning its call's answer."""

    async def method(self: AsyncClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.send(route(*args, **kwargs))

    name_method(method, route, "AsyncClient")
    return method


class AsyncClient(ClientBase):
    """A typed asyncio client of ``ragindex serve``: the methods of :class:`~ragindex.client.Client`, awaited.

    Errors are mapped as :class:`~ragindex.client.Client` maps them. Use it as ``async with``, or ``await
    aclose()``.

    Args:
        url: The service's base URL, e.g. ``http://127.0.0.1:8000``.
        api_key: A key from ``ragindex keys create``; every ``/v1`` route needs one.
        timeout: Seconds to wait for the connection and for each read or write (None: wait forever).
        headers: More headers for every request.
    """

    _http: httpx.AsyncClient

    def _connect(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers=self._headers, timeout=self.timeout)

    async def send(self, call: Call[T]) -> T:
        """Send one :class:`~ragindex.client.calls.Call` and read its answer (the methods below use it)."""
        try:
            response = await self._http.request(**call.request_kwargs())
        except httpx.TransportError as exc:
            raise self._failed(exc) from exc
        return self._answer(call, response)

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def health(self) -> models.Health:
        """``GET /healthz`` (see :meth:`Client.health`)."""
        return await self.send(calls.healthz())

    async def ready(self) -> models.Readiness:
        """``GET /readyz`` (see :meth:`Client.ready`)."""
        return await self.send(calls.readyz())

    async def metrics(self) -> str:
        """``GET /metrics`` (see :meth:`Client.metrics`)."""
        return await self.send(calls.metrics())

    search = _sending(calls.search)
    upsert_records = _sending(calls.upsert_records)
    record = _sending(calls.record)
    delete_record = _sending(calls.delete_record)

    async def upload(self, set_id: int, files: Sequence[UploadFile]) -> models.JobAccepted:
        """``POST /v1/sets/{set_id}/documents`` (see :meth:`Client.upload`)."""
        return await self.send(calls.upload(set_id, files))

    async def ingest(self, set_id: int, files: Sequence[UploadFile], *, wait_s: float = 600.0) -> models.JobDetail:
        """Upload files and wait for their job to end (see :meth:`Client.ingest`)."""
        accepted = await self.upload(set_id, files)
        return await self.wait_for_job(accepted.job_id, wait_s=wait_s)

    async def sets(self) -> models.SetList:
        """``GET /v1/sets`` (see :meth:`Client.sets`)."""
        return await self.send(calls.sets())

    async def set_documents(self, set_id: int) -> models.SetDocuments:
        """``GET /v1/sets/{set_id}/documents`` (see :meth:`Client.set_documents`)."""
        return await self.send(calls.set_documents(set_id))

    async def documents(self, **page: Unpack[calls.DocumentQuery]) -> models.DocumentPageOut:
        """``GET /v1/documents`` (see :meth:`Client.documents`)."""
        return await self.send(calls.documents(**page))

    async def document(self, doc_id: int, *, chunks: bool = False) -> models.DocumentDetailOut:
        """``GET /v1/documents/{doc_id}`` (see :meth:`Client.document`)."""
        return await self.send(calls.document(doc_id, chunks=chunks))

    async def parsed_document(self, doc_id: int) -> models.ParsedDocumentOut:
        """``GET /v1/documents/{doc_id}/parsed`` (see :meth:`Client.parsed_document`)."""
        return await self.send(calls.parsed_document(doc_id))

    async def delete_document(self, doc_id: int) -> models.Deletion:
        """``DELETE /v1/documents/{doc_id}`` (see :meth:`Client.delete_document`)."""
        return await self.send(calls.delete_document(doc_id))

    async def jobs(self, **page: Unpack[calls.PageQuery]) -> models.JobPageOut:
        """``GET /v1/jobs`` (see :meth:`Client.jobs`)."""
        return await self.send(calls.jobs(**page))

    async def job(self, job_id: str) -> models.JobDetail:
        """``GET /v1/jobs/{job_id}`` (see :meth:`Client.job`)."""
        return await self.send(calls.job(job_id))

    async def cancel_job(self, job_id: str) -> models.JobCancelOut:
        """``DELETE /v1/jobs/{job_id}`` (see :meth:`Client.cancel_job`)."""
        return await self.send(calls.cancel_job(job_id))

    async def wait_for_job(self, job_id: str, *, wait_s: float = 600.0, poll_s: float = 0.25) -> models.JobDetail:
        """Poll a job until it ends (see :meth:`Client.wait_for_job`).

        Raises:
            BackendError: It is still running after ``wait_s`` seconds.
        """
        wait = calls.JobWait(job_id, wait_s)
        job = await self.job(job_id)
        while not wait.ended(job):
            await asyncio.sleep(poll_s)
            job = await self.job(job_id)
        return job

    async def chunk(self, chunk_id: str) -> models.ChunkOut:
        """``GET /v1/chunks/{chunk_id}`` (see :meth:`Client.chunk`)."""
        return await self.send(calls.chunk(chunk_id))

    async def update_chunk(
        self, chunk_id: str, *, text: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> models.ChunkUpdate:
        """``PATCH /v1/chunks/{chunk_id}`` (see :meth:`Client.update_chunk`)."""
        return await self.send(calls.update_chunk(chunk_id, text=text, metadata=metadata))

    async def delete_chunk(self, chunk_id: str) -> models.Deletion:
        """``DELETE /v1/chunks/{chunk_id}`` (see :meth:`Client.delete_chunk`)."""
        return await self.send(calls.delete_chunk(chunk_id))

    async def me(self) -> models.KeyInfo:
        """``GET /v1/me`` (see :meth:`Client.me`)."""
        return await self.send(calls.me())

    async def status(self) -> models.StatusReport:
        """``GET /v1/status``, admin key (see :meth:`Client.status`)."""
        return await self.send(calls.status())

    async def verify(self) -> models.VerifyReport:
        """``POST /v1/verify``, admin key (see :meth:`Client.verify`)."""
        return await self.send(calls.verify())

    async def repair(self, *, dry_run: bool = False) -> models.RepairReport:
        """``POST /v1/repair``, admin key (see :meth:`Client.repair`)."""
        return await self.send(calls.repair(dry_run=dry_run))

    async def optimize(self) -> models.OptimizeResult:
        """``POST /v1/optimize``, admin key (see :meth:`Client.optimize`)."""
        return await self.send(calls.optimize())
