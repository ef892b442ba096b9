"""Every route of the service as a :class:`Call`: the request to send and how to read the answer.

:class:`~ragindex.client.Client` and :class:`~ragindex.client.AsyncClient` only differ in how they send a call,
so each route is described once, here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypedDict, TypeVar, Unpack
from urllib.parse import quote

import httpx

from ragindex.client import models
from ragindex.errors import BackendError, ValidationError
from ragindex.types import SearchResult

T = TypeVar("T")

UploadFile = str | Path | tuple[str, bytes]
"""A file to upload: a path (sent under its name) or ``(name, content)``."""

FINISHED = frozenset({"succeeded", "failed", "cancelled"})


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request and the parser of its answer's JSON body (or text, for ``/metrics``)."""

    method: str
    path: str
    parse: Callable[[Any], T]
    params: Mapping[str, Any] | None = None
    json: Any = None
    files: list[tuple[str, tuple[str, bytes]]] | None = None
    text: bool = False
    accept: frozenset[int] = field(default_factory=frozenset)
    """Error statuses whose body is a regular answer (``/readyz`` answers 503 with its checks)."""

    def request_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``httpx.Client.request``."""
        kwargs: dict[str, Any] = {"method": self.method, "url": self.path}
        if self.params:
            kwargs["params"] = {k: v for k, v in self.params.items() if v is not None}
        if self.json is not None:
            kwargs["json"] = self.json
        if self.files is not None:
            kwargs["files"] = self.files
        return kwargs

    def read(self, response: httpx.Response) -> T:
        """The parsed answer."""
        return self.parse(response.text if self.text else response.json())


def _segment(value: str | int) -> str:
    """A path segment, escaped (a chunk or job id never changes the route)."""
    return quote(str(value), safe="")


def _drop_none(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def healthz() -> Call[models.Health]:
    """``GET /healthz``."""
    return Call("GET", "/healthz", models.Health.model_validate)


def readyz() -> Call[models.Readiness]:
    """``GET /readyz`` (a 503 is an answer: ``Readiness.ready`` is false)."""
    return Call("GET", "/readyz", models.Readiness.model_validate, accept=frozenset({503}))


def metrics() -> Call[str]:
    """``GET /metrics``: the Prometheus exposition text."""
    return Call("GET", "/metrics", str, text=True)


def me() -> Call[models.KeyInfo]:
    """``GET /v1/me``."""
    return Call("GET", "/v1/me", models.KeyInfo.model_validate)


class RetrievalOptions(TypedDict, total=False):
    """The optional fields of a search but ``top_k``; None (or left out): the server's (or engine's) default.

    The keywords of :meth:`Client.search <ragindex.client.Client.search>` (with ``top_k``: :class:`SearchOptions`)
    and of the retrievers in :mod:`ragindex.integrations`; :meth:`ragindex.Engine.search` takes them too.
    """

    doc_ids: Sequence[int] | None
    """Only these documents."""
    mode: str | None
    """``dense``, ``bm25``, ``sparse`` or ``hybrid`` (default)."""
    score_threshold: float | None
    """Drop hits below this score."""
    fusion: str | None
    """Hybrid fusion: ``rrf``, ``dbsf``, ``combine`` or ``boost``."""
    rerank: bool | None
    """Cross-encoder rerank (a 422 where the service has none)."""
    expand: str | None
    """Each hit's ``context``: ``none``, ``neighbours`` or ``section``."""
    context_chars: int | None
    """Most characters of a context."""
    group_by: str | None
    """Merge hits of one ``section`` or ``document``."""
    sources: Sequence[str] | None
    """Only these sources (``dense``, ``bm25``, ``sparse``), within the enabled ones."""
    on_source_error: str | None
    """``fail`` or ``degrade`` (answer from the other sources; the result's ``degraded`` names the failed one)."""


class SearchOptions(RetrievalOptions, total=False):
    """Every optional field of ``POST /v1/search``."""

    top_k: int | None
    """Hits to return (default: the server's ``RAGINDEX_DEFAULT_TOP_K``)."""
    vector: Sequence[float] | None
    """A query embedding from the set's dense model (a list or 1-D array): dense searches with it, encoding nothing."""


