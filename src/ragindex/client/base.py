"""What the sync and the async client share: the base URL, the key header, the timeout and reading an answer."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import httpx

from ragindex.client.calls import Call
from ragindex.client.errors import error_from_response, transport_error
from ragindex.errors import BackendError, ValidationError

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 30.0


class ClientBase:
    """Connection settings of a client of one ragindex service.

    Args:
        url: The service's base URL, e.g. ``http://127.0.0.1:8000``.
        api_key: A key from ``ragindex keys create`` (sent as ``Authorization: Bearer <key>``); every ``/v1``
            route needs one, the probes (``health``, ``ready``, ``metrics``) do not.
        timeout: Seconds to wait for the connection and for each read or write (None: wait forever).
        headers: More headers for every request.
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValidationError("url", f"give the service's http(s) URL, e.g. http://127.0.0.1:8000 (got {url!r})")
        if timeout is not None and timeout <= 0:
            raise ValidationError("timeout", "must be a positive number of seconds, or None to wait forever")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._headers = {"Accept": "application/json", **(headers or {})}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._http = self._connect()

    def _connect(self) -> Any:
        """The httpx client of the subclass (blocking or asyncio), built once the connection settings are checked."""
        raise NotImplementedError

    def _failed(self, exc: httpx.TransportError) -> BackendError:
        return transport_error(self.url, exc, self.timeout)

    @staticmethod
    def _answer(call: Call[T], response: httpx.Response) -> T:
        if response.status_code >= 400 and response.status_code not in call.accept:
            raise error_from_response(response)
        try:
            return call.read(response)
        except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
            raise BackendError(
                f"{response.request.method} {response.request.url} answered {response.status_code} with a body that "
                f"is not a ragindex answer ({type(exc).__name__}); is the URL a ragindex service?",
                url=str(response.request.url),
                status=response.status_code,
            ) from exc

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"


def name_method(method: Any, route: Callable[..., Call[Any]], owner: str) -> None:
    """Make ``method``, a client's method sending ``route``'s call, look like it: its name, docstring, signature.

    The signature is the route's with ``self`` first, returning what the call's answer parses into.
    """
    signature = inspect.signature(route)
    answer = str(signature.return_annotation).removeprefix("Call[").removesuffix("]")
    this = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__name__ = route.__name__
    method.__qualname__ = f"{owner}.{route.__name__}"
    method.__doc__ = route.__doc__
    method.__signature__ = signature.replace(
        parameters=[this, *signature.parameters.values()], return_annotation=answer
    )
