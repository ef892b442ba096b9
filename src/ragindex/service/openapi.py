"""What ``/openapi.json`` says beyond the models: the error body, each status's example, and response examples.

Every error answer has one shape (``service/errors.py``); :func:`error_responses` documents it for the statuses a
route can answer, each with an example whose message is the kind the service really sends. :func:`install` serves
the schema of the running deployment: what it refuses (a source it does not search, rerank without a model, more
files than it takes) the schema refuses too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ragindex.errors import RagindexError
from ragindex.service.errors import UNPARSABLE_MESSAGE

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ragindex.service.deps import ServiceState

__all__ = ["METRICS_EXAMPLE", "ErrorOut", "error_responses", "example", "install", "tailor"]


class ErrorOut(BaseModel):
    """Every error answer: the error class, a message that names the fix, and structured context."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "error": "ValidationError",
                    "message": "top_k: Input should be greater than or equal to 1",
                    "context": {"field": "top_k"},
                }
            ]
        }
    )

    error: str = Field(description="The error class (`ValidationError`, `NotFoundError`, ...).")
    message: str = Field(description="What went wrong and how to fix it.")
    context: dict[str, Any] | None = Field(
        None, description="Structured context: `field` of a 422, the ids of a 404, the `setting` to change."
    )
    detail: list[dict[str, Any]] | None = Field(None, description="Request validation only: every problem found.")


_ERRORS: dict[int, tuple[str, dict[str, Any]]] = {
    400: (
        "The body could not be parsed (not JSON, or not multipart form data for an upload).",
        {"error": "BadRequest", "message": UNPARSABLE_MESSAGE},
    ),
    401: (
        "No API key, or an unknown or revoked one.",
        {"error": "AuthenticationError", "message": "missing API key: send `Authorization: Bearer <key>`"},
    ),
    403: (
        "The key is valid but not an admin key.",
        {
            "error": "PermissionDeniedError",
            "message": "this endpoint needs an admin key (`ragindex keys create --admin`)",
        },
    ),
    404: (
        "Not found for this key's tenant (another tenant's objects answer the same).",
        {"error": "NotFoundError", "message": "document 42 not found", "context": {"doc_id": 42}},
    ),
    409: (
        "The object is not in a state that allows this (a finished job), a concurrent edit of the same section "
        "won (send it again), or the collection was built with another model than the one configured.",
        {"error": "JobStateError", "message": "job 3f2a... already succeeded: nothing to cancel"},
    ),
    413: (
        "The request body (RAGINDEX_MAX_UPLOAD_BYTES) or a file (RAGINDEX_MAX_FILE_BYTES) is over its limit.",
        {
            "error": "DocumentTooLargeError",
            "message": "big.pdf is 80000000 bytes, over the limit of 52428800 (RAGINDEX_MAX_FILE_BYTES)",
            "context": {"size": 80000000, "limit": 52428800},
        },
    ),
    415: (
        "No loader reads this file type.",
        {
            "error": "UnsupportedFormatError",
            "message": "song.mp3: no loader for .mp3; accepted: .docx, .html, .json, .jsonl, .md, .pdf, .txt, ...",
            "context": {"filename": "song.mp3"},
        },
    ),
    422: (
        "A field is invalid (`context.field` names it), or the request asks for what this deployment lacks.",
        {
            "error": "ValidationError",
            "message": "set_id: Input should be greater than 0",
            "context": {"field": "set_id"},
            "detail": [{"type": "greater_than", "loc": ["body", "set_id"], "msg": "Input should be greater than 0"}],
        },
    ),
    502: (
        "The query encoder failed (a remote encoder service unreachable or answering nonsense).",
        {
            "error": "RetrievalEncodingError",
            "message": "dense query encoding failed: http://encoder:8080/v1/embeddings failed after 3 attempt(s): "
            "connection refused",
            "context": {"source": "dense"},
        },
    ),
    503: (
        "The store or index is unavailable (the key is checked against the store), or another process owns "
        "the embedded index.",
        {"error": "StoreError", "message": "the truth store is unreachable: ... (check RAGINDEX_DATABASE_URL)"},
    ),
}


def error_responses(*statuses: int, more: dict[int, dict[str, Any]] | None = None) -> dict[int | str, Any]:
    """The ``responses=`` of a route: each error status with the error model and its examples.

    Args:
        *statuses: HTTP statuses the route can answer with an error.
        more: Further named examples of a status (``{422: {"rerank_unavailable": body}}``), after the generic one.
    """
    out: dict[int | str, Any] = {}
    for status in statuses:
        description, body = _ERRORS[status]
        examples = {"default": {"value": body}} | {
            name: {"value": value} for name, value in (more or {}).get(status, {}).items()
        }
        out[status] = {
            "model": ErrorOut,
            "description": description,
            "content": {"application/json": {"schema": {"$ref": _ERROR_REF}, "examples": examples}},
        }
    return out


_ERROR_REF = "#/components/schemas/ErrorOut"


