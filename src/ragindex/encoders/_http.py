"""The retrying JSON-over-HTTP client shared by the remote encoders (OpenAI-compatible, bge-m3 services).

Failure policy (seed section 6.6, extended to every remote encoder):

* a 4xx answer is permanent: :class:`~ragindex.errors.EncodingError` at once, no retry, except
  408 (request timeout) and 429 (rate limited), which say "try later" rather than "wrong request";
* a 5xx answer, a network error or a timeout is retried up to ``max_retries`` times with a linear
  backoff (``backoff * attempt`` seconds), then raised as :class:`~ragindex.errors.EncodingError`;
* an answer that is not JSON is an error of the service (retried like a 5xx);
* a ``Retry-After`` header (seconds) on a retried answer lengthens the wait, capped at
  ``MAX_RETRY_AFTER`` seconds.

The API key travels only in the ``Authorization`` header. It is never logged, and every error
message is scrubbed of it (and of any ``user:password@`` in the URL) before it is raised.
"""

from __future__ import annotations

import logging
import time
import weakref
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import numpy as np

from ragindex.closing import Closing
from ragindex.errors import ConfigurationError, EncodingError

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({408, 429})
MAX_RETRY_AFTER = 60.0
_DETAIL_CHARS = 300


def display_url(url: str) -> str:
    """``url`` without credentials (``user:password@``) and without query string, for messages and logs."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port is not None:
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def float_matrix(rows: Any, *, service: str, noun: str, hint: str = "") -> np.ndarray:
    """``rows`` (an answer's vectors) as a float32 ``(n, dim)`` array of finite values with ``dim > 0``.

    Raises:
        EncodingError: ``"{service} answered {noun} that are not equal-length float lists{hint}"``, or
            ``"{service} answered malformed {noun} of shape ..."``.
    """
    try:
        out = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EncodingError(f"{service} answered {noun} that are not equal-length float lists{hint}") from exc
    if out.ndim != 2 or out.shape[1] == 0 or not np.isfinite(out).all():
        raise EncodingError(f"{service} answered malformed {noun} of shape {out.shape}")
    return out


class RetryingJsonClient(Closing):
    """POSTs JSON to one service with bounded retries; one connection pool per instance.

    Args:
        base_url: Service root, e.g. ``http://encoder:8080`` (paths are appended to it).
        timeout: Seconds per request (connect, read, write and pool each).
        max_retries: Retries after the first attempt (0: one attempt only).
        backoff: Seconds of the linear backoff step (the n-th retry waits ``n * backoff``).
        api_key: Bearer token, sent as ``Authorization: Bearer <key>``.
        service: Name used in error messages (``"embeddings API"``, ``"bge-m3 service"``).

    The pool is released by :meth:`close` (or leaving the ``with`` block), at the latest when the
    client is garbage collected.
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        api_key: str | None = None,
        service: str = "encoder service",
    ) -> None:
        if max_retries < 0:
            raise ConfigurationError(f"max_retries must be >= 0, got {max_retries}")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.service = service
        self._secret = api_key or None
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(timeout=timeout, headers=headers, follow_redirects=False)
        self._finalizer = weakref.finalize(self, self._client.close)

    def close(self) -> None:
        """Release the connection pool (idempotent)."""
        self._finalizer()

    def _scrub(self, text: str) -> str:
        if self._secret:
            text = text.replace(self._secret, "***")
        return text

    def post_json(self, path: str, payload: dict[str, Any]) -> Any:
        """POST ``payload`` to ``base_url + path`` and return the decoded JSON answer.

        Raises:
            EncodingError: A permanent 4xx, or the last failure once the retries are spent.
        """
        url = f"{self.base_url}{path}"
        where = f"{self.service} at {display_url(url)}"
        attempts = self.max_retries + 1
        last = ""
        retry_after = 0.0
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                time.sleep(max(self.backoff * (attempt - 1), retry_after))
            retry_after = 0.0
            try:
                response = self._client.post(url, json=payload)
            except httpx.TimeoutException as exc:
                last = f"timed out after {self.timeout:g}s ({type(exc).__name__})"
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                status = response.status_code
                if status < 400:
                    try:
                        return response.json()
                    except ValueError:
                        last = f"HTTP {status} with a body that is not JSON"
                else:
                    last = f"HTTP {status}: {_detail(response)}"
                    retry_after = _retry_after(response)
                    if status < 500 and status not in RETRY_STATUSES:
                        raise EncodingError(
                            self._scrub(f"{where} refused the request: {last}"), service=self.service, status=status
                        )
            log.warning("%s failed (attempt %d of %d): %s", where, attempt, attempts, self._scrub(last))
        raise EncodingError(self._scrub(f"{where} failed after {attempts} attempt(s): {last}"), service=self.service)


class HttpEncoder(Closing):
    """What the remote encoders share: a :class:`RetryingJsonClient` to ``url``, their repr, ``close`` and ``with``."""

    url: str
    model: str
    _http: RetryingJsonClient

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={display_url(self.url)!r}, model={self.model!r})"

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._http.close()


def _retry_after(response: httpx.Response) -> float:
    """Seconds asked for by a ``Retry-After`` header (the numeric form), capped; 0 when absent or a date."""
    try:
        seconds = float(response.headers.get("retry-after", "0"))
    except ValueError:
        return 0.0
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def _detail(response: httpx.Response) -> str:
    """The error text of an answer: OpenAI's ``error.message``, FastAPI's ``detail`` or the raw body."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:_DETAIL_CHARS] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and "message" in error:
            return str(error["message"])[:_DETAIL_CHARS]
        if "detail" in body:
            return str(body["detail"])[:_DETAIL_CHARS]
    return str(body)[:_DETAIL_CHARS]
