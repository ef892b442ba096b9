"""Chunk and run states, and the transitions the state machine allows (DESIGN.md, seed section 3)."""

from __future__ import annotations

from enum import StrEnum

from ragindex.errors import IllegalTransitionError


class IndexStatus(StrEnum):
    """Status of one index copy (dense, bm25 or sparse) of a chunk."""

    PENDING = "PENDING"
    INDEXING = "INDEXING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"


class Lifecycle(StrEnum):
    """Business lifecycle of a document or chunk; REMOVED leaves search at once."""

    ACTIVE = "ACTIVE"
    REMOVED = "REMOVED"


class RunStatus(StrEnum):
    """Status of a pipeline run and of each of its stages."""

    PENDING = "PENDING"
    PROCESSING = "PROCESSING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"


class Stage(StrEnum):
    """Stages of a document's pipeline run, in order."""

    LOADING = "LOADING"
    CHUNKING = "CHUNKING"
    DENSE = "DENSE"
    BM25 = "BM25"
    SPARSE = "SPARSE"


CLAIMABLE: tuple[IndexStatus, ...] = (IndexStatus.PENDING, IndexStatus.FAILED)

ALLOWED_TRANSITIONS: frozenset[tuple[IndexStatus, IndexStatus]] = frozenset(
    {
        (IndexStatus.PENDING, IndexStatus.INDEXING),  # claim
        (IndexStatus.FAILED, IndexStatus.INDEXING),  # claim for a retry
        (IndexStatus.INDEXING, IndexStatus.SUCCESS),  # index copy written and confirmed
        (IndexStatus.INDEXING, IndexStatus.FAILED),  # encoder or index write failed
        (IndexStatus.INDEXING, IndexStatus.PENDING),  # stale claim released by repair
        (IndexStatus.SUCCESS, IndexStatus.PENDING),  # content changed, or repair found the copy missing
        (IndexStatus.FAILED, IndexStatus.PENDING),  # explicit reindex
    }
)


def check_transition(current: IndexStatus, target: IndexStatus, *, chunk_id: str | None = None) -> None:
    """Raise :class:`IllegalTransitionError` unless ``current -> target`` is allowed.

    Note that SUCCESS -> INDEXING is never allowed: a claim can not pull a finished copy back.
    """
    if (current, target) not in ALLOWED_TRANSITIONS:
        raise IllegalTransitionError(
            f"illegal chunk state transition {current} -> {target}", chunk_id=chunk_id, current=current, target=target
        )


class CollectionState(StrEnum):
    """Lifecycle of a collection (an index copy): built, read, then retired by a reindex."""

    BUILDING = "BUILDING"
    ACTIVE = "ACTIVE"
    RETIRED = "RETIRED"


class WindowState(StrEnum):
    """State of a window of the score-drift watch: OPEN while searches fill it, then CLOSED."""

    OPEN = "OPEN"
    CLOSED = "CLOSED"
