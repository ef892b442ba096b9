"""The ``document_result`` event: one per document, with seed 000's per-document fields (section 3.3).

Sent after every ingest job (by the in-process service and by workers alike), once per document of the job's
files, and by the reconciler for each document it finishes, to the webhook and to the broker's result queue::

    {"event": "document_result", "status": "success" | "failed" | "processing", "trigger": "ingest" | "reconcile",
     "job_id": "..." | null, "doc_id": 12, "user_id": 7, "set_id": 1, "key": "/blobs/7/1/a.pdf",
     "source": "/blobs/7/1/a.pdf",
     "filename": "a.pdf", "stage": "BM25", "stages": {"chunking": "SUCCESS", "dense": "SUCCESS", ...},
     "failed_stage": null, "recover_from_stage": null, "error": null, "unchanged": false, "run_id": 31,
     "chunks": {"total": 9, "indexed": 9, "failed": 0, "pending": 0}, "sections": {...},   # sections: if any
     "durations_ms": {"chunking": 3.1, "dense": 120.4, "bm25": 4.2, "sparse": null, "total": 127.7},
     "at": "2025-01-01T12:00:00.123456"}

``status`` is the document's status when the event is sent: ``success`` only when it loaded, chunked and every
copy is indexed; ``processing`` when work is left (a later ``reconcile`` event tells the outcome). ``stage`` is the
failed stage of a failed document (``LOADING`` when the file could not be read or parsed), else the last stage
that ran. ``unchanged``: the job found the document's content unchanged and redid nothing (its last run is shown).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ragindex.clock import utcnow
from ragindex.store.protocol import TruthStore
from ragindex.store.records import DocumentRow, RunRow, UnitTally
from ragindex.store.states import RunStatus, Stage

DOCUMENT_EVENT = "document_result"
_STATUS: dict[str, str] = {RunStatus.SUCCESS: "success", RunStatus.FAILED: "failed"}
_STAGE_ORDER = ("chunking", "dense", "bm25", "sparse")


def _stage(status: str, run: RunRow | None) -> str:
    """The failed stage of a failed document, the first unfinished one of an open run, else the last that ran."""
    if run is None:
        return Stage.LOADING if status == "failed" else Stage.CHUNKING
    if status == "failed" and run.failed_stage:
        return run.failed_stage
    stages = [(name, run.stages.get(name)) for name in _STAGE_ORDER]
    if status == "processing":
        open_stage = next((n for n, s in stages if s in (RunStatus.PENDING, RunStatus.PROCESSING)), None)
        if open_stage is not None:
            return open_stage.upper()
    done = [n for n, s in stages if s in (RunStatus.SUCCESS, RunStatus.FAILED)]
    return (done[-1] if done else "chunking").upper()


def _durations(run: RunRow | None) -> dict[str, float | None]:
    if run is None:
        return {}
    out: dict[str, float | None] = {
        name: round(value, 1) if value is not None else None for name, value in run.durations_ms.items()
    }
    spent = [v for v in run.durations_ms.values() if v is not None]
    out["total"] = round(sum(spent), 1) if spent else None
    return out


def document_event(
    doc: DocumentRow,
    run: RunRow | None,
    tallies: Mapping[str, UnitTally],
    *,
    job_id: str | None,
    trigger: str,
    unchanged: bool = False,
) -> dict[str, Any]:
    """The event of one document from its row, its run (None: it has none) and its rows' tallies."""
    status = _STATUS.get(doc.status, "processing")
    event: dict[str, Any] = {
        "event": DOCUMENT_EVENT,
        "status": status,
        "trigger": trigger,
        "job_id": job_id,
        "doc_id": doc.doc_id,
        "user_id": doc.user_id,
        "set_id": doc.set_id,
        "key": doc.source_uri,  # a record's key, a file's source path (events are for the deployment's systems)
        "source": doc.source_uri,
        "filename": doc.filename,
        "stage": str(_stage(status, run)),
        "stages": dict(run.stages) if run is not None else {},
        "failed_stage": run.failed_stage if run is not None else (Stage.LOADING.value if status == "failed" else None),
        "recover_from_stage": run.recover_from_stage if run is not None else None,
        "error": doc.error if status != "success" else None,
        "unchanged": unchanged,
        "run_id": run.run_id if run is not None else None,
        "chunks": asdict(tallies.get("chunk", UnitTally())),
        "durations_ms": _durations(run),
        "at": utcnow().isoformat(),
    }
    if "section" in tallies:
        event["sections"] = asdict(tallies["section"])
    return event


def document_events(
    store: TruthStore,
    docs: Sequence[DocumentRow],
    *,
    trigger: str,
    job_id: str | None = None,
    runs: Mapping[int, RunRow] | None = None,
    unchanged: frozenset[int] = frozenset(),
) -> list[dict[str, Any]]:
    """One event per document of ``docs``; a document's newest run is looked up unless ``runs`` has it."""
    runs = dict(runs or {})
    tallies = store.unit_tallies([d.doc_id for d in docs])
    events = []
    for doc in docs:
        run = runs.get(doc.doc_id)
        if run is None:
            newest = store.runs(doc_id=doc.doc_id)
            run = newest[0] if newest else None
        event = document_event(
            doc, run, tallies.get(doc.doc_id, {}), job_id=job_id, trigger=trigger, unchanged=doc.doc_id in unchanged
        )
        events.append(event)
    return events


def job_document_events(
    store: TruthStore,
    *,
    job_id: str,
    user_id: int,
    set_id: int,
    files: Sequence[str],
    report: Mapping[str, Any] | None,
) -> list[dict[str, Any]]:
    """The events of a finished ingest job: every document its files hold, and every document it ran.

    A document of the job's files that the job neither ran nor failed to load was unchanged.
    """
    ran: dict[int, RunRow] = {}
    for run in store.runs(job_id=job_id):  # newest first: keep each document's newest run of this job
        ran.setdefault(run.doc_id, run)
    found: dict[int, DocumentRow] = {}
    for name in files:
        path = Path(name).expanduser().resolve()
        of_file = store.documents_of_file(user_id, set_id, str(path))  # indexed: an upload's files are files
        if not of_file and path.is_dir():
            of_file = store.find_documents_under(user_id, set_id, str(path))
        found.update((d.doc_id, d) for d in of_file)
    for doc_id in sorted(set(ran) - set(found)):  # documents of the set that the job indexed without parsing them
        found[doc_id] = store.get_document(doc_id)
    docs = [found[doc_id] for doc_id in sorted(found)]
    failed_files = {str(f.get("source")) for f in (report or {}).get("failures", [])}
    unchanged = frozenset(d.doc_id for d in docs if d.doc_id not in ran and d.file_uri not in failed_files)
    return document_events(store, docs, trigger="ingest", job_id=job_id, runs=ran, unchanged=unchanged)
