"""Dependencies: the service state, the settings, the engine and the calling key's principal; strict parameters."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BeforeValidator, StringConstraints
from pydantic.json_schema import SkipJsonSchema, WithJsonSchema
from pydantic_core import PydanticCustomError

from ragindex.aio import AsyncEngine
from ragindex.config.settings import Settings
from ragindex.errors import AuthenticationError, PermissionDeniedError
from ragindex.service.executor import ServiceEngine
from ragindex.service.hygiene import CHECKED_KEY, INVALID_KEY, MISSING_KEY
from ragindex.service.jobs import JobRunner
from ragindex.service.keys import Principal, authenticate
from ragindex.service.metrics import Metrics
from ragindex.service.settings import ServiceSettings
from ragindex.service.sources import SourcePaths
from ragindex.service.store import ServiceStore


@dataclass
class ServiceState:
    """Everything the routes use, built by the app's lifespan.

    ``engine`` is the service's one engine (the job thread and the reconciler call it directly); ``aengine`` wraps
    it for the routes, which await its calls on its bounded pool (``RAGINDEX_ASYNC_WORKERS`` threads).
    """

    settings: Settings
    service: ServiceSettings
    engine: ServiceEngine
    aengine: AsyncEngine
    store: ServiceStore
    jobs: JobRunner
    metrics: Metrics
    blob_root: Path
    suffixes: frozenset[str]
    rerank_supported: bool
    sources: SourcePaths
    extra: dict[str, object] = field(default_factory=dict)


async def get_state(request: Request) -> ServiceState:
    """The state of the running app (a coroutine: FastAPI runs a plain function on its thread pool, ~0.2 ms a hop)."""
    state: ServiceState = request.app.state.service
    return state


def get_settings(state: Annotated[ServiceState, Depends(get_state)]) -> Settings:
    """The engine settings (override in tests with ``app.dependency_overrides``)."""
    return state.settings


def get_engine(state: Annotated[ServiceState, Depends(get_state)]) -> ServiceEngine:
    """The service's one engine."""
    return state.engine


_bearer = HTTPBearer(auto_error=False, description="An API key from `ragindex keys create`.")


async def get_principal(
    request: Request,
    state: Annotated[ServiceState, Depends(get_state)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """The tenant and role of the request's ``Authorization: Bearer`` key (401 without a valid one).

    :class:`~ragindex.service.hygiene.RequestGate` has checked the key of a ``/v1`` request before its body was
    read: its principal is taken, not looked up again. Otherwise (an app without the gate) the key's lookup is one
    primary-key read, run on the event loop: a hop to the thread pool for every request cost more than the read
    (docs/service.md, "The read path").
    """
    checked = request.scope.get(CHECKED_KEY)
    if checked is not None and credentials is not None and checked[0] == credentials.credentials:
        principal: Principal = checked[1]
        return principal
    return principal_of(state, credentials)


def principal_of(state: ServiceState, credentials: HTTPAuthorizationCredentials | None) -> Principal:
    """The principal of ``credentials`` (:func:`get_principal`'s work)."""
    if credentials is None:
        raise AuthenticationError(MISSING_KEY)
    principal = authenticate(state.store, credentials.credentials)
    if principal is None:
        raise AuthenticationError(INVALID_KEY)
    return principal


def require_admin(principal: Annotated[Principal, Depends(get_principal)]) -> Principal:
    """The principal of an admin key (403 for a tenant key)."""
    if not principal.admin:
        raise PermissionDeniedError("this endpoint needs an admin key (`ragindex keys create --admin`)")
    return principal


def metrics_access(
    state: Annotated[ServiceState, Depends(get_state)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """Let a ``/metrics`` scrape through: anyone with ``RAGINDEX_METRICS_PUBLIC=true``, else an admin key only."""
    if state.service.metrics_public:
        return
    if credentials is None:
        raise AuthenticationError(
            "/metrics needs an admin key: send `Authorization: Bearer <key>` (`ragindex keys create --admin`), "
            "or set RAGINDEX_METRICS_PUBLIC=true to serve it without one"
        )
    require_admin(principal_of(state, credentials))


# ---------------------------------------------------------------------- strict path and query parameters
# A path or query value is text; pydantic's lax parsing reads much of it as something else (`+7`, ` 7` and `7_000`
# as integers; `yes`, `on`, `1` and `0` as booleans). These read a value only as its JSON spelling: an integer is
# a JSON number with no fraction (`7`, and `7.0` or `7e0`, which JSON Schema's `integer` also is), a boolean
# `true` or `false`.
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _json_integer(value: object) -> object:
    if not isinstance(value, str):
        return value
    number = Decimal(value) if _JSON_NUMBER.fullmatch(value) and len(value) <= 40 else None
    if number is None or number != number.to_integral_value():
        raise PydanticCustomError("int_parsing", "Input should be a whole number (like 42)")
    if number.adjusted() > 18:  # past every id (BIGINT), and `1e999999999` must not become a billion-digit int
        raise PydanticCustomError("int_parsing_size", "Input should be less than 10**19")
    return int(number)


def _json_boolean(value: object) -> object:
    if isinstance(value, str) and value not in ("true", "false"):
        raise PydanticCustomError("bool_parsing", "Input should be true or false")
    return value


JSON_INTEGER = BeforeValidator(_json_integer)
"""Put after the ``Query``/``Path`` of an integer parameter: a JSON number with no fraction (``42``, ``-1``).

(After it, so the parameter's bounds stay JSON Schema's ``minimum``/``maximum`` in the OpenAPI document.)"""
TRUE_OR_FALSE = BeforeValidator(_json_boolean)
"""Put after the ``Query`` of a boolean parameter: ``true`` or ``false`` only."""


def cursor_query(listing: str) -> Any:
    """The ``cursor`` parameter of a listing: the ``next_cursor`` of its previous page.

    Its JSON Schema format names the listing (``ragindex-<listing>-cursor``): a cursor is opaque, and another
    listing's is refused.
    """
    return Query(
        description="`next_cursor` of the previous page (opaque; another listing's cursor is refused).",
        json_schema_extra={"format": f"ragindex-{listing}-cursor"},
    )


Cursor = Annotated[str, StringConstraints(max_length=512), WithJsonSchema({"type": "string"})] | SkipJsonSchema[None]
"""The type of a ``cursor`` parameter (None: the first page; a query parameter is never null in the schema).

Its schema is its format: no length or alphabet of a string that is not a cursor would make it one."""


StateDep = Annotated[ServiceState, Depends(get_state)]
CallerDep = Annotated[Principal, Depends(get_principal)]
AdminDep = Annotated[Principal, Depends(require_admin)]
EngineDep = Annotated[ServiceEngine, Depends(get_engine)]
