"""Closing the pipeline runs of one ingest: each touched document's run gets its stages' outcomes and times."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragindex.pipeline.indexer import StageResult
from ragindex.store.protocol import TruthStore
from ragindex.store.states import RunStatus, Stage


@dataclass
class Touched:
    """A document this ingest staged (or indexed without a re-parse), with its open run."""

    doc_id: int
    run_id: int
    chunk_count: int
    chunking_ms: float
    file_uri: str = ""
    source_uri: str = ""
    outcome: str | None = None  # where the document is counted in the report (None: indexed without a re-parse)


def finish_runs(
    store: TruthStore, kinds: Sequence[str], touched: Sequence[Touched], results: dict[str, StageResult]
) -> list[tuple[Touched, str, str | None]]:
    """Close every run of this ingest and settle its document's status, in two queries.

    Returns the documents that failed, with the first failed stage and its error.
    """
    outcomes = store.index_outcomes([t.doc_id for t in touched], kinds)
    settled = []
    failed: list[tuple[Touched, str, str | None]] = []
    for item in touched:
        failed_stage: str | None = None
        error: str | None = None
        stages: dict[str, tuple[str, float]] = {}
        total = item.chunking_ms
        for kind in kinds:
            spent = results[kind].time_by_doc_ms.get(item.doc_id, 0.0) if kind in results else 0.0
            total += spent
            problem = outcomes[item.doc_id][kind]
            stages[kind] = (RunStatus.FAILED if problem else RunStatus.SUCCESS, spent)
            if problem and failed_stage is None:
                failed_stage, error = Stage(kind.upper()), problem
        if failed_stage is not None:
            failed.append((item, failed_stage, error))
        settled.append(
            {
                "run_id": item.run_id,
                "doc_id": item.doc_id,
                "status": RunStatus.FAILED if failed_stage else RunStatus.SUCCESS,
                "failed_stage": failed_stage,
                "error": error,
                "total_ms": total,
                "stages": stages,
            }
        )
    store.settle_runs(settled)
    return failed
