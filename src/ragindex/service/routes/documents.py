"""Uploads (an ingest job per request), listing and showing documents (and their parsed markdown), deleting one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, File, Query, UploadFile
from fastapi import Path as PathParam
from starlette.concurrency import run_in_threadpool

from ragindex.errors import NotFoundError, ValidationError
from ragindex.paging import DEFAULT_LIMIT, MAX_LIMIT
from ragindex.pipeline.inspection import document_summary, parsed_dict
from ragindex.service import uploads
from ragindex.service.deps import JSON_INTEGER, TRUE_OR_FALSE, CallerDep, Cursor, StateDep, cursor_query
from ragindex.service.job_state import JobState
from ragindex.service.openapi import error_responses, example
from ragindex.service.schemas import (
    MAX_ID,
    DocStatus,
    DocumentDetailOut,
    DocumentPageOut,
    JobAccepted,
    ParsedDocumentOut,
    SetDocumentsOut,
    SetsOut,
)
from ragindex.store.records import DocumentRow
from ragindex.store.states import Lifecycle

router = APIRouter(prefix="/v1", tags=["documents"])

_DELETED = {
    "removed": 3,
    "purged": 3,
    "purge_failed": 0,
    "doc_ids": [42],
    "chunk_ids": ["0b7e8f0e-54a1-4c38-9d0e-2f5b8f4f6a11", "..."],
    "errors": [],
    "next_action": None,
}
SetIdPath = Annotated[int, PathParam(gt=0, le=MAX_ID, description="A set of the key's tenant."), JSON_INTEGER]
DocIdPath = Annotated[int, PathParam(gt=0, le=MAX_ID), JSON_INTEGER]


@router.post(
    "/sets/{set_id}/documents",
    status_code=202,
    response_model=JobAccepted,
    responses=error_responses(400, 401, 413, 415, 422, 503),
)
async def upload_documents(
    set_id: SetIdPath,
    files: Annotated[
        list[UploadFile],
        File(
            min_length=1,
            description="One or many files (form field `files`), each named with a suffix a loader reads (415 "
            "otherwise) and each name once per upload; at most RAGINDEX_MAX_UPLOAD_FILES of them.",
        ),
    ],
    state: StateDep,
    caller: CallerDep,
) -> JobAccepted:
    """Save the files and queue their ingest; poll ``GET /v1/jobs/{job_id}``. Re-uploading a name updates it."""
    if not files:
        raise ValidationError("files", "send at least one file")
    if len(files) > state.service.max_upload_files:
        raise ValidationError("files", f"at most {state.service.max_upload_files} files per upload")
    names: list[str] = []
    for upload in files:
        name = uploads.sanitize_filename(upload.filename)
        uploads.check_type(name, state.suffixes)
        uploads.check_size(name, upload.size, state.settings.max_file_bytes)
        names.append(name)
    if len(set(names)) != len(names):
        raise ValidationError("files", "two files of one upload have the same name")
    folder = state.blob_root / str(caller.user_id) / str(set_id)
    targets = [folder / name for name in names]
    for upload, target in zip(files, targets, strict=True):
        await run_in_threadpool(uploads.save, upload.file, target)
    job_id = await run_in_threadpool(state.jobs.submit_ingest, user_id=caller.user_id, set_id=set_id, files=targets)
    return JobAccepted(job_id=job_id, status=JobState.QUEUED, files=names)


@router.get("/sets", response_model=SetsOut, response_model_exclude_unset=True, responses=error_responses(401, 503))
async def list_sets(state: StateDep, caller: CallerDep) -> dict[str, Any]:
    """The sets of the key's tenant that hold documents, with their document count per status."""
    counts: dict[int, dict[str, int]] = {}
    for doc in await state.aengine.run_sync(state.engine.store.list_documents, user_id=caller.user_id):
        by_status = counts.setdefault(doc.set_id, {})
        by_status[doc.status] = by_status.get(doc.status, 0) + 1
    sets = [{"set_id": s, "documents": sum(c.values()), "statuses": c} for s, c in sorted(counts.items())]
    return {"sets": sets}


