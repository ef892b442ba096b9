"""Which sources a search runs, and what a source that fails does to it (seed 000 sections 5, 9.3 and 9.4).

``RAGINDEX_RECALL_ENABLED_SOURCES`` caps the sources searches may run (default: every configured one); a per-call
``sources`` narrows that further. A source that fails (its encoder unreachable, its index query failing) either
fails the search (``on_source_error="fail"``, the default) or is left out of it (``"degrade"``): the search answers
from the remaining sources and names the failed one in :attr:`~ragindex.types.SearchResult.degraded`. When every
source fails, the first error is raised, whatever the policy. Misconfiguration never degrades: it always raises.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from enum import StrEnum

from ragindex.config.sources import SOURCES, parse_sources
from ragindex.errors import (
    RetrievalBackendError,
    RetrievalConfigurationError,
    RetrievalEncodingError,
    SourceUnavailableError,
    ValidationError,
)
from ragindex.types import VectorKind

__all__ = [
    "SOURCES",
    "OnSourceError",
    "SourceFailures",
    "enabled_by_setting",
    "source_error_policy",
    "requested_sources",
    "resolve",
]

log = logging.getLogger(__name__)

SETTING = "RAGINDEX_RECALL_ENABLED_SOURCES"

SourceError = RetrievalEncodingError | RetrievalBackendError
"""The failures of one source that ``degrade`` can leave out (never a configuration error)."""


class OnSourceError(StrEnum):
    """What a search does when one of its sources fails."""

    FAIL = "fail"
    DEGRADE = "degrade"


def requested_sources(value: str | Iterable[str] | None) -> tuple[str, ...] | None:
    """A per-call ``sources`` override, checked; None when the call gives none.

    Raises:
        ValidationError: On field ``sources``: an unknown name or an empty list.
    """
    if value is None:
        return None
    try:
        return parse_sources(value)
    except ValueError as exc:
        raise ValidationError("sources", str(exc)) from None


def enabled_by_setting(value: str | None) -> tuple[str, ...] | None:
    """The sources ``RAGINDEX_RECALL_ENABLED_SOURCES`` enables; None when unset (every configured source).

    Read on every search, so a value changed on the live settings object applies to the next search.

    Raises:
        RetrievalConfigurationError: The setting names an unknown source or none.
    """
    if value is None:
        return None
    try:
        return parse_sources(value)
    except ValueError as exc:
        raise RetrievalConfigurationError(f"{SETTING}={value!r}: {exc}", setting=SETTING) from None


def source_error_policy(value: str | OnSourceError) -> OnSourceError:
    """The :class:`OnSourceError` named ``value``.

    Raises:
        ValidationError: On field ``on_source_error``: not ``fail`` or ``degrade``.
    """
    try:
        return OnSourceError(value)
    except ValueError:
        valid = ", ".join(p.value for p in OnSourceError)
        raise ValidationError("on_source_error", f"unknown policy {value!r}; valid: {valid}") from None


def resolve(
    hybrid: bool,
    mode_source: str | None,
    configured: tuple[str, ...],
    enabled: tuple[str, ...] | None,
    requested: tuple[str, ...] | None,
) -> tuple[str, ...]:
    """The sources one search runs, in :data:`SOURCES` order.

    ``enabled`` (the setting) is the upper bound: names in it that are not configured are ignored, so the seed's
    ``bm25,sparse,dense`` can be set where learned sparse is not. ``requested`` (the call) must stay inside it and
    name only configured sources. A single mode runs its own source, which must be configured and allowed.

    Raises:
        SourceUnavailableError: A source the call or the mode needs is disabled or not configured (HTTP 422).
        RetrievalConfigurationError: The setting leaves nothing to search.
    """
    allowed = tuple(s for s in configured if enabled is None or s in enabled)
    if requested is not None:
        off = [s for s in requested if s in configured and s not in allowed]
        if off:
            raise SourceUnavailableError(
                f"source {', '.join(off)} is disabled by {SETTING}={','.join(enabled or ())}; search without it "
                f"or enable it there",
                source=off[0],
            )
        missing = [s for s in requested if s not in configured]
        if missing:
            raise _not_configured(missing[0])
        allowed = tuple(s for s in allowed if s in requested)
    if not hybrid:
        assert mode_source is not None
        if mode_source not in configured:
            raise _not_configured(mode_source)
        if mode_source not in allowed:
            raise SourceUnavailableError(
                f"{mode_source} search is disabled by {SETTING}={','.join(enabled or ())}; "
                f"enable {mode_source} there or search with another mode",
                source=mode_source,
            )
        return (mode_source,)
    if not allowed:
        raise RetrievalConfigurationError(
            f"{SETTING}={','.join(enabled or ())} enables none of the configured sources "
            f"({', '.join(configured)}); enable at least one of them",
            setting=SETTING,
        )
    return allowed


def _not_configured(source: str) -> SourceUnavailableError:
    fix = "set RAGINDEX_BM25_ENABLED=true" if source == VectorKind.BM25 else "configure a sparse provider"
    return SourceUnavailableError(f"{source} search is not enabled; {fix} and re-index", source=source)


class SourceFailures:
    """The failed sources of one search, applying its :class:`OnSourceError` policy.

    Args:
        policy: ``fail`` re-raises the first failure at once; ``degrade`` records it and the search goes on.
    """

    def __init__(self, policy: OnSourceError) -> None:
        self.policy = policy
        self.errors: dict[str, SourceError] = {}

    def record(self, source: str, error: SourceError) -> None:
        """Note that ``source`` failed with ``error``; under ``fail`` raise it.

        Raises:
            RetrievalEncodingError | RetrievalBackendError: ``error``, under the ``fail`` policy.
        """
        if self.policy == OnSourceError.FAIL:
            raise error
        log.warning("search degraded: %s left out: %s", source, error.message)
        self.errors[source] = error

    def check_left(self, remaining: Iterable[str]) -> None:
        """Raise the first failure when no source is left to answer from (a degraded search needs one).

        Raises:
            RetrievalEncodingError | RetrievalBackendError: The first recorded failure.
        """
        if self.errors and not any(True for _ in remaining):
            raise next(iter(self.errors.values()))

    @property
    def degraded(self) -> dict[str, str]:
        """Per failed source, why: the failure's message."""
        return {source: error.message for source, error in self.errors.items()}
