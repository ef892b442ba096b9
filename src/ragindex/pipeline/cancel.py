"""Closing the runs of an ingest that was stopped between two batches (a cancelled job).

An ingest stages every changed file first, then indexes the set batch by batch; stopped at a boundary, it holds
no claim, and whatever it committed stays: chunks already indexed stay searchable, the others stay PENDING. What
it leaves open are its documents' runs (PROCESSING). :func:`close_open_runs` settles them from the truth store:
a document whose every copy is written is SUCCESS, any other is FAILED with the reason and where its work went
(the next ingest of its set, or ``ragindex repair``, indexes its PENDING chunks; deleting it drops them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragindex.store.protocol import TruthStore
from ragindex.store.states import RunStatus, Stage


def close_open_runs(store: TruthStore, *, job_id: str, kinds: Sequence[str], reason: str) -> dict[str, int]:
    """Settle the runs of ``job_id`` still PROCESSING; return how many documents ``finished`` and ``unfinished``."""
    runs = store.runs(job_id=job_id, status=RunStatus.PROCESSING)
    if not runs:
        return {"finished": 0, "unfinished": 0}
    outcomes = store.index_outcomes(sorted({r.doc_id for r in runs}), kinds)
    settled: list[dict[str, Any]] = []
    for run in runs:
        problems = outcomes[run.doc_id]
        unfinished = [k for k in kinds if problems[k]]
        stages: dict[str, tuple[str, float | None]] = {
            k: (
                RunStatus.SUCCESS if not problems[k] else RunStatus.FAILED if k == unfinished[0] else RunStatus.PENDING,
                None,
            )
            for k in kinds
        }
        error = None
        if unfinished:
            error = (
                f"{reason}: its {', '.join(unfinished)} copies are unfinished; the next ingest of its set or "
                "`ragindex repair` indexes them (delete the document to drop it)"
            )
        settled.append(
            {
                "run_id": run.run_id,
                "doc_id": run.doc_id,
                "status": RunStatus.FAILED if unfinished else RunStatus.SUCCESS,
                "failed_stage": Stage(unfinished[0].upper()) if unfinished else None,
                "error": error,
                "total_ms": None,
                "stages": stages,
            }
        )
    store.settle_runs(settled)
    finished = sum(1 for item in settled if item["status"] == RunStatus.SUCCESS)
    return {"finished": finished, "unfinished": len(settled) - finished}
