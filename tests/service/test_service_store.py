"""The truth store's service tables (jobs, api_keys: migrations m003/m004) on SQLite, MariaDB and PostgreSQL."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from ragindex.errors import NotFoundError, StoreError
from ragindex.service.keys import authenticate, create_key, hash_key, revoke_key
from ragindex.store.sql import SqlTruthStore

MYSQL_SERVER = os.environ.get("RAGINDEX_TEST_MYSQL", "root@127.0.0.1:3306")
POSTGRES_SERVER = os.environ.get("RAGINDEX_TEST_POSTGRES", "postgres@127.0.0.1:5432")


def _server_db(driver: str, admin_url: str, url_of: str, drop: str, **engine_args: object) -> Iterator[str]:
    pytest.importorskip(driver, reason=f"{driver} is not installed")
    admin = create_engine(admin_url, poolclass=NullPool, connect_args={"connect_timeout": 3}, **engine_args)  # type: ignore[arg-type]
    try:
        conn = admin.connect()
    except Exception as exc:  # no server: skip, never fail
        admin.dispose()
        pytest.skip(f"database server not reachable: {exc}")
    name = f"ragindex_svc_{secrets.token_hex(4)}"
    with conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
        conn.commit()
    try:
        yield url_of + name
    finally:
        with admin.connect() as conn:
            conn.execute(text(drop.format(name=name)))
            conn.commit()
        admin.dispose()


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("mysql", marks=pytest.mark.mysql),
        pytest.param("postgres", marks=pytest.mark.postgres),
    ]
)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlTruthStore]:
    if request.param == "sqlite":
        urls: Iterator[str] = iter([f"sqlite:///{tmp_path / 'truth.db'}"])
    elif request.param == "mysql":
        urls = _server_db(
            "pymysql", f"mysql+pymysql://{MYSQL_SERVER}/", f"mysql+pymysql://{MYSQL_SERVER}/", "DROP DATABASE {name}"
        )
    else:
        urls = _server_db(
            "psycopg",
            f"postgresql+psycopg://{POSTGRES_SERVER}/postgres",
            f"postgresql+psycopg://{POSTGRES_SERVER}/",
            "DROP DATABASE {name} WITH (FORCE)",
            isolation_level="AUTOCOMMIT",
        )
    url = next(urls)
    truth = SqlTruthStore(url)
    try:
        yield truth
    finally:
        truth.close()
        for _ in urls:  # run the generator's cleanup
            pass


def test_jobs_are_scoped_to_their_tenant(store: SqlTruthStore) -> None:
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


def test_api_keys_store_only_hashes_and_revoke(store: SqlTruthStore) -> None:
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
