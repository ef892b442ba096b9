"""The compensation steps that ``repair`` and the periodic reconciler share (seed section 4.6).

Each is one small function over the truth store: release stale claims, close the runs a dead process left
PROCESSING, and set documents whose copies are all written back to SUCCESS.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from ragindex.clock import utcnow
from ragindex.store.protocol import TruthStore
from ragindex.store.records import DocumentRow
from ragindex.store.states import RunStatus, Stage


def release_stale_claims(
    store: TruthStore,
    kinds: Sequence[str],
    stale_seconds: float,
    *,
    max_attempts: int,
    limit: int | None = None,
    dry_run: bool = False,
) -> dict[str, list[str]]:
    """INDEXING claims older than ``stale_seconds``, per kind, released to PENDING (FAILED at ``max_attempts``).

    ``dry_run`` only lists them.
    """
    out: dict[str, list[str]] = {}
    for kind in kinds:
        if dry_run:
            out[kind] = store.stale_claims(kind, stale_seconds, limit=limit)
        else:
            out[kind] = store.release_stale(kind, stale_seconds, limit=limit, max_attempts=max_attempts)
    return out


def settle_stuck_runs(
    store: TruthStore,
    kinds: Sequence[str],
    *,
    stale_seconds: float,
    max_attempts: int | None = None,
    dry_run: bool = False,
) -> tuple[int, list[int]]:
    """Close the runs a dead process left PROCESSING (older than the stale timeout), and set their documents.

    A run whose document has every copy written closes SUCCESS. With ``max_attempts``, a run whose document has
    no work left that an automatic retry may do (its FAILED copies reached ``max_attempts``) closes FAILED at
    its first failed stage; any other run stays open until a later pass finishes its work.
    Returns (stuck runs found, ids of the documents whose run was closed, or would be with ``dry_run``).
    """
    cutoff = utcnow() - timedelta(seconds=stale_seconds)
    stuck = [r for r in store.runs(status=RunStatus.PROCESSING) if r.started_at < cutoff]
    if not stuck:
        return 0, []
    doc_ids = sorted({r.doc_id for r in stuck})
    outcomes = store.index_outcomes(doc_ids, kinds)
    working = (
        set(doc_ids) if max_attempts is None else store.documents_with_work(doc_ids, kinds, max_attempts=max_attempts)
    )
    settled: list[dict[str, Any]] = []
    for run in stuck:
        problems = [(kind, error) for kind, error in outcomes[run.doc_id].items() if error]
        if problems and run.doc_id in working:
            continue
        settled.append(
            {
                "run_id": run.run_id,
                "doc_id": run.doc_id,
                "status": RunStatus.FAILED if problems else RunStatus.SUCCESS,
                "failed_stage": Stage(problems[0][0].upper()) if problems else None,
                "error": problems[0][1] if problems else None,
                "total_ms": None,
                "stages": {
                    k: (RunStatus.FAILED if outcomes[run.doc_id][k] else RunStatus.SUCCESS, None) for k in kinds
                },
            }
        )
    if settled and not dry_run:
        store.settle_runs(settled)
    return len(stuck), list(dict.fromkeys(item["doc_id"] for item in settled))


def recover_documents(
    store: TruthStore, kinds: Sequence[str], documents: Sequence[DocumentRow], *, dry_run: bool = False
) -> list[int]:
    """Documents FAILED at an index stage whose copies are all written now: set SUCCESS; return their ids.

    Documents that failed to load or chunk (no committed content hash) stay FAILED: the next ingest
    of their files parses them again. Their failed runs stay in the history as they were.
    """
    failed = [d for d in documents if d.status == RunStatus.FAILED and d.content_hash]
    if not failed:
        return []
    outcomes = store.index_outcomes([d.doc_id for d in failed], kinds)
    recovered = [d.doc_id for d in failed if not any(outcomes[d.doc_id].values())]
    if not dry_run:
        for doc_id in recovered:
            store.set_document_status(doc_id, RunStatus.SUCCESS, None)
    return recovered
