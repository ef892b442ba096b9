"""Dependencies: the service state, the settings, the engine and the calling key's principal."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ragindex.aio import AsyncEngine
from ragindex.config.settings import Settings
from ragindex.errors import AuthenticationError, PermissionDeniedError
from ragindex.service.executor import ServiceEngine
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


def get_state(request: Request) -> ServiceState:
    """The state of the running app."""
    state: ServiceState = request.app.state.service
    return state


def get_settings(state: Annotated[ServiceState, Depends(get_state)]) -> Settings:
    """The engine settings (override in tests with ``app.dependency_overrides``)."""
    return state.settings


def get_engine(state: Annotated[ServiceState, Depends(get_state)]) -> ServiceEngine:
    """The service's one engine."""
    return state.engine


_bearer = HTTPBearer(auto_error=False, description="An API key from `ragindex keys create`.")


def get_principal(
    state: Annotated[ServiceState, Depends(get_state)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """The tenant and role of the request's ``Authorization: Bearer`` key (401 without a valid one)."""
    if credentials is None:
        raise AuthenticationError("missing API key: send `Authorization: Bearer <key>`")
    principal = authenticate(state.store, credentials.credentials)
    if principal is None:
        raise AuthenticationError("invalid or revoked API key")
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
    require_admin(get_principal(state, credentials))


StateDep = Annotated[ServiceState, Depends(get_state)]
CallerDep = Annotated[Principal, Depends(get_principal)]
AdminDep = Annotated[Principal, Depends(require_admin)]
EngineDep = Annotated[ServiceEngine, Depends(get_engine)]