@router.get(
    "/sets/{set_id}/documents",
    response_model=SetDocumentsOut,
    response_model_exclude_unset=True,
    responses=error_responses(401, 422, 503),
)
async def list_documents(set_id: SetIdPath, state: StateDep, caller: CallerDep) -> dict[str, Any]:
    """The set's documents with their processing status (SUCCESS, FAILED, PROCESSING)."""
    rows = await state.aengine.run_sync(state.engine.store.list_documents, user_id=caller.user_id, set_id=set_id)
    docs = [document_summary(d) for d in rows]
    state.sources.documents(docs, file_uris={d.doc_id: d.file_uri for d in rows})
    return {"set_id": set_id, "documents": docs}


@router.get("/documents", response_model=DocumentPageOut, responses=error_responses(401, 422, 503))
async def documents_page(
    state: StateDep,
    caller: CallerDep,
    set_id: Annotated[int | None, Query(gt=0, le=MAX_ID, description="Only this set."), JSON_INTEGER] = None,
    status: Annotated[DocStatus | None, Query(description="Only documents with this status.")] = None,
    cursor: Annotated[Cursor, cursor_query("documents")] = None,
    limit: Annotated[
        int, Query(ge=1, le=MAX_LIMIT, description="Most documents per page."), JSON_INTEGER
    ] = DEFAULT_LIMIT,
) -> DocumentPageOut:
    """The key's tenant's documents by id, a page at a time (FAILED ones carry their error)."""
    page = await state.aengine.documents(
        user_id=caller.user_id, set_id=set_id, status=status, cursor=cursor, limit=limit
    )
    out = page.to_dict()
    state.sources.documents(out["documents"], file_uris={d.doc_id: d.file_uri for d in page.documents})
    return DocumentPageOut.model_validate(out)


@router.get("/documents/{doc_id}", response_model=DocumentDetailOut, responses=error_responses(401, 404, 422, 503))
async def get_document(
    doc_id: DocIdPath,
    state: StateDep,
    caller: CallerDep,
    chunks: Annotated[
        bool, Query(description="Also list every chunk and section with its statuses."), TRUE_OR_FALSE
    ] = False,
) -> DocumentDetailOut:
    """A document of the key's tenant: its fields, the stages of its last run, its chunk counts (and chunks)."""
    out = (await state.aengine.document(doc_id, user_id=caller.user_id, chunks=chunks)).to_dict()
    state.sources.documents([out["document"]], keys=("source", "file"))
    state.sources.scrub(out)  # the run's and the stages' errors name files, never server paths
    return DocumentDetailOut.model_validate(out)


@router.get(
    "/documents/{doc_id}/parsed", response_model=ParsedDocumentOut, responses=error_responses(401, 404, 422, 503)
)
async def get_parsed_document(
    doc_id: DocIdPath,
    state: StateDep,
    caller: CallerDep,
) -> ParsedDocumentOut:
    """The markdown a document of the key's tenant was parsed into, with its layout blocks and page starts.

    404 for an unknown, deleted or other tenant's document, and for one ingested before parsed documents were kept
    (``context.reason`` is ``no_parsed_artifact``; it appears when the file changes or is re-ingested in full).
    """
    parsed = await state.aengine.parsed_document(doc_id, user_id=caller.user_id)
    return ParsedDocumentOut.model_validate(parsed_dict(parsed))


@router.delete(
    "/documents/{doc_id}",
    responses={
        **example("What was deleted and purged from the index.", _DELETED),
        **error_responses(401, 404, 409, 422, 503),
    },
)
async def delete_document(
    doc_id: DocIdPath,
    state: StateDep,
    caller: CallerDep,
) -> dict[str, Any]:
    """Delete a document of the key's tenant: gone from search at once, then purged from the index."""
    store, pool = state.engine.store, state.aengine
    doc = await pool.run_sync(store.get_document, doc_id, user_id=caller.user_id)
    if doc.lifecycle_status != Lifecycle.ACTIVE:
        raise NotFoundError(f"document {doc_id} not found", doc_id=doc_id)
    result = await pool.delete_document(doc_id, user_id=caller.user_id)
    await pool.run_sync(
        lambda: _drop_blob(state.blob_root, doc, store.documents_of_file(doc.user_id, doc.set_id, doc.file_uri))
    )
    return result.to_dict()


def _drop_blob(blob_root: Path, doc: DocumentRow, still_active: list[DocumentRow]) -> None:
    """Remove the uploaded file once no ACTIVE document comes from it (a records file holds many)."""
    path = Path(doc.file_uri)
    root = blob_root.resolve()
    if still_active or not path.is_relative_to(root):
        return
    path.unlink(missing_ok=True)
