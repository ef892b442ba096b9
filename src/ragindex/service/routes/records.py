"""Records: documents the caller names by a key and sends whole, as JSON (``Engine.upsert`` over HTTP).

``PUT`` one record, ``POST`` a batch of up to 1000 (over :data:`SYNC_MAX_RECORDS` records or
:data:`SYNC_MAX_CONTENT_BYTES` of content: a job, answered 202), ``GET`` one as stored, ``DELETE`` one. A
synchronous answer comes once the records are searchable (read your writes). A key may hold ``/``: the routes take
the rest of the path as the key, URL-decoded.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Response
from fastapi import Path as PathParam
from starlette.concurrency import run_in_threadpool

from ragindex.clock import iso
from ragindex.errors import NotFoundError
from ragindex.records import RECORD_URI_PREFIX, RecordError, validate_key
from ragindex.service import record_jobs
from ragindex.service.deps import CallerDep, ServiceState, StateDep
from ragindex.service.job_state import JobState
from ragindex.service.openapi import error_responses, example
from ragindex.service.records_api import (
    KEY_SCHEMA,
    SYNC_MAX_CONTENT_BYTES,
    SYNC_MAX_RECORDS,
    RecordBatch,
    RecordBody,
    RecordOut,
    RecordsJobAccepted,
    as_validation_error,
    checked,
    checked_call,
)
from ragindex.service.routes.documents import SetIdPath
from ragindex.store.records import DocumentRow

router = APIRouter(prefix="/v1", tags=["records"])

KeyPath = Annotated[
    str,
    PathParam(
        description="The record's key (URL-encoded; `/` may stay as it is): 1-256 printable characters.",
        json_schema_extra={k: v for k, v in KEY_SCHEMA.items() if k != "type"},
    ),
]
_REPORT = {
    "key": "faq/42",
    "doc_id": 12,
    "documents": {"added": 1, "changed": 0, "unchanged": 0, "failed": 0, "removed": 0},
    "chunks": {"embedded": 1, "reused": 0, "failed": 0},
    "failures": [],
    "notes": [],
    "duration_ms": 84.2,
}
_DELETED = {
    "removed": 1,
    "purged": 1,
    "purge_failed": 0,
    "doc_ids": [12],
    "chunk_ids": ["0b7e8f0e-54a1-4c38-9d0e-2f5b8f4f6a11"],
    "errors": [],
    "next_action": None,
    "missing": [],
}


def _key(raw: str) -> str:
    if not raw:  # `/records/` (a client may also make it of `/records/.`): no key, so no record
        raise NotFoundError("no record key in the path: /v1/sets/{set_id}/records/{key}")
    try:
        return validate_key(raw)
    except RecordError as exc:
        raise as_validation_error(exc) from exc


async def _record(state: ServiceState, user_id: int, set_id: int, key: str) -> DocumentRow:
    """The set's ACTIVE record with this key (404 otherwise, and for a file: files are ``/v1/documents``)."""
    found = await state.aengine.run_sync(state.engine.store.documents_by_key, user_id, set_id, [key])
    doc = found.get(key)
    if doc is None or not doc.file_uri.startswith(RECORD_URI_PREFIX):
        raise NotFoundError(f"no record with key {key!r} in set {set_id}", key=key, set_id=set_id)
    return doc


def _report(state: ServiceState, report: Any, *, user_id: int, set_id: int) -> dict[str, Any]:
    out = state.sources.report(report.to_dict(), user_id=user_id, set_id=set_id)
    assert out is not None
    return out


@router.put(
    "/sets/{set_id}/records/{key:path}",
    responses={
        **example("The upsert's report; the record is searchable when this answers.", _REPORT),
        **error_responses(400, 401, 404, 413, 422, 502, 503),
    },
)
async def put_record(set_id: SetIdPath, key: KeyPath, body: RecordBody, state: StateDep, caller: CallerDep) -> Any:
    """Insert or replace one record of the set; an unchanged record costs nothing (``documents.unchanged``).

    Its content, title and metadata are checked whole before anything is written (422 naming the field).
    """
    key = _key(key)
    record = body.to_record(key)
    report = await checked_call(state.aengine.upsert([record], user_id=caller.user_id, set_id=set_id))
    found = await state.aengine.run_sync(state.engine.store.documents_by_key, caller.user_id, set_id, [key])
    doc = found.get(key)
    out = _report(state, report, user_id=caller.user_id, set_id=set_id)
    return {"key": key, "doc_id": doc.doc_id if doc else None, **out}


