"""Keyword sets of the truth store's methods, written once for the role Protocols and the SQL roles.

Each is a :class:`~typing.TypedDict` that a method takes as ``**kw: Unpack[...]``, so callers pass the
same keywords as ever and type checkers check them; a key left out takes the default its docstring
names, applied by the implementation (``kw.get(key, default)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TypedDict

from ragindex.types import Document


class Limit(TypedDict, total=False):
    """``limit``: at most this many rows (None or left out: all)."""

    limit: int | None


class Attempts(TypedDict, total=False):
    """``max_attempts``: the attempt count at which a copy counts as given up (None or left out: never)."""

    max_attempts: int | None


class RunFilter(Limit, total=False):
    """Which pipeline runs :meth:`~ragindex.store.protocol.RunStore.runs` lists; each key narrows when not None."""

    doc_id: int | None
    job_id: str | None
    status: str | None


class PendingFilter(Limit, Attempts, total=False):
    """Which chunks :meth:`~ragindex.store.protocol.ClaimStore.pending_chunks` offers; None keys do not narrow.

    ``statuses`` (left out: :data:`~ragindex.store.states.CLAIMABLE`) are the statuses of the kind's copy offered.
    """

    doc_ids: Sequence[int] | None
    chunk_ids: Sequence[str] | None
    user_id: int | None
    set_id: int | None
    statuses: Sequence[str]


class _StagedRun(TypedDict):
    job_id: str | None
    chunking_ms: float


class StagedRun(_StagedRun, total=False):
    """The run :meth:`~ragindex.store.protocol.DocumentStore.stage_document` records with a document version.

    ``job_id`` and the stages' durations (``loading_ms`` left out: None); ``parsed`` (left out: None), the
    loaded document, kept as the version's parsed artifact.
    """

    loading_ms: float | None
    parsed: Document | None


class RetryWindow(Limit, total=False):
    """``now`` (None or left out: the clock's now) and ``limit`` of :meth:`ReconcileStore.due_retries`."""

    now: datetime | None


class OwnerRelease(Attempts, total=False):
    """How :meth:`~ragindex.store.protocol.OwnerStore.release_owners` releases.

    ``max_attempts``: a released claim counts an attempt; at this count the chunk goes to FAILED.
    ``everyone_else`` (left out: False): every claim but this store's owner's, with or without an owner row.
    """

    everyone_else: bool
