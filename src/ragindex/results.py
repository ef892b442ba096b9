"""Typed results of the Engine's management calls: status, chunk edits, deletes, explicit reindexes, stale releases.

Each is a frozen dataclass whose ``to_dict()`` is exactly the JSON that ``ragindex <command> --json`` prints and the
HTTP service answers (key order included), so the wire formats do not depend on the Python types. Mappings are
read-only views and sequences are tuples; ``to_dict()`` gives fresh plain ``dict`` and ``list`` objects.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ragindex.store.states import IndexStatus

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "ChunkUpdate",
    "CollectionStatus",
    "DeleteResult",
    "ReindexResult",
    "SetStatus",
    "StaleRelease",
    "StatusReport",
]


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only copy of ``mapping`` (nested mappings too)."""
    return MappingProxyType({k: _frozen(v) if isinstance(v, Mapping) else v for k, v in mapping.items()})


def _plain(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """A plain ``dict`` copy of a (read-only) mapping, nested mappings too."""
    return {k: _plain(v) if isinstance(v, Mapping) else v for k, v in mapping.items()}


def json_fields(
    obj: DataclassInstance, *, omit: Collection[str] = (), rename: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The fields of a result or report dataclass as a JSON object, in field order.

    Mappings become plain ``dict`` copies (nested ones too) and tuples become lists; other values are kept as
    they are. A ``to_dict()`` adds or replaces the keys whose JSON differs: replacing a key keeps its place.

    Args:
        obj: The dataclass instance.
        omit: Fields left out.
        rename: Field name -> its key in the JSON (the other fields keep their names).
    """
    keys = rename or {}
    return {keys.get(f.name, f.name): _json_value(getattr(obj, f.name)) for f in fields(obj) if f.name not in omit}


def _json_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return _plain(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _freeze_fields(obj: object, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if value is not None:
            object.__setattr__(obj, name, _frozen(value))


def _tuple_fields(obj: object, *names: str) -> None:
    for name in names:
        object.__setattr__(obj, name, tuple(getattr(obj, name)))


# ---------------------------------------------------------------------------------------------------- status
@dataclass(frozen=True)
class SetStatus:
    """Documents and chunks of one (user_id, set_id) by status.

    Attributes:
        user_id: Tenant.
        set_id: Document set.
        documents: Document status (``SUCCESS``, ``FAILED``, ``PROCESSING``, ``REMOVED``, ...) -> count.
        chunks: Vector kind -> chunk status (``PENDING``, ``INDEXING``, ``SUCCESS``, ``FAILED``, ``REMOVED``) -> count.
    """

    user_id: int
    set_id: int
    documents: Mapping[str, int]
    chunks: Mapping[str, Mapping[str, int]]

    def __post_init__(self) -> None:
        _freeze_fields(self, "documents", "chunks")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (an entry of ``status``'s ``sets``)."""
        return json_fields(self)


@dataclass(frozen=True)
class CollectionStatus:
    """A collection recorded in the truth store.

    Attributes:
        collection: Its name.
        state: ``ACTIVE`` (searches read it), ``BUILDING`` (``reindex --into``) or ``RETIRED``.
        dense: The fingerprint of the dense model that built it.
    """

    collection: str
    state: str
    dense: str | None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (an entry of ``status``'s ``collections``)."""
        return json_fields(self)


@dataclass(frozen=True)
class StatusReport:
    """What :meth:`Engine.status <ragindex.engine.Engine.status>` returns: counts per set, then the collections."""

    sets: tuple[SetStatus, ...]
    collections: tuple[CollectionStatus, ...]

    def __post_init__(self) -> None:
        _tuple_fields(self, "sets", "collections")

    @classmethod
    def from_counts(cls, counts: Mapping[str, Any], collections: Sequence[CollectionStatus]) -> StatusReport:
        """Build it from the truth store's ``status_counts()`` (``{"sets": [...]}``) and the collections."""
        sets = tuple(
            SetStatus(user_id=s["user_id"], set_id=s["set_id"], documents=s["documents"], chunks=s["chunks"])
            for s in counts["sets"]
        )
        return cls(sets=sets, collections=tuple(collections))

    def set_status(self, user_id: int, set_id: int) -> SetStatus | None:
        """The counts of one set, or None when it holds nothing."""
        return next((s for s in self.sets if (s.user_id, s.set_id) == (user_id, set_id)), None)

    def to_dict(self) -> dict[str, Any]:
        """The JSON printed by ``ragindex status --json`` (``GET /v1/status`` adds ``jobs``)."""
        return {"sets": [s.to_dict() for s in self.sets], "collections": [c.to_dict() for c in self.collections]}


# ---------------------------------------------------------------------------------------------------- chunk edits
@dataclass(frozen=True)
class ChunkUpdate:
    """What :meth:`Engine.update_chunk <ragindex.engine.Engine.update_chunk>` did to one chunk.

    Attributes:
        chunk_id: The chunk (it keeps its id, which is also its index point id).
        content_changed: The new content differs from the old one.
        reembedded: Its copies were rewritten (the content changed and no kind failed).
        metadata_updated: Metadata was merged.
        statuses: Vector kind -> its copy's status now (None for a kind the chunk does not carry).
        embedded: Vectors computed by the dense encoder.
        reused: Vectors taken from the embedding cache.
        failed: Vector kind -> the error of a copy that could not be written (repair retries it).
        section_id: The chunk's section, whose lexical copies (BM25, learned sparse) hold its text too (None
            without sections); a changed text rewrites the section from its chunks.
        section_statuses: Vector kind -> the status of the section's copy now (empty without a section).
    """

    chunk_id: str
    content_changed: bool
    reembedded: bool
    metadata_updated: bool
    statuses: Mapping[str, str | None]
    embedded: int
    reused: int
    failed: Mapping[str, str]
    section_id: str | None = None
    section_statuses: Mapping[str, str | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _freeze_fields(self, "statuses", "failed", "section_statuses")

    @property
    def ok(self) -> bool:
        """Nothing failed and every copy the chunk and its section carry is SUCCESS."""
        copies = [*self.statuses.values(), *self.section_statuses.values()]
        return not self.failed and all(s in (None, IndexStatus.SUCCESS) for s in copies)

    def to_dict(self) -> dict[str, Any]:
        """The JSON printed by ``ragindex update-chunk --json`` and answered by ``PATCH /v1/chunks/{id}``."""
        return {**json_fields(self), "ok": self.ok}


@dataclass(frozen=True)
class DeleteResult:
    """What a delete (:meth:`~ragindex.engine.Engine.delete_chunks`, ``delete_document``, ``delete_source``) did.

    The rows are REMOVED in the truth store first (gone from search at once), then their index copies are purged.

    Attributes:
        removed: Chunks that went from ACTIVE to REMOVED now (0 when deleting again).
        purged: Index copies purged now.
        purge_failed: Copies whose purge failed (``ragindex repair`` purges them; they are out of search already).
        doc_ids: The documents deleted (empty for a delete by chunk id).
        chunk_ids: Up to 20 of the removed chunk ids.
        errors: Up to 5 distinct purge errors.
        next_action: ``ragindex repair`` when a purge failed, else None.
        missing: The keys of a delete by key that named no document of the set (only then in ``to_dict``).
    """

    removed: int
    purged: int
    purge_failed: int
    doc_ids: tuple[int, ...]
    chunk_ids: tuple[str, ...]
    errors: tuple[str, ...]
    next_action: str | None
    missing: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        _tuple_fields(self, "doc_ids", "chunk_ids", "errors")
        if self.missing is not None:
            _tuple_fields(self, "missing")

    @property
    def ok(self) -> bool:
        """Every purge succeeded."""
        return not self.purge_failed

    def to_dict(self) -> dict[str, Any]:
        """The JSON printed by ``ragindex delete --json`` and answered by the HTTP deletes."""
        out = json_fields(self)
        if self.missing is None:
            del out["missing"]
        return out


# ---------------------------------------------------------------------------------------------------- reindex, repair
@dataclass(frozen=True)
class ReindexResult:
    """What an explicit reindex (:meth:`~ragindex.engine.Engine.reindex_failed`, ``reindex_chunks``) did.

    Attributes:
        chunks: Chunks reset to PENDING and indexed.
        chunk_ids: Up to 20 of them.
        indexed: Vector kind -> copies written.
        failed: Vector kind -> copies that failed again.
        failed_ids: Up to 20 chunks with a failed copy.
        errors: Up to 5 distinct errors.
        embedded: Vectors computed by the dense encoder.
        reused: Vectors taken from the embedding cache.
    """

    chunks: int
    chunk_ids: tuple[str, ...]
    indexed: Mapping[str, int]
    failed: Mapping[str, int]
    failed_ids: tuple[str, ...]
    errors: tuple[str, ...]
    embedded: int
    reused: int

    def __post_init__(self) -> None:
        _tuple_fields(self, "chunk_ids", "failed_ids", "errors")
        _freeze_fields(self, "indexed", "failed")

    @property
    def ok(self) -> bool:
        """No copy failed."""
        return not any(self.failed.values())

    def to_dict(self) -> dict[str, Any]:
        """The JSON printed by ``ragindex reindex --failed/--chunk-id --json``."""
        return json_fields(self)


@dataclass(frozen=True)
class StaleRelease:
    """What :meth:`~ragindex.engine.Engine.repair_stale_indexing` released and indexed.

    Attributes:
        released: Vector kind -> stale INDEXING claims released.
        chunk_ids: Up to 10 of the chunks released.
        indexed: Vector kind -> copies written afterwards (None when nothing was released or no collection exists).
        failed: Vector kind -> copies that failed (None like ``indexed``).
    """

    released: Mapping[str, int]
    chunk_ids: tuple[str, ...]
    indexed: Mapping[str, int] | None = None
    failed: Mapping[str, int] | None = None

    def __post_init__(self) -> None:
        _tuple_fields(self, "chunk_ids")
        _freeze_fields(self, "released", "indexed", "failed")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``indexed`` and ``failed`` only when the released chunks were indexed)."""
        unset = [name for name in ("indexed", "failed") if getattr(self, name) is None]
        return json_fields(self, omit=unset)
