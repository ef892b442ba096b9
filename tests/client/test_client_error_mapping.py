"""The inverse of the service's error mapping, as pure logic: name and status -> RagindexError class."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import ragindex
from ragindex import errors
from ragindex.client.errors import build_error, error_class, error_from_response


@pytest.mark.parametrize(
    ("name", "status", "expected"),
    [
        ("NotFoundError", 404, errors.NotFoundError),
        ("ValidationError", 422, errors.ValidationError),
        ("AuthenticationError", 401, errors.AuthenticationError),
        ("PermissionDeniedError", 403, errors.PermissionDeniedError),
        ("JobStateError", 409, errors.JobStateError),
        ("MassDeleteError", 409, errors.MassDeleteError),
        ("FingerprintMismatchError", 409, errors.FingerprintMismatchError),
        ("IndexLockedError", 503, errors.IndexLockedError),
        ("RetrievalBackendError", 503, errors.RetrievalBackendError),
        ("RetrievalEncodingError", 502, errors.RetrievalEncodingError),
        ("DocumentLoadError", 400, errors.DocumentLoadError),
        # names the client does not know, or that disagree with the status: the status's family
        ("Conflict", 409, errors.IntegrityError),
        ("BadRequest", 400, errors.InputError),
        ("MethodNotAllowed", 405, errors.InputError),
        ("InternalError", 500, errors.RagindexError),
        ("NotFoundError", 500, errors.RagindexError),
        ("SomethingNewError", 503, errors.BackendError),
        (None, 413, errors.DocumentTooLargeError),
        (None, 418, errors.InputError),
    ],
)
def test_error_class_by_name_then_status(name: str | None, status: int, expected: type[errors.RagindexError]) -> None:
    assert error_class(name, status) is expected


def test_every_family_answers_with_its_own_class() -> None:
    """For every class of the tree, what the service sends (name, http_status) maps back onto that class."""
    pending: list[type[errors.RagindexError]] = [errors.RagindexError]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if sum(c.__name__ == cls.__name__ for c in _tree()) == 1:
            assert error_class(cls.__name__, cls.http_status) is cls, cls


def _tree() -> list[type[errors.RagindexError]]:
    found, pending = [], [errors.RagindexError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def test_build_error_keeps_the_servers_message_and_field() -> None:
    exc = build_error(errors.ValidationError, "top_k: must be at least 1", {"field": "top_k"})
    assert isinstance(exc, errors.InputError) and exc.message == "top_k: must be at least 1" and exc.field == "top_k"
    assert str(exc) == "top_k: must be at least 1" and exc.to_dict()["context"] == {"field": "top_k"}


def test_a_body_that_is_not_json_maps_by_status() -> None:
    request = httpx.Request("GET", "http://127.0.0.1:9/v1/me")
    html = httpx.Response(502, text="<html>Bad Gateway</html>", request=request)
    exc = error_from_response(html)
    assert type(exc) is errors.EncodingError and "Bad Gateway" in exc.message
    assert exc.context == {"status": 502, "url": "http://127.0.0.1:9/v1/me"}


def test_the_client_imports_without_the_service_extra_or_torch() -> None:
    """The client is part of the core install: it needs neither FastAPI/uvicorn nor the engine's heavy modules."""
    code = (
        "import sys\n"
        "for name in ('fastapi', 'starlette', 'uvicorn', 'multipart'):\n"
        "    sys.modules[name] = None\n"
        "import ragindex.client\n"
        "heavy = [m for m in ('torch', 'sqlalchemy', 'qdrant_edge', 'sentence_transformers') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(ragindex.__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"
