"""HTTP answers back onto the :class:`~ragindex.errors.RagindexError` tree: the inverse of ``service/errors.py``.

The service answers every error with ``RagindexError.to_dict()``'s shape, ``{"error", "message", "context"?}``
(request validation adds ``detail``), and the status is the class's ``http_status``. So the class is found by its
name, checked against the status; a name this client does not know (a newer server, a proxy, Starlette's own
``BadRequest`` or ``InternalError``) falls back to the family of the status.
"""

from __future__ import annotations

from typing import Any

import httpx

from ragindex import errors
from ragindex.errors import RagindexError

# the family of a status, for an error whose name is unknown here or disagrees with the status
_BY_STATUS: dict[int, type[RagindexError]] = {
    400: errors.InputError,
    401: errors.AuthenticationError,
    403: errors.PermissionDeniedError,
    404: errors.NotFoundError,
    409: errors.IntegrityError,
    413: errors.DocumentTooLargeError,
    415: errors.UnsupportedFormatError,
    422: errors.ValidationError,
    502: errors.EncodingError,
    503: errors.BackendError,
}


def _classes() -> dict[str, type[RagindexError]]:
    """Every RagindexError class imported so far, by name (walked at call time: later imports join)."""
    found: dict[str, type[RagindexError]] = {}
    pending: list[type[RagindexError]] = [RagindexError]
    while pending:
        cls = pending.pop()
        found.setdefault(cls.__name__, cls)
        pending.extend(cls.__subclasses__())
    return found


def error_class(name: str | None, status: int) -> type[RagindexError]:
    """The class of an error answer: the one named ``name`` if it answers with ``status``, else the status's family.

    Args:
        name: The ``error`` field of the body (``None`` when the body had none).
        status: The HTTP status of the answer.
    """
    cls = _classes().get(name or "")
    if cls is not None and cls.http_status == status:
        return cls
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return errors.InputError if 400 <= status < 500 else RagindexError


def build_error(cls: type[RagindexError], message: str, context: dict[str, Any]) -> RagindexError:
    """An instance of ``cls`` carrying the server's message and context as they were sent.

    Subclasses may have other ``__init__`` signatures (``ValidationError(field, message)`` prefixes the field), so
    the instance is made without calling theirs; the message is not changed.
    """
    exc = cls.__new__(cls)
    RagindexError.__init__(exc, message, **context)
    if isinstance(exc, errors.ValidationError):
        exc.field = str(context.get("field", "request"))
    return exc


def error_from_response(response: httpx.Response) -> RagindexError:
    """The RagindexError of an error answer (status >= 400), with ``url`` and ``status`` added to its context.

    Args:
        response: A read answer of the service.
    """
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {"message": response.text.strip()[:500] or response.reason_phrase}
    name = body.get("error")
    message = str(body.get("message") or f"HTTP {response.status_code} {response.reason_phrase}")
    context = dict(body["context"]) if isinstance(body.get("context"), dict) else {}
    if "detail" in body:
        context["detail"] = body["detail"]
    context.setdefault("status", response.status_code)
    context.setdefault("url", str(response.request.url))
    cls = error_class(name if isinstance(name, str) else None, response.status_code)
    return build_error(cls, message, context)


def transport_error(base_url: str, exc: httpx.TransportError, timeout: float | None) -> errors.BackendError:
    """The BackendError of a request that got no answer: the service is down, unreachable or too slow.

    Args:
        base_url: The service's URL (named in the message).
        exc: What httpx raised.
        timeout: The client's timeout in seconds (named when the request timed out).
    """
    url = str(exc.request.url) if _has_request(exc) else base_url
    if isinstance(exc, httpx.TimeoutException):
        return errors.BackendError(
            f"the ragindex service at {base_url} did not answer within {timeout} s ({type(exc).__name__}); "
            "raise the client's `timeout`, or check the service's load",
            url=url,
            timeout=timeout,
        )
    return errors.BackendError(
        f"the ragindex service at {base_url} is unreachable ({type(exc).__name__}: {exc}); "
        "start it with `ragindex serve`, or check the URL",
        url=url,
    )


def _has_request(exc: httpx.TransportError) -> bool:
    try:
        exc.request  # noqa: B018 - httpx raises RuntimeError when the error has no request
    except RuntimeError:
        return False
    return True
