"""The service's own store (jobs, api_keys: migrations m003/m004/m013) on SQLite, MariaDB and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from dbkit import throwaway_database
from ragindex.errors import NotFoundError, StoreError
from ragindex.service.keys import authenticate, create_key, hash_key, revoke_key
from ragindex.service.store import SqlServiceStore
from ragindex.store.sql import SqlTruthStore


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("mysql", marks=pytest.mark.mysql),
        pytest.param("postgres", marks=pytest.mark.postgres),
    ]
)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with ExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite:///{tmp_path / 'truth.db'}"
        else:  # a database of its own per test, dropped afterwards
            url = stack.enter_context(throwaway_database(request.param, prefix="ragindex_svc_"))
        yield url


@pytest.fixture
def store(url: str) -> Iterator[SqlServiceStore]:
    service = SqlServiceStore(url)
    try:
        yield service
    finally:
        service.close()


def test_jobs_are_scoped_to_their_tenant(store: SqlServiceStore) -> None:
    store.create_job("job-a", user_id=1, set_id=2, kind="ingest", status="queued", files=["/b/1/2/a.txt"])
    store.create_job("Job-A", user_id=2, set_id=2, kind="ingest", status="queued", files=[])
    job = store.get_job("job-a", user_id=1)
    assert (job.user_id, job.set_id, job.status, job.files, job.started_at) == (1, 2, "queued", ("/b/1/2/a.txt",), None)
    with pytest.raises(NotFoundError):
        store.get_job("job-a", user_id=2)  # ids compare exactly: "Job-A" is user 2's other job
    assert store.get_job("Job-A", user_id=2).user_id == 2
    store.set_job_status("job-a", "running", started=True)
    assert [j.job_id for j in store.jobs_with_status(["queued", "running"])] == ["job-a", "Job-A"]
    report = {"documents": {"added": 1}, "notes": ["é ✓"]}
    store.set_job_status("job-a", "succeeded", finished=True, report=report)
    done = store.get_job("job-a")
    assert done.status == "succeeded" and done.report == report and done.finished_at is not None
    assert done.started_at is not None and done.finished_at >= done.started_at
    assert [j.job_id for j in store.jobs_with_status(["queued", "running"])] == ["Job-A"]


def test_api_keys_store_only_hashes_and_revoke(store: SqlServiceStore) -> None:
    tenant = create_key(store, user_id=5, name="ci")
    admin = create_key(store, user_id=6, admin=True)
    principal = authenticate(store, tenant["key"])
    assert principal is not None and (principal.user_id, principal.admin) == (5, False)
    assert authenticate(store, admin["key"]).admin is True  # type: ignore[union-attr]
    assert authenticate(store, tenant["key"].upper()) is None
    assert authenticate(store, "rgx_" + "x" * 43) is None
    rows = store.list_api_keys()
    assert [r.key_id for r in rows] == [tenant["key_id"], admin["key_id"]]
    assert rows[0].key_hash == hash_key(tenant["key"]) and tenant["key"] not in repr(rows)
    assert rows[0].prefix == tenant["key"][:12]
    with pytest.raises(StoreError):  # one hash, one key
        store.create_api_key(key_id="other", key_hash=rows[0].key_hash, prefix="rgx_", user_id=9, admin=False)
    revoke_key(store, tenant["key_id"])
    assert authenticate(store, tenant["key"]) is None
    with pytest.raises(NotFoundError):
        revoke_key(store, tenant["key_id"])
    assert store.list_api_keys(user_id=5)[0].revoked_at is not None


def test_the_truth_store_knows_nothing_of_the_service(url: str) -> None:
    """The truth store alone makes no service table; the service store adds its own beside it."""
    from sqlalchemy import inspect

    truth = SqlTruthStore(url)
    try:
        assert not {"jobs", "api_keys"} & set(inspect(truth.engine).get_table_names())
        service = SqlServiceStore(url)
        try:
            assert {"jobs", "api_keys", "chunks"} <= set(inspect(truth.engine).get_table_names())
            service.create_job("j1", user_id=1, set_id=1, kind="ingest", status="queued", files=[])
            assert truth.list_documents() == [] and service.get_job("j1").status == "queued"
        finally:
            service.close()
    finally:
        truth.close()


def test_a_database_made_by_an_earlier_version_is_not_migrated_again(url: str) -> None:
    """Where the truth store once made the service tables (m001-m004 in one list), nothing is applied twice."""
    from sqlalchemy import create_engine

    from ragindex.clock import utcnow
    from ragindex.service.schema import SERVICE_MIGRATIONS, jobs
    from ragindex.store.migrations import MIGRATIONS, apply_migrations

    engine = create_engine(url)
    try:
        applied = apply_migrations(engine, (*MIGRATIONS[:2], *SERVICE_MIGRATIONS[:2]))  # the single list of 0.1
        assert applied == ["m001_initial_schema", "m002_mysql_exact_keys_and_times", "m003_jobs", "m004_api_keys"]
        with engine.begin() as conn:
            conn.execute(
                jobs.insert().values(
                    job_id="old", user_id=1, set_id=1, kind="ingest", status="succeeded", files=[], created_at=utcnow()
                )
            )
    finally:
        engine.dispose()
    service = SqlServiceStore(url)
    try:
        assert apply_migrations(service.engine, SERVICE_MIGRATIONS) == []
        assert service.get_job("old").status == "succeeded"
    finally:
        service.close()


def test_list_jobs_pages_newest_first_per_tenant(store: SqlServiceStore) -> None:
    """Keyset pages by (created_at, job_id) descending: every job once, in order, even when created together."""
    for n in range(5):
        store.create_job(f"job-{n}", user_id=1, set_id=1, kind="ingest", status="queued", files=[])
    store.create_job("theirs", user_id=2, set_id=1, kind="ingest", status="queued", files=[])
    store.set_job_status("job-2", "failed", finished=True, error="x")
    every = store.list_jobs(user_id=1)
    assert [j.job_id for j in every] == [f"job-{n}" for n in (4, 3, 2, 1, 0)]
    seen: list[str] = []
    before = None
    while True:
        page = store.list_jobs(user_id=1, before=before, limit=2)
        seen += [j.job_id for j in page]
        if len(page) < 2:
            break
        before = (page[-1].created_at, page[-1].job_id)
    assert seen == [j.job_id for j in every]
    assert [j.job_id for j in store.list_jobs(user_id=1, status="failed")] == ["job-2"]
    assert [j.job_id for j in store.list_jobs(user_id=2)] == ["theirs"]


def test_set_job_status_with_expected_is_a_compare_and_set(store: SqlServiceStore) -> None:
    """Only a job in one of the expected states moves; the answer says whether it did."""
    store.create_job("j", user_id=1, set_id=1, kind="ingest", status="queued", files=[])
    assert store.set_job_status("j", "cancelled", finished=True, expected=["queued"]) is True
    assert store.set_job_status("j", "running", started=True, expected=["queued"]) is False
    job = store.get_job("j")
    assert job.status == "cancelled" and job.started_at is None and job.finished_at is not None
    assert store.set_job_status("j", "running") is True, "without expected the move is unconditional"


def test_jobs_count_their_starts_and_a_database_made_before_m013_counts_from_zero(url: str) -> None:
    """``jobs.starts`` (m013) is added where it lacks; ``started`` counts a start, ``unstarted`` takes it back."""
    from sqlalchemy import create_engine, text

    from ragindex.clock import utcnow
    from ragindex.service.schema import SERVICE_MIGRATIONS
    from ragindex.store.migrations import MIGRATIONS, apply_migrations

    engine = create_engine(url)
    try:
        apply_migrations(engine, (*MIGRATIONS[:2], *SERVICE_MIGRATIONS[:2]))
        with engine.begin() as conn:
            conn.execute(text("ALTER TABLE jobs DROP COLUMN starts"))  # the table as m003 made it before m013
            conn.execute(
                text(
                    "INSERT INTO jobs (job_id, user_id, set_id, kind, status, files, created_at) "
                    "VALUES ('old', 1, 1, 'ingest', 'running', '[]', :now)"
                ),
                {"now": utcnow()},
            )
    finally:
        engine.dispose()
    service = SqlServiceStore(url)
    try:
        assert apply_migrations(service.engine, SERVICE_MIGRATIONS) == []
        assert service.get_job("old").starts == 0
        service.create_job("new", user_id=1, set_id=1, kind="ingest", status="queued", files=[])
        assert service.get_job("new").starts == 0
        for n in (1, 2):
            assert service.set_job_status("new", "running", started=True)
            assert service.get_job("new").starts == n
        assert service.set_job_status("new", "queued", unstarted=True, expected=["running"])
        job = service.get_job("new")
        assert (job.status, job.starts) == ("queued", 1)
        assert service.set_job_status("old", "running", started=True) and service.get_job("old").starts == 1
    finally:
        service.close()
