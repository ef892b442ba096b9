"""Rows the truth store hands to the layers above (plain frozen dataclasses, no SQLAlchemy types)."""

from __future__ import annotations

import json
from collections.abc import Collection, ItemsView, Iterator, KeysView, Mapping, Sequence, ValuesView
from dataclasses import dataclass, field, fields
from datetime import datetime
from types import MappingProxyType
from typing import Any

from ragindex.hashing import sha256_text
from ragindex.sketch import ScoreSketch
from ragindex.types import Block, ChunkDraft, PageSpan, VectorKind


@dataclass(frozen=True, slots=True)
class NewDocument:
    """A document about to be recorded (or re-recorded) by an ingest."""

    user_id: int
    set_id: int
    source_uri: str
    file_uri: str
    file_hash: str
    content_hash: str
    filename: str
    size: int
    parser: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    chunking_fingerprint: str = ""


@dataclass(frozen=True, slots=True)
class ChunkLayout:
    """The rows a document version's chunking becomes: its drafts, the bucket they are routed to, their kinds.

    ``kinds``: the enabled vector kinds; ``unit_kinds``: the vector kinds of each unit's new rows (default:
    ``kinds`` for every row; with sections, the lexical kinds belong to sections and dense to chunks).
    """

    drafts: Sequence[ChunkDraft]
    bucket_id: int
    kinds: Collection[str]
    unit_kinds: Mapping[str, Collection[str]] | None = None


@dataclass(frozen=True, slots=True)
class DocumentFilter:
    """Which documents a listing shows: those of a tenant, of a set and with a processing status, each when given."""

    user_id: int | None = None
    set_id: int | None = None
    status: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentRow(NewDocument):
    """A document of the truth store: the version an ingest recorded, with its id and its state."""

    doc_id: int
    lifecycle_status: str
    status: str
    error: str | None
    chunk_count: int
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """The parsed artifact of a document's current version: the markdown its chunks were cut from.

    ``text`` is what the loader rendered (:attr:`ragindex.types.Document.text`); ``blocks`` are its layout elements
    (characters ``[start, end)`` of ``text``, with page and bbox where the parser saw them); ``pages`` the start of
    each page of a paginated source. ``content_hash`` is the sha256 of ``text``, the document's content hash when
    the artifact was recorded.
    """

    doc_id: int
    content_hash: str
    parser: str
    text: str
    blocks: tuple[Block, ...]
    pages: tuple[PageSpan, ...]
    page_count: int | None
    metadata: Mapping[str, Any]
    created_at: datetime

    @property
    def chars(self) -> int:
        """Length of the text in characters."""
        return len(self.text)


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A chunk of the truth store with its per-kind index statuses."""

    chunk_id: str
    doc_id: int
    user_id: int
    set_id: int
    bucket_id: int
    chunk_index: int
    content: str
    content_hash: str
    start_line: int | None
    end_line: int | None
    page: int | None
    section: str | None
    token_count: int | None
    lifecycle_status: str
    dense_status: str | None
    bm25_status: str | None
    sparse_status: str | None
    attempts: int
    last_error: str | None
    metadata: Mapping[str, Any]
    unit: str = "chunk"
    section_id: str | None = None
    context: str | None = None
    chunk_type: str = "text"

    @property
    def indexed_text(self) -> str:
        """What is embedded and BM25-indexed: the context line, then the content (the content alone without one)."""
        return indexed_text(self.content, self.context)

    def owns_point(self, kind: str) -> bool:
        """Whether ``kind``'s write creates this row's point (see :func:`point_owner`)."""
        return point_owner({k: self.status_of(k) for k in VectorKind}) == kind

    def status_of(self, kind: str) -> str | None:
        """The status column of vector kind ``kind`` (dense, bm25, sparse)."""
        return {"dense": self.dense_status, "bm25": self.bm25_status, "sparse": self.sparse_status}[kind]


def point_owner(statuses: Mapping[str, str | None]) -> str | None:
    """The kind whose write creates a row's whole point: its first enabled kind in stage order.

    Dense for a chunk; for a section, which has no dense copy, its first lexical kind (bm25). The other kinds are
    written onto that point afterwards, and the owner's write resets them (it replaces the point).
    """
    return next((k for k in VectorKind if statuses.get(k) is not None), None)


def indexed_text(content: str, context: str | None) -> str:
    """The indexed form of a chunk or section: ``context`` on a line of its own, then ``content``."""
    return f"{context}\n{content}" if context else content


@dataclass(frozen=True, slots=True)
class ChunkText:
    """What reading a section needs of a chunk: its id, text and lines (no statuses, no metadata)."""

    chunk_id: str
    content: str
    start_line: int | None
    end_line: int | None


@dataclass(frozen=True, slots=True)
class SectionText:
    """An ACTIVE section's stored text with the texts of its ACTIVE chunks, in document order (a drift check)."""

    section_id: str
    bucket_id: int
    content: str
    chunks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RowText:
    """New text for one chunk or section row (see :meth:`~ragindex.store.protocol.ChunkStore.rewrite_rows`).

    ``content`` and ``context`` replace the row's; ``expect_hash`` is its content hash as the caller read it: the
    row is written only while its hash is still that one (a compare-and-set against a concurrent edit).
    """

    chunk_id: str
    content: str
    context: str | None
    expect_hash: str

    @property
    def content_hash(self) -> str:
        """The hash the row has once written: of its indexed text (context line, then content)."""
        return sha256_text(indexed_text(self.content, self.context))


