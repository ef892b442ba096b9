"""Pipeline runs of the SQL truth store: one per document version, with per-stage status and durations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Unpack

from sqlalchemy import Connection, bindparam, func, insert, select, update

from ragindex.clock import utcnow
from ragindex.store import schema
from ragindex.store.options import RunFilter
from ragindex.store.records import RunRow
from ragindex.store.sql.core import CH, DOC, RUN, SqlCore, batches, clip_error, given, new_id, status_col
from ragindex.store.sql.rows import run_row
from ragindex.store.states import IndexStatus, Lifecycle, RunStatus
from ragindex.types import VectorKind


class SqlRuns(SqlCore):
    """The runs role (:class:`~ragindex.store.protocol.RunStore`)."""

    def start_run(self, doc_id: int, *, job_id: str | None = None, sparse: bool = False, bm25: bool = True) -> int:
        """Open a pipeline run for a document; every stage PENDING (SKIPPED for disabled kinds)."""
        enabled: set[str] = {
            VectorKind.DENSE,
            *([VectorKind.BM25] if bm25 else []),
            *([VectorKind.SPARSE] if sparse else []),
        }
        with self._tx() as conn:
            return insert_run(conn, doc_id, job_id=job_id, enabled=enabled, now=utcnow(), owner_id=self.owner_id)

    def start_index_runs(
        self, doc_ids: Sequence[int], *, job_id: str | None = None, sparse: bool = False, bm25: bool = True
    ) -> dict[int, int]:
        """Open runs whose loading and chunking are SKIPPED (documents indexed without being parsed), in one tx.

        Returns doc_id -> run_id.
        """
        enabled: set[str] = {
            VectorKind.DENSE,
            *([VectorKind.BM25] if bm25 else []),
            *([VectorKind.SPARSE] if sparse else []),
        }
        now = utcnow()
        with self._tx() as conn:
            return {
                d: insert_run(conn, d, job_id=job_id, enabled=enabled, now=now, owner_id=self.owner_id, parsed=False)
                for d in doc_ids
            }

    def index_outcomes(self, doc_ids: Sequence[int], kinds: Sequence[str]) -> dict[int, dict[str, str | None]]:
        """Per document: for each kind, None if every ACTIVE chunk is SUCCESS, else the first error seen.

        One query per 500 documents; the ingest settles thousands of runs with it.
        """
        out: dict[int, dict[str, str | None]] = {d: dict.fromkeys(kinds) for d in doc_ids}
        cols = [status_col(k) for k in kinds]
        with self._tx() as conn:
            for part in batches(list(doc_ids)):
                rows = conn.execute(
                    select(CH.doc_id, CH.last_error, *cols).where(
                        CH.doc_id.in_(part), CH.lifecycle_status == Lifecycle.ACTIVE
                    )
                )
                for doc_id, last_error, *statuses in rows:
                    for kind, status in zip(kinds, statuses, strict=True):
                        if status not in (None, IndexStatus.SUCCESS) and out[doc_id][kind] is None:
                            out[doc_id][kind] = last_error or f"{kind} copy is {status}"
        return out

    def settle_runs(self, outcomes: Sequence[Mapping[str, Any]]) -> None:
        """Close many runs and set their documents' status in one transaction.

        Each outcome: run_id, doc_id, status, failed_stage, error, total_ms and ``stages``
        (stage name -> (status, duration_ms)).
        """
        if not outcomes:
            return
        now = utcnow()
        by_columns: dict[tuple[str, ...], list[dict[str, Any]]] = {}  # one executemany per set of columns written
        for item in outcomes:
            values = _closed(item["status"], item["failed_stage"], item["error"], item["total_ms"], now)
            for stage, (status, duration) in item["stages"].items():
                values[f"{stage}_status"] = status
                values[f"{stage}_ms"] = duration
            by_columns.setdefault(tuple(values), []).append({"b_run_id": item["run_id"], **values})
        with self._tx() as conn:
            for columns, rows in by_columns.items():
                statement = update(schema.pipeline_runs).where(RUN.run_id == bindparam("b_run_id"))
                conn.execute(statement.values({c: bindparam(c) for c in columns}), rows)
            conn.execute(
                update(schema.documents)
                .where(DOC.doc_id == bindparam("b_doc_id"))
                .values(status=bindparam("b_status"), error=bindparam("b_error"), updated_at=now),
                [
                    {"b_doc_id": i["doc_id"], "b_status": i["status"], "b_error": clip_error(i["error"])}
                    for i in outcomes
                ],
            )

    def set_stage(
        self, run_id: int, stage: str, status: str, *, duration_ms: float | None = None, chunk_count: int | None = None
    ) -> None:
        """Record one stage's status (and duration) of a run."""
        name = stage.lower()
        values: dict[str, Any] = {f"{name}_status": status}
        if duration_ms is not None:
            values[f"{name}_ms"] = duration_ms
        if chunk_count is not None:
            values["chunk_count"] = chunk_count
        with self._tx() as conn:
            conn.execute(update(schema.pipeline_runs).where(RUN.run_id == run_id).values(**values))

    def finish_run(
        self, run_id: int, status: str, *, total_ms: float, failed_stage: str | None = None, error: str | None = None
    ) -> None:
        """Close a run as SUCCESS or FAILED (with the failed stage, where a resume starts)."""
        values = _closed(status, failed_stage, error, total_ms, utcnow())
        with self._tx() as conn:
            conn.execute(update(schema.pipeline_runs).where(RUN.run_id == run_id).values(**values))

    def runs(self, **where: Unpack[RunFilter]) -> list[RunRow]:
        """Pipeline runs (of a ``doc_id``, ``job_id`` or ``status``, when given), newest first (at most ``limit``)."""
        cond = given(
            (RUN.doc_id, where.get("doc_id")), (RUN.job_id, where.get("job_id")), (RUN.status, where.get("status"))
        )
        limit = where.get("limit")
        with self._tx() as conn:
            query = select(schema.pipeline_runs).where(*cond).order_by(RUN.run_id.desc())
            rows = conn.execute(query if limit is None else query.limit(limit)).all()
        return [run_row(r._mapping) for r in rows]

    def latest_runs(self, status: str | None = None) -> list[RunRow]:
        """The newest run of every document (optionally only those with ``status``)."""
        with self._tx() as conn:
            newest = select(func.max(RUN.run_id)).group_by(RUN.doc_id).scalar_subquery()
            query = select(schema.pipeline_runs).where(RUN.run_id.in_(newest), *given((RUN.status, status)))
            return [run_row(r._mapping) for r in conn.execute(query.order_by(RUN.doc_id))]