def search(query: str, *, set_id: int, **options: Unpack[SearchOptions]) -> Call[SearchResult]:
    """``POST /v1/search``: search one set of the key's tenant (the fields of ``ragindex search``).

    Args:
        query: The query text (empty, and no ``vector``: no hits).
        set_id: The set to search. Sets are per tenant: a set the key's tenant has no documents in answers
            no hits, whoever else has a set of that number.
        **options: The fields of :class:`SearchOptions`: ``doc_ids``, ``mode``, ``top_k``, ``score_threshold``,
            ``fusion``, ``rerank``, ``expand``, ``context_chars``, ``group_by``, ``sources``, ``on_source_error``,
            ``vector``. Other fields (options of newer servers) are sent as given.

    Returns:
        The same :class:`~ragindex.types.SearchResult` that :meth:`ragindex.Engine.search` returns (a hit's
        ``metadata`` is not sent over HTTP and is empty).
    """
    body: dict[str, Any] = {"query": query, "set_id": set_id, **_drop_none(options)}
    for listed in ("doc_ids", "sources"):
        if listed in body:
            body[listed] = list(body[listed])
    if "vector" in body:  # a numpy array (or its float32 items) is not JSON: plain floats
        try:
            body["vector"] = [float(value) for value in body["vector"]]
        except (TypeError, ValueError):
            raise ValidationError("vector", "must be a list (or 1-D array) of numbers") from None
    return Call("POST", "/v1/search", models.search_result, json=body)


def upload(set_id: int, files: Sequence[UploadFile]) -> Call[models.JobAccepted]:
    """``POST /v1/sets/{set_id}/documents`` (multipart, form field ``files``)."""
    if isinstance(files, str | Path) or not files:
        raise ValidationError("files", "give a list of one or more paths or (name, bytes) pairs")
    parts: list[tuple[str, tuple[str, bytes]]] = []
    for item in files:
        if isinstance(item, tuple):
            name, content = item
        else:
            path = Path(item).expanduser()
            try:
                content = path.read_bytes()
            except OSError as exc:
                raise ValidationError("files", f"cannot read {path}: {exc.strerror or exc}", path=str(path)) from exc
            name = path.name
        parts.append(("files", (name, content)))
    return Call("POST", f"/v1/sets/{_segment(set_id)}/documents", models.JobAccepted.model_validate, files=parts)


def sets() -> Call[models.SetList]:
    """``GET /v1/sets``."""
    return Call("GET", "/v1/sets", models.SetList.model_validate)


def set_documents(set_id: int) -> Call[models.SetDocuments]:
    """``GET /v1/sets/{set_id}/documents``."""
    return Call("GET", f"/v1/sets/{_segment(set_id)}/documents", models.SetDocuments.model_validate)


class PageQuery(TypedDict, total=False):
    """Which page of a list route: ``cursor`` is the previous page's ``next_cursor``; None: the server default."""

    status: str | None
    cursor: str | None
    limit: int | None


class DocumentQuery(PageQuery, total=False):
    """Which page of ``GET /v1/documents``: also only the documents of one set."""

    set_id: int | None


def documents(**page: Unpack[DocumentQuery]) -> Call[models.DocumentPageOut]:
    """``GET /v1/documents``: one page."""
    return Call("GET", "/v1/documents", models.DocumentPageOut.model_validate, params=dict(page))


def document(doc_id: int, *, chunks: bool) -> Call[models.DocumentDetailOut]:
    """``GET /v1/documents/{doc_id}``."""
    params = {"chunks": "true"} if chunks else None
    return Call("GET", f"/v1/documents/{_segment(doc_id)}", models.DocumentDetailOut.model_validate, params=params)


def parsed_document(doc_id: int) -> Call[models.ParsedDocumentOut]:
    """``GET /v1/documents/{doc_id}/parsed``."""
    return Call("GET", f"/v1/documents/{_segment(doc_id)}/parsed", models.ParsedDocumentOut.model_validate)


def _json_object(raw: Any) -> dict[str, Any]:
    return dict(raw)