class JsonObject(Mapping[str, Any]):
    """A JSON object column as read, decoded on first use (``{}`` for NULL, an empty or a non-object value).

    Backfill reads the metadata of every candidate, but a search shows the metadata of the hits it returns only:
    decoding it lazily saves a ``json.loads`` per candidate. A driver that decodes JSON itself hands a dict.
    """

    __slots__ = ("_raw", "_value")

    def __init__(self, raw: str | bytes | Mapping[str, Any] | None) -> None:
        self._raw = raw
        self._value: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, raw: str | bytes | Mapping[str, Any] | None) -> Mapping[str, Any]:
        """``raw`` as a mapping: itself when a driver decoded it already, a shared ``{}`` when empty."""
        if isinstance(raw, Mapping):
            return raw
        if not raw or raw in ("{}", "null", b"{}", b"null"):
            return _EMPTY
        return cls(raw)

    @property
    def value(self) -> Mapping[str, Any]:
        """The decoded object."""
        if self._value is None:
            decoded = json.loads(self._raw) if isinstance(self._raw, str | bytes) else self._raw
            self._value = decoded if isinstance(decoded, Mapping) else {}
        return self._value

    def __getitem__(self, key: str) -> Any:
        return self.value[key]

    def get(self, key: str, default: Any = None) -> Any:
        """``key``'s value, or ``default`` (the decoded dict's own ``get``, as the views below)."""
        return self.value.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self.value

    def keys(self) -> KeysView[str]:
        """The decoded dict's own view: ``{**obj}`` and loops run at dict speed, not through Mapping's mixins."""
        return self.value.keys()

    def items(self) -> ItemsView[str, Any]:
        """The decoded dict's items view."""
        return self.value.items()

    def values(self) -> ValuesView[Any]:
        """The decoded dict's values view."""
        return self.value.values()

    def __iter__(self) -> Iterator[str]:
        return iter(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __repr__(self) -> str:
        return repr(self.value)


_EMPTY: Mapping[str, Any] = MappingProxyType({})


CHUNK_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(ChunkRow))
"""The columns of a chunk row, in :class:`ChunkRow`'s field order (a backfill row starts with them)."""
_AT = {name: at for at, name in enumerate(CHUNK_COLUMNS)}
_METADATA = _AT["metadata"]