def _errors_are_json(spec: dict[str, Any]) -> None:
    """Only ``application/json`` in an error response's content: an error answer is JSON on every route.

    (FastAPI files the error model under a route's own media type too: ``/metrics``'s ``text/plain``.)
    """
    for item in spec.get("paths", {}).values():
        for operation in item.values():
            for status, answer in operation.get("responses", {}).items():
                content = answer.get("content", {})
                if str(status)[:1] in "45" and content.get("application/json", {}).get("schema", {}).get("$ref"):
                    answer["content"] = {"application/json": content["application/json"]}


def example(description: str, body: Any) -> dict[int | str, Any]:
    """A ``responses=`` entry for the 200 answer of a route that returns a free-form object."""
    return {200: {"description": description, "content": {"application/json": {"example": body}}}}


METRICS_EXAMPLE = """# HELP ragindex_http_request_duration_seconds HTTP request latency by route, method, status
# TYPE ragindex_http_request_duration_seconds histogram
ragindex_http_request_duration_seconds_count{method="POST",route="/v1/search",status="200"} 42.0
# HELP ragindex_chunks ACTIVE chunks per vector kind and status
# TYPE ragindex_chunks gauge
ragindex_chunks{kind="dense",status="SUCCESS"} 93.0
"""


# ---------------------------------------------------------------------- this deployment's schema
_UPLOAD = ("/v1/sets/{set_id}/documents", "post")


def install(app: FastAPI) -> None:
    """Serve ``/openapi.json`` tailored to the running deployment (see :func:`tailor`), built once after start-up."""
    build = app.openapi
    tailored: list[bool] = []

    def openapi() -> dict[str, Any]:
        spec = build()
        _errors_are_json(spec)  # idempotent: FastAPI keeps the one document it built
        state: ServiceState | None = getattr(app.state, "service", None)
        if state is not None and not tailored:
            tailor(spec, state)
            tailored.append(True)
        return spec

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to customise the schema


def tailor(spec: dict[str, Any], state: ServiceState) -> None:
    """Make the schema refuse what this deployment refuses, so a request the schema allows is one it serves.

    Search's ``mode`` and ``sources`` list only the sources this deployment searches (learned sparse only where
    it is configured, within ``RAGINDEX_RECALL_ENABLED_SOURCES``), ``rerank`` allows true only where a reranker
    model is available, and an upload takes at most ``RAGINDEX_MAX_UPLOAD_FILES`` files.
    """
    schemas = spec.get("components", {}).get("schemas", {})
    search = schemas.get("SearchRequest", {}).get("properties", {})
    sources = searched_sources(state)
    if "mode" in search:
        _set_enum(search["mode"], [*(("hybrid",) if sources else ()), *sources])
    if "sources" in search:
        for branch in search["sources"].get("anyOf", [search["sources"]]):
            if branch.get("type") == "array":
                branch["items"] = {"enum": list(sources), "type": "string"}
    _tailor_vector(schemas.get("SearchRequest", {}), state, sources)
    if "rerank" in search and not rerank_available(state):
        search["rerank"]["anyOf"] = [{"const": False}, {"type": "null"}]
        search["rerank"]["description"] = (
            "Cross-encoder rerank: false only here, no reranker model is available (RAGINDEX_RERANK_MODEL)."
        )
    path, method = _UPLOAD
    upload = spec.get("paths", {}).get(path, {}).get(method, {})
    ref = upload.get("requestBody", {}).get("content", {}).get("multipart/form-data", {}).get("schema", {})
    body = schemas.get(str(ref.get("$ref", "")).rsplit("/", 1)[-1], {})
    files = body.get("properties", {}).get("files")
    if isinstance(files, dict):
        files["maxItems"] = state.service.max_upload_files


def _tailor_vector(search: dict[str, Any], state: ServiceState, sources: tuple[str, ...]) -> None:
    """A search's ``vector`` has the dense model's dimension; hybrid needs text only with a lexical source to run."""
    vector = search.get("properties", {}).get("vector", {})
    try:
        dimension = state.engine.dense.dimension
    except RagindexError:  # a remote encoder that is not up yet: the engine checks the length of each vector
        dimension = None
    for branch in vector.get("anyOf", [vector]):
        if branch.get("type") == "array" and dimension is not None:
            branch["minItems"] = branch["maxItems"] = dimension
    if all(source == "dense" for source in sources):
        search["allOf"] = [
            rule
            for rule in search.get("allOf", [])
            if rule.get("if", {}).get("properties", {}).get("mode", {}).get("enum") != ["hybrid", None]
        ]


def searched_sources(state: ServiceState) -> tuple[str, ...]:
    """The sources a search of this deployment may run: the engine's kinds within the enabled sources."""
    from ragindex.retrieval.sources import enabled_by_setting

    enabled = enabled_by_setting(state.settings.recall_enabled_sources)
    return tuple(kind for kind in state.engine.kinds if enabled is None or kind in enabled)


def rerank_available(state: ServiceState) -> bool:
    """Whether ``rerank: true`` can be served: the engine reranks and its model is local or in the cache."""
    if not state.rerank_supported:
        return False
    try:
        state.engine.reranker.ensure_available()
    except RagindexError:
        return False
    return True


def _set_enum(field: dict[str, Any], values: list[str]) -> None:
    for branch in field.get("anyOf", [field]):
        if "enum" in branch:
            branch["enum"] = values
