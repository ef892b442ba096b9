"""What ``/openapi.json`` says beyond the models: the error body, each status's example, and response examples.

Every error answer has one shape (``service/errors.py``); :func:`error_responses` documents it for the statuses a
route can answer, each with an example whose message is the kind the service really sends.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["METRICS_EXAMPLE", "ErrorOut", "error_responses", "example"]


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
        "The object is not in a state that allows this.",
        {"error": "JobStateError", "message": "job 3f2a... already succeeded: nothing to cancel"},
    ),
    413: (
        "The request body or a file is over its limit.",
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
    503: (
        "The store or index is unavailable, or another process owns the embedded index.",
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
            "content": {"application/json": {"examples": examples}},
        }
    return out


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