class ChunkView:
    """A chunk joined with its document, as retrieval backfill needs it (read-only).

    Backfill reads dozens of candidates for a search that returns a few hits: the :class:`ChunkRow` is built from
    the row as read on first use of :attr:`chunk` (a hit's), and its JSON metadata decoded only then. What fusion,
    grouping and the section members need of every candidate (``chunk_id``, ``doc_id``, ``unit``, ``section_id``,
    ``section``, ``chunk_index``, ``content``, ``start_line``, ``end_line``) is read from that row directly.

    Args:
        chunk: The chunk row, or its values in :data:`CHUNK_COLUMNS` order (a longer row's first ones).
        source_uri: The document's source.
        filename: The document's file name.
        doc_metadata: The document's metadata.
        record: Whether the document is a record (upserted under its key) rather than a file.
    """

    __slots__ = ("_chunk", "_values", "doc_metadata", "filename", "record", "source_uri")

    def __init__(
        self,
        chunk: ChunkRow | Sequence[Any],
        source_uri: str,
        filename: str,
        doc_metadata: Mapping[str, Any],
        record: bool = False,
    ) -> None:
        if isinstance(chunk, ChunkRow):
            self._chunk: ChunkRow | None = chunk
            self._values: Sequence[Any] = tuple(getattr(chunk, name) for name in CHUNK_COLUMNS)
        else:
            self._chunk, self._values = None, chunk
        self.source_uri = source_uri
        self.filename = filename
        self.doc_metadata = doc_metadata
        self.record = record

    @property
    def chunk(self) -> ChunkRow:
        """The chunk row (built on first use)."""
        if self._chunk is None:
            values = list(self._values[: len(CHUNK_COLUMNS)])
            values[_METADATA] = JsonObject.of(values[_METADATA])
            self._chunk = ChunkRow(*values)
        return self._chunk

    chunk_id = property(lambda self: self._values[0], doc="The chunk's id.")
    doc_id = property(lambda self: self._values[1], doc="Its document's id.")
    chunk_index = property(lambda self: self._values[_AT["chunk_index"]], doc="Its place in the document.")
    content = property(lambda self: self._values[_AT["content"]], doc="Its text.")
    start_line = property(lambda self: self._values[_AT["start_line"]], doc="1-based first line, if known.")
    end_line = property(lambda self: self._values[_AT["end_line"]], doc="1-based last line, if known.")
    section = property(lambda self: self._values[_AT["section"]], doc="Its heading, if any.")
    unit = property(lambda self: self._values[_AT["unit"]], doc="``chunk`` or ``section``.")
    section_id = property(lambda self: self._values[_AT["section_id"]], doc="Its section row's id, if any.")

    def _key(self) -> tuple[Any, ...]:
        return (self.chunk, self.source_uri, self.filename, dict(self.doc_metadata))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChunkView) and self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ChunkView(chunk={self.chunk!r}, source_uri={self.source_uri!r}, filename={self.filename!r})"


@dataclass(frozen=True, slots=True)
class ChunkDiff:
    """Outcome of replacing a document's chunks: which chunk ids were kept, added and removed.

    ``requeued``: the kept rows' copies went back to PENDING (the document's metadata changed): they are written
    again, with their vectors from the embedding cache.
    """

    kept: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    requeued: bool = False


@dataclass(frozen=True, slots=True)
class Claim:
    """Chunks this worker owns for one vector kind, and the token that proves it."""

    kind: str
    token: str
    chunk_ids: tuple[str, ...]
    requested: int

    @property
    def complete(self) -> bool:
        """Whether every requested chunk was claimed (a mismatch means another worker or a stale filter)."""
        return len(self.chunk_ids) == self.requested


@dataclass(frozen=True, slots=True)
class RunRow:
    """A pipeline run of one document."""

    run_id: int
    doc_id: int
    job_id: str | None
    status: str
    stages: Mapping[str, str]
    durations_ms: Mapping[str, float | None]
    failed_stage: str | None
    recover_from_stage: str | None
    chunk_count: int
    error: str | None
    started_at: datetime
    finished_at: datetime | None
    owner_id: str | None = None
    total_ms: float | None = None