def insert_run(
    conn: Connection,
    doc_id: int,
    *,
    job_id: str | None,
    enabled: set[str],
    now: datetime,
    owner_id: str | None,
    parsed: bool = True,
) -> int:
    """Open a run inside the caller's transaction (run by claim owner ``owner_id``); disabled kinds are SKIPPED.

    ``parsed=False``: a run that only indexes (its loading and chunking SKIPPED: a resumed or relabelled document).
    """

    def pending_if_enabled(kind: VectorKind) -> RunStatus:
        return RunStatus.PENDING if kind in enabled else RunStatus.SKIPPED

    before = RunStatus.PENDING if parsed else RunStatus.SKIPPED
    result = conn.execute(
        insert(schema.pipeline_runs).values(
            doc_id=doc_id,
            job_id=job_id,
            status=RunStatus.PROCESSING,
            loading_status=before,
            chunking_status=before,
            dense_status=RunStatus.PENDING,
            bm25_status=pending_if_enabled(VectorKind.BM25),
            sparse_status=pending_if_enabled(VectorKind.SPARSE),
            chunk_count=0,
            owner_id=owner_id,
            started_at=now,
        )
    )
    return new_id(result.inserted_primary_key)


def _closed(
    status: str, failed_stage: str | None, error: str | None, total_ms: float | None, now: datetime
) -> dict[str, Any]:
    """The columns that close a run: a FAILED one resumes from the stage it failed at."""
    return {
        "status": status,
        "failed_stage": failed_stage,
        "recover_from_stage": failed_stage,
        "error": clip_error(error),
        "total_ms": total_ms,
        "finished_at": now,
    }
