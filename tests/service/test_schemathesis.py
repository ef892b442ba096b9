"""Schemathesis over every operation of ``/openapi.json``, against real services: zero failures, default checks.

Two services on real loopback ports, each with its own data dir and otherwise the default settings (so the schema
they serve is the one a deployment serves): ``reading`` holds a small ingested set and takes the operations that
only read; ``writing`` takes those that change data (uploads, deletes, chunk edits, cancels, repair, optimise),
so they cannot break the reading fixtures, and runs the stateful workflows (Schemathesis follows the links it
infers: an upload's job, a search hit's chunk and document). A tenant key calls every operation; the admin-only
ones (status, verify, repair, optimise, metrics) get an admin key.

Every operation runs Schemathesis's examples, coverage and fuzzing phases with up to ``MAX_EXAMPLES`` generated
cases each, then ``WORKFLOWS`` stateful scenarios; examples are derandomised (the same cases each run). Two things
the OpenAPI document cannot say get help here, each the way Schemathesis provides for it: a page cursor is opaque
(its ``format`` names the listing, and a strategy here draws real cursors of it), and an upload's file names are
not part of the schema of its body (each generated file is sent named ``upload-<n>.txt``; the route's 415 for a
name without a known suffix has its own test in test_service_api.py).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky
from schemathesis import Case, GenerationMode

from conftest import ServerThread, upload, wait_for_job
from ragindex.config.settings import Settings
from ragindex.metadata import value_type
from ragindex.paging import encode_cursor
from ragindex.service.app import create_app
from ragindex.service.keys import create_key
from ragindex.service.schemas import MAX_ID
from ragindex.service.settings import ServiceSettings

pytestmark = [
    pytest.mark.integration,
    # a record key's pattern names every character str.isprintable() refuses (701 ranges): Hypothesis warns that the
    # repr of a strategy built from it is long, which says nothing about the cases
    pytest.mark.filterwarnings("ignore:Generating overly large repr:hypothesis.errors.HypothesisWarning"),
]

TENANT, ADMIN = 61, 62
MAX_EXAMPLES = 300
WORKFLOWS = 50
UPLOAD = ("POST", "/v1/sets/{set_id}/documents")
WRITING = {
    UPLOAD,
    ("DELETE", "/v1/documents/{doc_id}"),
    ("DELETE", "/v1/jobs/{job_id}"),
    ("PATCH", "/v1/chunks/{chunk_id}"),
    ("DELETE", "/v1/chunks/{chunk_id}"),
    ("POST", "/v1/repair"),
    ("POST", "/v1/optimize"),
    ("POST", "/v1/backup"),
    ("PUT", "/v1/sets/{set_id}/records/{key}"),
    ("POST", "/v1/sets/{set_id}/records"),
    ("DELETE", "/v1/sets/{set_id}/records/{key}"),
}
RECORDS = {("PUT", "/v1/sets/{set_id}/records/{key}"), ("POST", "/v1/sets/{set_id}/records")}
SEARCH = ("POST", "/v1/search")
ADMIN_ONLY = {("GET", "/v1/status"), ("POST", "/v1/verify"), ("POST", "/v1/repair"), ("POST", "/v1/optimize")}
ADMIN_ONLY |= {("GET", "/metrics"), ("POST", "/v1/backup")}
FUZZ = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)

DOCUMENTS = {
    "bones.md": "# Bones\n\nVitamin D helps the body absorb calcium, which keeps bones strong.\n\n"
    "## Teeth\n\nCalcium also hardens the enamel of teeth.\n",
    "comets.txt": "A comet's tail points away from the Sun, pushed by the solar wind.\n",
}

# a cursor is opaque: the schema gives its alphabet, and these draw real ones of each listing (any sort key)
schemathesis.openapi.format(
    "ragindex-documents-cursor", st.integers(0, MAX_ID).map(lambda doc_id: encode_cursor("documents", [doc_id]))
)
schemathesis.openapi.format(
    "ragindex-jobs-cursor",
    st.tuples(st.datetimes(), st.text("0123456789abcdef", min_size=1, max_size=32)).map(
        lambda key: encode_cursor("jobs", [key[0].isoformat(), key[1]])
    ),
)


@schemathesis.hook
def before_call(context: Any, case: Case, **kwargs: Any) -> None:
    """Two more things no schema can say, for the cases that the schema allows (positive ones).

    A metadata field keeps the type of the first value its set saw: a generated record's field is named after its
    value's type (``year`` holding a number becomes ``year_number``), so two cases never give one field two types
    (the 422 of a clash has its own test in test_records_api.py). And a search's ``filter`` names fields of the
    set, which generated names are not (its 422 for an unknown field is tested there too): it is left out.
    """
    meta = case.meta
    if meta is not None and meta.generation.mode != GenerationMode.POSITIVE:
        return
    operation = (case.method.upper(), case.operation.path)
    if not isinstance(case.body, dict):
        return
    if operation == SEARCH:
        case.body.pop("filter", None)
    elif operation in RECORDS:
        for record in case.body.get("records", [case.body]):
            if isinstance(record, dict):
                _typed_names(record)
                for chunk in record.get("chunks") or ():
                    if isinstance(chunk, dict):
                        _typed_names(chunk)


def _typed_names(item: dict[str, Any]) -> None:
    metadata = item.get("metadata")
    if isinstance(metadata, dict):
        item["metadata"] = {
            f"{name[:48]}_{value_type(value) if value is not None else 'null'}": value
            for name, value in metadata.items()
        }


CALLS: Counter[str] = Counter()
"""Requests sent per operation (``METHOD /path``), and per phase (``phase:<name>``)."""


@schemathesis.hook
def after_call(context: Any, case: Case, response: Any) -> None:
    CALLS[case.operation.label] += 1
    CALLS[f"phase:{case.meta.phase.name if case.meta else 'explicit'}"] += 1


@dataclass
class Api:
    """One running service and its two keys."""

    url: str
    tenant: str
    admin: str


def _named_files(case: Case) -> dict[str, Any]:
    """The files of a generated upload as a client sends them: named, and each name once (``upload-<n>.txt``)."""
    files = case.body.get("files") if isinstance(case.body, dict) else None
    if (case.method.upper(), case.path) != UPLOAD or not isinstance(files, list) or not files:
        return {}  # not an upload, or not a list of files (a negative case): as generated
    if not all(isinstance(part, str | bytes) for part in files):
        return {}
    contents = [_content(part) for part in files]
    return {"files": [("files", (f"upload-{n}.txt", content)) for n, content in enumerate(contents)]}


def _content(part: str | bytes) -> bytes:
    data = getattr(part, "data", part)  # generated binary content comes wrapped, in a `str` subclass
    return data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")


@contextmanager
def _serve(root: Path) -> Iterator[tuple[ServerThread, Any]]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAGINDEX_ONNX_CACHE_DIR", str(root / "onnx"))
        settings_ = Settings(_env_file=None, data_dir=root / "data")  # type: ignore[call-arg]
        app = create_app(settings_, ServiceSettings(_env_file=None))  # type: ignore[call-arg]
    server = ServerThread(app)
    server.start()
    try:
        yield server, app.state.service
    finally:
        server.stop()


def _api(server: ServerThread, state: Any) -> Api:
    tenant = str(create_key(state.store, user_id=TENANT)["key"])
    admin = str(create_key(state.store, user_id=ADMIN, admin=True)["key"])
    api = Api(server.url, tenant, admin)
    with httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {tenant}"}, timeout=120) as client:
        answer = upload(client, 1, DOCUMENTS)
        assert answer.status_code == 202, answer.text
        job = wait_for_job(client, answer.json()["job_id"])
    assert job["status"] == "succeeded", job
    return api


@pytest.fixture(scope="module")
def reading(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    with _serve(tmp_path_factory.mktemp("fuzz-reading")) as (server, state):
        yield _api(server, state)


@pytest.fixture(scope="module")
def writing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    with _serve(tmp_path_factory.mktemp("fuzz-writing")) as (server, state):
        yield _api(server, state)


def _schema(api: Api, key: str) -> Any:
    schema = schemathesis.openapi.from_url(f"{api.url}/openapi.json")
    schema.config.update(headers={"Authorization": f"Bearer {key}"})  # the key schemathesis knows as the auth
    return schema


def _writes(ctx: Any) -> bool:
    return (ctx.operation.method.upper(), ctx.operation.path) in WRITING


def _admin_only(ctx: Any) -> bool:
    return (ctx.operation.method.upper(), ctx.operation.path) in ADMIN_ONLY


@pytest.fixture(scope="module")
def reading_schema(reading: Api) -> Any:
    return _schema(reading, reading.tenant)


@pytest.fixture(scope="module")
def reading_admin_schema(reading: Api) -> Any:
    return _schema(reading, reading.admin)


@pytest.fixture(scope="module")
def writing_schema(writing: Api) -> Any:
    return _schema(writing, writing.tenant)


@pytest.fixture(scope="module")
def writing_admin_schema(writing: Api) -> Any:
    return _schema(writing, writing.admin)


@pytest.fixture(autouse=True)
def _node_id(request: pytest.FixtureRequest) -> None:
    # schemathesis 4.32's fixture loader renames the test of each operation through `node._nodeid`, which it
    # reads first; pytest 9.2 has no such attribute (its `nodeid` is computed), so the loader needs it set
    request.node._nodeid = request.node.nodeid


reads = schemathesis.pytest.from_fixture("reading_schema").exclude(_writes).exclude(_admin_only)
admin_reads = schemathesis.pytest.from_fixture("reading_admin_schema").include(_admin_only).exclude(_writes)
writes = schemathesis.pytest.from_fixture("writing_schema").include(_writes).exclude(_admin_only)
admin_writes = schemathesis.pytest.from_fixture("writing_admin_schema").include(lambda c: _writes(c) and _admin_only(c))


@reads.parametrize()
@FUZZ
def test_operations_that_read(case: Case) -> None:
    case.call_and_validate()


@admin_reads.parametrize()
@FUZZ
def test_admin_operations_that_read(case: Case) -> None:
    case.call_and_validate()


@writes.parametrize()
@FUZZ
def test_operations_that_write(case: Case) -> None:
    case.call_and_validate(**_named_files(case))


@admin_writes.parametrize()
@FUZZ
def test_admin_operations_that_write(case: Case) -> None:
    case.call_and_validate()


def test_workflows_across_operations(writing: Api) -> None:
    schema = _schema(writing, writing.tenant).exclude(_admin_only)
    failures: list[BaseException] = []

    class Workflow(schema.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: Case) -> dict[str, Any]:
            return _named_files(case)

        def validate_response(self, response: Any, case: Case, **kwargs: Any) -> None:
            try:
                super().validate_response(response, case, **kwargs)
            except Exception as exc:
                failures.append(exc)
                raise

    started = time.monotonic()
    try:
        Workflow.run(settings=settings(FUZZ, max_examples=WORKFLOWS, stateful_step_count=6))
    except Flaky:
        # the server's data changes from one scenario to the next (uploads, deletes), so Hypothesis cannot always
        # replay a scenario's draws: as Schemathesis's own runner does, that is a failure only if a check failed
        if failures:
            raise
    assert failures == []
    assert time.monotonic() - started < 900, "the workflows hang"  # a bound that only detects a hang


def test_every_operation_was_fuzzed(reading: Api) -> None:
    spec = httpx.get(f"{reading.url}/openapi.json").json()
    operations = {f"{method.upper()} {path}" for path, item in spec["paths"].items() for method in item}
    assert {f"{m} {p}" for m, p in WRITING | ADMIN_ONLY} <= operations, "a listed operation is gone from the schema"
    if not CALLS:
        pytest.skip("counts the requests of the tests above: run it with them")
    print(f"schemathesis requests: {sum(CALLS[o] for o in operations)}; {dict(sorted(CALLS.items()))}")
    assert {o: CALLS[o] for o in operations if CALLS[o] < 5} == {}, "operations that were hardly called"