@dataclass(frozen=True, slots=True)
class IndexMeta:
    """What built a collection: the dense model fingerprint, sparse model, bm25 and chunker configs."""

    collection: str
    backend: str
    state: str
    dense_fingerprint: str
    dense_dim: int | None
    sparse_model: str | None
    bm25_config: Mapping[str, Any] | None
    chunker_config: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class UnitTally:
    """Where a document's ACTIVE rows of one unit (chunks, or sections) stand.

    ``indexed``: every enabled copy is SUCCESS; ``failed``: some copy is FAILED; ``pending``: the rest
    (a copy PENDING or INDEXING).
    """

    total: int = 0
    indexed: int = 0
    failed: int = 0
    pending: int = 0


@dataclass(frozen=True, slots=True)
class ReconcileTotals:
    """What every reconciler pass recorded so far, whichever process ran it (``actions``: retry, release, ...)."""

    passes: int
    actions: Mapping[str, int]
    retry_failed: int
    last_pass_at: datetime | None
    last_pass_ms: float | None
    last_owner: str | None


@dataclass(frozen=True, slots=True)
class NewOwner:
    """A process about to claim chunks: where it runs and what it is (see :mod:`ragindex.pipeline.lease`)."""

    host: str
    host_key: str
    pid: int
    process_started: float
    command: str


@dataclass(frozen=True, slots=True)
class OwnerRow:
    """A registered claim owner (one per claiming process) and its lease."""

    owner_id: str
    host: str
    host_key: str
    pid: int
    process_started: float
    command: str
    registered_at: datetime
    heartbeat_at: datetime
    lease_until: datetime


@dataclass(frozen=True, slots=True)
class ScoreBatch:
    """Scores of searches not yet saved, for one (source, fingerprint): the top-1 and top-10 histograms.

    ``queries``: the searches counted (each added one top-1 score and up to ten top-10 scores).
    """

    source: str
    fingerprint: str
    queries: int
    top1: ScoreSketch
    top10: ScoreSketch


@dataclass(frozen=True, slots=True)
class ScoreWindow:
    """One window of the score-drift watch: at least ``drift_window_queries`` searches once CLOSED.

    ``is_reference``: the window the others are compared with (the first closed one of its key).
    """

    source: str
    fingerprint: str
    window_no: int
    state: str
    is_reference: bool
    queries: int
    top1: ScoreSketch
    top10: ScoreSketch
    started_at: datetime
    updated_at: datetime
    closed_at: datetime | None


@dataclass(frozen=True, slots=True)
class FusionCalibration:
    """A set's fusion weights, measured on pseudo-queries drawn from its own documents (no human labels).

    ``weights``: source -> weight for ``fusion`` (all 1.0: fuse as without a calibration); ``documents``: the set's
    documents when measured; ``report``: what was measured (queries, each candidate's score).
    """

    user_id: int
    set_id: int
    fusion: str
    weights: Mapping[str, float]
    documents: int
    report: Mapping[str, Any]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class TransferScope:
    """What an export takes: one set (user and set), a tenant (user), or everything (neither)."""

    user_id: int | None = None
    set_id: int | None = None

    @property
    def everything(self) -> bool:
        """The whole deployment (deployment-wide rows such as score windows go too)."""
        return self.user_id is None and self.set_id is None

    def describe(self) -> str:
        """How messages name the scope."""
        if self.everything:
            return "everything"
        if self.set_id is None:
            return f"user {self.user_id}"
        return f"user {self.user_id} set {self.set_id}" if self.user_id is not None else f"set {self.set_id}"


@dataclass(frozen=True, slots=True)
class SetDigest:
    """A set's ACTIVE content: documents, chunks, and a sha256 over their keys, content hashes and chunk ids."""

    documents: int
    chunks: int
    digest: str