def upsert_records(set_id: int, records: Sequence[Mapping[str, Any]]) -> Call[dict[str, Any]]:
    """``POST /v1/sets/{set_id}/records``: up to 1000 records ``{key, text | markdown | chunks, title?, metadata?}``.

    The answer is the upsert's report (up to 100 records and 1 MiB: they are searchable when it comes), or, for a
    larger batch, ``{job_id, status, records}`` of a job to wait for (``wait_for_job``).
    """
    if isinstance(records, Mapping) or not records:
        raise ValidationError("records", "give a list of one or more records")
    body = {"records": [dict(r) for r in records]}
    return Call("POST", f"/v1/sets/{_segment(set_id)}/records", _json_object, json=body)


def record(set_id: int, key: str) -> Call[dict[str, Any]]:
    """``GET /v1/sets/{set_id}/records/{key}``: the record as stored (key, doc_id, title, metadata, status, ...)."""
    return Call("GET", f"/v1/sets/{_segment(set_id)}/records/{_segment(key)}", _json_object)


def delete_record(set_id: int, key: str) -> Call[dict[str, Any]]:
    """``DELETE /v1/sets/{set_id}/records/{key}`` (``NotFoundError`` when no record has the key)."""
    return Call("DELETE", f"/v1/sets/{_segment(set_id)}/records/{_segment(key)}", _json_object)


def delete_document(doc_id: int) -> Call[models.Deletion]:
    """``DELETE /v1/documents/{doc_id}``."""
    return Call("DELETE", f"/v1/documents/{_segment(doc_id)}", models.Deletion.model_validate)


def jobs(**page: Unpack[PageQuery]) -> Call[models.JobPageOut]:
    """``GET /v1/jobs``: one page, newest first."""
    return Call("GET", "/v1/jobs", models.JobPageOut.model_validate, params=dict(page))


def job(job_id: str) -> Call[models.JobDetail]:
    """``GET /v1/jobs/{job_id}``."""
    return Call("GET", f"/v1/jobs/{_segment(job_id)}", models.JobDetail.model_validate)


@dataclass
class JobWait:
    """The clock of ``wait_for_job``: whether a polled job ended, and a :class:`BackendError` once time is up."""

    job_id: str
    wait_s: float
    deadline: float = field(init=False)

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.wait_s

    def ended(self, job: models.JobDetail) -> bool:
        """True when ``job`` succeeded, failed or was cancelled; raises once ``wait_s`` seconds have passed."""
        if job.finished:
            return True
        if time.monotonic() > self.deadline:
            raise BackendError(f"job {self.job_id} is still {job.status} after {self.wait_s} s", job_id=self.job_id)
        return False


def cancel_job(job_id: str) -> Call[models.JobCancelOut]:
    """``DELETE /v1/jobs/{job_id}``."""
    return Call("DELETE", f"/v1/jobs/{_segment(job_id)}", models.JobCancelOut.model_validate)


def chunk(chunk_id: str) -> Call[models.ChunkOut]:
    """``GET /v1/chunks/{chunk_id}``."""
    return Call("GET", f"/v1/chunks/{_segment(chunk_id)}", models.ChunkOut.model_validate)


def update_chunk(chunk_id: str, *, text: str | None, metadata: Mapping[str, Any] | None) -> Call[models.ChunkUpdate]:
    """``PATCH /v1/chunks/{chunk_id}``."""
    body = _drop_none({"text": text, "metadata": dict(metadata) if metadata is not None else None})
    return Call("PATCH", f"/v1/chunks/{_segment(chunk_id)}", models.ChunkUpdate.model_validate, json=body)


def delete_chunk(chunk_id: str) -> Call[models.Deletion]:
    """``DELETE /v1/chunks/{chunk_id}``."""
    return Call("DELETE", f"/v1/chunks/{_segment(chunk_id)}", models.Deletion.model_validate)


def status() -> Call[models.StatusReport]:
    """``GET /v1/status`` (admin)."""
    return Call("GET", "/v1/status", models.StatusReport.model_validate)


def verify() -> Call[models.VerifyReport]:
    """``POST /v1/verify`` (admin)."""
    return Call("POST", "/v1/verify", models.VerifyReport.model_validate)


def repair(*, dry_run: bool) -> Call[models.RepairReport]:
    """``POST /v1/repair`` (admin)."""
    return Call("POST", "/v1/repair", models.RepairReport.model_validate, json={"dry_run": dry_run})


def optimize() -> Call[models.OptimizeResult]:
    """``POST /v1/optimize`` (admin)."""
    return Call("POST", "/v1/optimize", models.OptimizeResult.model_validate)