@router.post(
    "/sets/{set_id}/records",
    responses={
        **example(f"Up to {SYNC_MAX_RECORDS} records and 1 MiB: the report, once they are searchable.", _REPORT),
        202: {"model": RecordsJobAccepted, "description": "A larger batch: a job; poll `GET /v1/jobs/{job_id}`."},
        **error_responses(400, 401, 413, 422, 502, 503),
    },
)
async def post_records(
    set_id: SetIdPath, body: RecordBatch, state: StateDep, caller: CallerDep, response: Response
) -> Any:
    """Upsert a batch of records (at most 1000; a key given twice: the later record); checked whole first.

    Up to 100 records and 1 MiB of content answer 200 with the report once they are searchable; a larger batch
    is saved and answers 202 with a job (``GET /v1/jobs/{job_id}``; its report when it is done).
    """
    keys: dict[str, int] = {}
    for n, item in enumerate(body.records):
        keys.pop(item.key, None)
        keys[item.key] = n  # a key given twice: the later record wins, as two upserts in a row would leave it
    kept = [body.records[n] for n in keys.values()]
    records = [item.to_record(item.key) for item in kept]
    size = sum(item.content_bytes() for item in kept)
    if len(records) > SYNC_MAX_RECORDS or size > SYNC_MAX_CONTENT_BYTES:
        # checked now, before the answer: a job only ever holds records the engine takes (but for the set's
        # field types, which the job checks again when it runs: a field may be typed meanwhile)
        await run_in_threadpool(lambda: checked(lambda: _precheck(state, records, caller.user_id, set_id), keys=keys))
        job_id = uuid.uuid4().hex
        saved = [item.model_dump(exclude_none=True) for item in kept]
        batch = await run_in_threadpool(record_jobs.save_batch, state.blob_root, job_id, saved)
        await run_in_threadpool(state.jobs.submit_records, user_id=caller.user_id, set_id=set_id, batch=batch)
        response.status_code = 202
        return RecordsJobAccepted(job_id=job_id, status=JobState.QUEUED, records=len(records))
    upsert = state.aengine.upsert(records, user_id=caller.user_id, set_id=set_id)
    report = await checked_call(upsert, keys=keys)
    return _report(state, report, user_id=caller.user_id, set_id=set_id)


def _precheck(state: ServiceState, records: list[dict[str, Any]], user_id: int, set_id: int) -> None:
    """Refuse a batch now, as :meth:`Engine.upsert` would (records, and metadata against the set's types)."""
    from ragindex.pipeline.record_sync import check_records
    from ragindex.records import records_of

    check_records(records_of(records), state.engine.store.field_types(user_id, set_id))


@router.get(
    "/sets/{set_id}/records/{key:path}",
    response_model=RecordOut,
    responses=error_responses(401, 404, 422, 503),
)
async def get_record(set_id: SetIdPath, key: KeyPath, state: StateDep, caller: CallerDep) -> RecordOut:
    """A record of the set as the truth store holds it (404: no record has this key, or another tenant's)."""
    key = _key(key)
    doc = await _record(state, caller.user_id, set_id, key)
    metadata = state.sources.metadata(doc.metadata, user_id=caller.user_id, set_id=set_id)
    title = metadata.get("title")
    return RecordOut(
        key=key,
        doc_id=doc.doc_id,
        set_id=doc.set_id,
        title=title if isinstance(title, str) else None,
        filename=doc.filename,
        metadata=metadata,
        status=doc.status,
        error=state.sources.text(doc.error) if doc.error else None,
        chunk_count=doc.chunk_count,
        size=doc.size,
        updated_at=iso(doc.updated_at),
    )


@router.delete(
    "/sets/{set_id}/records/{key:path}",
    responses={
        **example("What was deleted and purged from the index.", _DELETED),
        **error_responses(401, 404, 409, 422, 503),
    },
)
async def delete_record(set_id: SetIdPath, key: KeyPath, state: StateDep, caller: CallerDep) -> dict[str, Any]:
    """Delete a record: gone from search at once, then purged from the index (404 when no record has the key)."""
    key = _key(key)
    await _record(state, caller.user_id, set_id, key)
    result = await state.aengine.delete(keys=[key], user_id=caller.user_id, set_id=set_id)
    out: dict[str, Any] = result.to_dict()
    if out.get("missing"):  # deleted by another request meanwhile
        raise NotFoundError(f"no record with key {key!r} in set {set_id}", key=key, set_id=set_id)
    return out
