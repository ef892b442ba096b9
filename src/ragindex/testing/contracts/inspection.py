"""The inspection contract: what ``docs list|show`` and ``GET /v1/documents`` read, on every SQL backend.

A backend's test module subclasses :class:`DocumentInspectionContract` and overrides the ``store`` fixture, as
for :class:`~ragindex.testing.contracts.truth_store.TruthStoreContract`. It states the keyset pages of documents
(stable order, filters, cursors), the per-document chunk counts, the loading stage of a run (m008), the run a
failed load records, what a stopped job's runs become, and the document detail built from them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import inspect, text

from ragindex.errors import NotFoundError, ValidationError
from ragindex.paging import encode_cursor
from ragindex.pipeline.cancel import close_open_runs
from ragindex.pipeline.inspection import describe_document, list_documents
from ragindex.store import schema
from ragindex.store.migrations import apply_migrations
from ragindex.store.records import ChunkLayout, DocumentFilter
from ragindex.store.sql import SqlTruthStore
from ragindex.store.states import RunStatus
from ragindex.testing.contracts.truth_store import drafts, index_done, ingest, new_document


def _stage(store: SqlTruthStore, source: str, texts: list[str], *, job_id: str = "job-1") -> tuple[int, list[str]]:
    """Stage a document as an ingest does (document, chunks and run in one transaction)."""
    doc_id, _run, diff = store.stage_document(
        new_document(source),
        ChunkLayout(drafts(*texts), 0, ("dense", "bm25")),
        job_id=job_id,
        chunking_ms=2.0,
        loading_ms=1.25,
    )
    return doc_id, list(diff.added)


class DocumentInspectionContract:
    """Reads behind document inspection; subclasses override the ``store`` fixture."""

    @pytest.fixture
    def store(self) -> Iterator[SqlTruthStore]:
        """A fresh, empty, migrated store; close it after the test."""
        raise NotImplementedError("a backend's test class must override the `store` fixture")

    # ------------------------------------------------------------------ pages of documents
    def test_document_page_is_a_keyset_page_with_filters(self, store: SqlTruthStore) -> None:
        """Pages follow doc_id after ``after``; tenant, set and status filter; REMOVED documents are never listed."""
        ids = [ingest(store, [f"text {n}"], source_uri=f"a{n}.txt")[0] for n in range(5)]
        other_set = ingest(store, ["x"], source_uri="s2.txt", set_id=2)[0]
        other_user = ingest(store, ["y"], source_uri="u2.txt", user_id=2)[0]
        store.set_document_status(ids[1], RunStatus.FAILED, "boom")
        store.remove_documents([ids[4]])

        def page(*, after: int = 0, limit: int = 100, **where: Any) -> list[int]:
            return [d.doc_id for d in store.document_page(DocumentFilter(**where), after=after, limit=limit)]

        assert page(user_id=1) == [*ids[:4], other_set]
        assert page(user_id=1, limit=2) == ids[:2]
        assert page(user_id=1, after=ids[1], limit=2) == ids[2:4]
        assert page(user_id=1, after=ids[3], limit=2) == [other_set]
        assert page(user_id=1, after=other_set) == []
        assert page(user_id=1, set_id=1) == ids[:4]
        assert page(user_id=1, status="FAILED") == [ids[1]]
        assert page(user_id=2) == [other_user]
        assert page() == [*ids[:4], other_set, other_user]

    def test_list_documents_walks_every_page_with_a_cursor(self, store: SqlTruthStore) -> None:
        """Following next_cursor visits each document once; a document added meanwhile never shifts a page."""
        ids = [ingest(store, [f"text {n}"], source_uri=f"a{n}.txt")[0] for n in range(5)]
        first = list_documents(store, user_id=1, limit=2)
        assert [d.doc_id for d in first.documents] == ids[:2] and first.next_cursor
        added = ingest(store, ["late"], source_uri="late.txt")[0]
        seen = [d.doc_id for d in first.documents]
        cursor: str | None = first.next_cursor
        while cursor:
            page = list_documents(store, user_id=1, limit=2, cursor=cursor)
            seen += [d.doc_id for d in page.documents]
            cursor = page.next_cursor
        assert seen == [*ids, added]
        exact = list_documents(store, user_id=1, limit=6)
        assert len(exact.documents) == 6 and exact.next_cursor is None, "a full last page has no next cursor"
        json.dumps(exact.to_dict())

    @pytest.mark.parametrize(
        ("kwargs", "field"),
        [
            ({"cursor": "not-a-cursor"}, "cursor"),
            ({"cursor": encode_cursor("jobs", ["2024-01-01T00:00:00", "j"])}, "cursor"),
            ({"cursor": encode_cursor("documents", ["7"])}, "cursor"),
            ({"status": "PENDING"}, "status"),
            ({"limit": 0}, "limit"),
            ({"limit": 1001}, "limit"),
        ],
    )
    def test_list_documents_rejects_bad_arguments(
        self, store: SqlTruthStore, kwargs: dict[str, object], field: str
    ) -> None:
        """A foreign or forged cursor, a status no document has and a limit out of range are ValidationErrors."""
        with pytest.raises(ValidationError) as caught:
            list_documents(store, **kwargs)  # type: ignore[arg-type]
        assert caught.value.field == field

    # ------------------------------------------------------------------ one document
    def test_document_chunk_counts(self, store: SqlTruthStore) -> None:
        """Live rows per unit, kind and status; REMOVED rows and kinds a row lacks do not count."""
        doc_id, chunk_ids = ingest(store, ["a", "b", "c", "d"])
        index_done(store, chunk_ids[:2])
        claim = store.claim("dense", [chunk_ids[2]])
        store.mark_failed(claim, [chunk_ids[2]], "encoder down")
        store.remove_chunks([chunk_ids[3]])
        assert store.document_chunk_counts(doc_id) == {
            "chunk": {"dense": {"SUCCESS": 2, "FAILED": 1}, "bm25": {"PENDING": 3}},
        }
        assert store.document_chunk_counts(doc_id + 100) == {}

    def test_runs_limit_returns_the_newest(self, store: SqlTruthStore) -> None:
        """runs(doc_id=..., limit=1) is the document's latest run."""
        doc_id = store.upsert_document(new_document())
        store.start_run(doc_id)
        newest = store.start_run(doc_id)
        assert [r.run_id for r in store.runs(doc_id=doc_id, limit=1)] == [newest]

    def test_staged_document_records_its_loading_stage(self, store: SqlTruthStore) -> None:
        """stage_document opens a run whose loading and chunking stages are SUCCESS with their durations."""
        doc_id, _ = _stage(store, "a.txt", ["one", "two"])
        (run,) = store.runs(doc_id=doc_id)
        assert (run.stages["loading"], run.stages["chunking"], run.stages["dense"]) == ("SUCCESS", "SUCCESS", "PENDING")
        assert run.durations_ms["loading"] == pytest.approx(1.25) and run.durations_ms["chunking"] == pytest.approx(2.0)

    def test_a_failed_load_shows_its_error_on_the_loading_stage(self, store: SqlTruthStore) -> None:
        """A run that failed at LOADING shows that stage FAILED with the error; so does a failed load without a run."""
        doc_id = store.record_failed_document(new_document("bad.json"), "DocumentLoadError: invalid JSON")
        legacy = describe_document(store, doc_id, user_id=1)
        assert legacy.run is None and legacy.counts == {}
        assert (legacy.stages[0].status, legacy.stages[0].error) == ("FAILED", "DocumentLoadError: invalid JSON")

        run_id = store.start_run(doc_id, job_id="job-9")
        store.finish_run(run_id, RunStatus.FAILED, total_ms=0.0, failed_stage="LOADING", error="bad")
        detail = describe_document(store, doc_id, user_id=1)
        assert [(s.stage, s.status, s.error) for s in detail.stages] == [
            ("loading", "FAILED", "bad"),
            ("chunking", "PENDING", None),
            ("dense", "PENDING", None),
            ("bm25", "PENDING", None),
            ("sparse", "SKIPPED", None),
        ]
        assert detail.to_dict()["run"] == {
            "run_id": run_id,
            "job_id": "job-9",
            "status": "FAILED",
            "failed_stage": "loading",
            "error": "bad",
            "started_at": detail.run.started_at.isoformat() if detail.run else None,
            "finished_at": detail.run.finished_at.isoformat() if detail.run and detail.run.finished_at else None,
            "total_ms": 0.0,
        }

    def test_describe_document(self, store: SqlTruthStore) -> None:
        """Fields, the latest run's stages, live counts and (when asked) the rows; scoped to the tenant."""
        doc_id, chunk_ids = _stage(store, "docs/a.txt", ["alpha text", "beta text"])
        index_done(store, chunk_ids)
        claim = store.claim("bm25", chunk_ids[:1])
        store.mark_failed(claim, chunk_ids[:1], "bm25 down")

        detail = describe_document(store, doc_id, user_id=1)
        assert detail.chunks is None and detail.run is not None and detail.run.job_id == "job-1"
        assert [(s.stage, s.status) for s in detail.stages] == [
            ("loading", "SUCCESS"),
            ("chunking", "SUCCESS"),
            ("dense", "PENDING"),
            ("bm25", "PENDING"),
            ("sparse", "SKIPPED"),
        ]
        assert detail.counts == {"chunk": {"dense": {"SUCCESS": 2}, "bm25": {"FAILED": 1, "PENDING": 1}}}

        rows = describe_document(store, doc_id, chunks=True).to_dict()["chunks"]
        assert [r["chunk_id"] for r in rows] == chunk_ids
        assert rows[0]["status"] == {"dense": "SUCCESS", "bm25": "FAILED", "sparse": None}
        assert (rows[0]["attempts"], rows[0]["last_error"], rows[0]["preview"]) == (1, "bm25 down", "alpha text")
        payload = json.loads(json.dumps(describe_document(store, doc_id).to_dict()))
        assert payload["document"]["file_hash"] == "f" * 64 and payload["chunks"] is None

        with pytest.raises(NotFoundError):
            describe_document(store, doc_id, user_id=2)
        store.remove_documents([doc_id])
        with pytest.raises(NotFoundError):
            describe_document(store, doc_id, user_id=1)

    # ------------------------------------------------------------------ a stopped job's runs
    def test_close_open_runs_settles_a_stopped_jobs_documents(self, store: SqlTruthStore) -> None:
        """Documents whose copies are all written end SUCCESS; the others FAILED with the reason; others' runs stay."""
        done, done_chunks = _stage(store, "done.txt", ["one", "two"])
        half, half_chunks = _stage(store, "half.txt", ["three", "four"])
        other, _ = _stage(store, "other.txt", ["five"], job_id="job-2")
        index_done(store, done_chunks)
        index_done(store, done_chunks, "bm25")
        index_done(store, half_chunks[:1])

        summary = close_open_runs(store, job_id="job-1", kinds=("dense", "bm25"), reason="cancelled by request")
        assert summary == {"finished": 1, "unfinished": 1}
        assert store.get_document(done).status == "SUCCESS"
        failed = store.get_document(half)
        assert failed.status == "FAILED" and failed.error is not None
        assert failed.error.startswith("cancelled by request: its dense, bm25 copies are unfinished")
        (run,) = store.runs(doc_id=half)
        assert (run.status, run.failed_stage, run.stages["dense"], run.stages["bm25"]) == (
            "FAILED",
            "DENSE",
            "FAILED",
            "PENDING",
        )
        assert store.runs(doc_id=other)[0].status == "PROCESSING", "another job's run is not touched"
        assert close_open_runs(store, job_id="job-1", kinds=("dense",), reason="x") == {"finished": 0, "unfinished": 0}

    # ------------------------------------------------------------------ m008
    def test_m008_adds_the_loading_stage_to_an_older_store(self, store: SqlTruthStore) -> None:
        """A store made before m008 gains the columns and the index; older runs have no loading stage."""
        doc_id = store.upsert_document(new_document())
        started = store.get_document(doc_id).updated_at  # read before the DDL: it locks the table on PostgreSQL
        with store.engine.begin() as conn:
            for column in ("loading_status", "loading_ms"):
                conn.execute(text(f"ALTER TABLE pipeline_runs DROP COLUMN {column}"))
            on_table = " ON documents" if conn.dialect.name in ("mysql", "mariadb") else ""
            conn.execute(text(f"DROP INDEX ix_documents_pages{on_table}"))
            conn.execute(text("DELETE FROM schema_migrations WHERE name = 'm008_document_stages'"))
            conn.execute(
                schema.pipeline_runs.insert().values(
                    doc_id=doc_id,
                    status="SUCCESS",
                    chunking_status="SUCCESS",
                    dense_status="SUCCESS",
                    bm25_status="SUCCESS",
                    sparse_status="SKIPPED",
                    chunk_count=1,
                    started_at=started,
                )
            )

        assert apply_migrations(store.engine) == ["m008_document_stages"]
        with store.engine.connect() as conn:
            columns = {c["name"] for c in inspect(conn).get_columns("pipeline_runs")}
            indexes = {i["name"] for i in inspect(conn).get_indexes("documents")}
        assert {"loading_status", "loading_ms"} <= columns and "ix_documents_pages" in indexes
        (run,) = store.runs(doc_id=doc_id)
        assert run.stages["loading"] is None and run.durations_ms["loading"] is None
        assert describe_document(store, doc_id).stages[0].status is None
        assert apply_migrations(store.engine) == []
