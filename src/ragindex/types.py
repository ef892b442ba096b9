"""Frozen value objects shared by every layer (no heavy imports here)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


@dataclass(frozen=True, slots=True)
class PageSpan:
    """A page of a paginated source: ``page`` (1-based) starts at character ``start`` of the document text."""

    page: int
    start: int


class BlockKind(StrEnum):
    """The type of a layout element of a parsed document (``chunk_type`` of the chunks made of it)."""

    TEXT = "text"
    HEADING = "heading"
    TABLE = "table"
    LIST = "list"
    CAPTION = "caption"
    CODE = "code"
    OCR_TEXT = "ocr_text"


@dataclass(frozen=True, slots=True)
class BBox:
    """A box on a page in PDF points, origin at the page's top left: ``x0 < x1`` and ``top < bottom``."""

    x0: float
    top: float
    x1: float
    bottom: float

    def union(self, other: BBox) -> BBox:
        """The smallest box holding both."""
        return BBox(
            min(self.x0, other.x0), min(self.top, other.top), max(self.x1, other.x1), max(self.bottom, other.bottom)
        )

    def to_list(self) -> list[float]:
        """``[x0, top, x1, bottom]`` rounded to 0.1 pt (the JSON form)."""
        return [round(v, 1) for v in (self.x0, self.top, self.x1, self.bottom)]

    @classmethod
    def from_list(cls, values: Any) -> BBox | None:
        """The box of a stored ``[x0, top, x1, bottom]``; None for anything else."""
        if not isinstance(values, (list, tuple)) or len(values) != 4:
            return None
        try:
            return cls(*(float(v) for v in values))
        except (TypeError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class Block:
    """One layout element of a parsed document: characters ``[start, end)`` of :attr:`Document.text`.

    ``page`` is 1-based; ``bbox`` is where the element is drawn on that page; ``confidence`` (0..1) is set on
    OCR'd text. Blocks are in reading order and do not overlap.
    """

    kind: BlockKind
    start: int
    end: int
    page: int | None = None
    bbox: BBox | None = None
    confidence: float | None = None


@dataclass(frozen=True, slots=True)
class Document:
    """What a loader returns: the text of one logical document and its metadata.

    A file usually yields one document; a records file (json/jsonl) yields one per record,
    each with its own ``source_uri`` (``<file>#<record id>``).
    """

    source_uri: str
    text: str
    parser: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    pages: tuple[PageSpan, ...] = ()
    title: str | None = None
    warnings: tuple[str, ...] = ()
    blocks: tuple[Block, ...] = ()
    """Layout elements (headings, tables, OCR'd text, ...) of parsers that see structure; empty for plain text."""
    error: str | None = None
    """Set by a loader for a part of a file it could not read (a bad line of a records file): that document fails
    alone with this error (the file's other documents are indexed), and the next ingest reads the file again."""


CHUNK_FIELDS = "fields"
"""The key of a chunk's metadata that holds its own fields (given with pre-cut chunks; filterable like a document's)."""


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """What a chunker returns: one piece of a document, positioned in it.

    Lines are 1-based and inclusive; ``page`` is set for paginated sources.
    """

    index: int
    text: str
    start_char: int
    end_char: int
    start_line: int
    end_line: int
    page: int | None = None
    section: str | None = None
    token_count: int | None = None
    chunk_type: str = "text"
    unit: str = "chunk"  # "chunk" (the dense unit) or "section" (the lexical unit, made by the pipeline)
    section_index: int | None = None  # a chunk's section: its index among the document's section drafts
    context: str | None = None  # "Title > Heading": indexed in front of the text, never returned as text
    metadata: Mapping[str, Any] = field(default_factory=dict)  # layout facts: bbox, element_types, ocr


@dataclass(frozen=True, slots=True)
class SparseVector:
    """A sparse vector with strictly increasing indices."""

    indices: tuple[int, ...]
    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.indices) != len(self.values):
            raise ValueError("sparse vector indices and values differ in length")


class VectorKind(StrEnum):
    """The index copies a chunk can have; each has its own status column."""

    DENSE = "dense"
    BM25 = "bm25"
    SPARSE = "sparse"


class Unit(StrEnum):
    """The granularity of a truth-store row: a chunk (the dense unit) or a section (the lexical unit)."""

    CHUNK = "chunk"
    SECTION = "section"


MAX_CONTEXT_CHARS = 20_000
"""The largest ``context_chars`` a search accepts (about 5,000 tokens per hit)."""


class Expand(StrEnum):
    """What a hit's ``context`` holds: nothing, its neighbouring chunks, or its section (within a character budget)."""

    NONE = "none"
    NEIGHBOURS = "neighbours"
    SECTION = "section"


class GroupBy(StrEnum):
    """Which hits a search merges into one: none, those of one section, or those of one document."""

    NONE = "none"
    SECTION = "section"
    DOCUMENT = "document"


class SearchMode(StrEnum):
    """Retrieval modes."""

    DENSE = "dense"
    BM25 = "bm25"
    SPARSE = "sparse"
    HYBRID = "hybrid"


@dataclass(frozen=True, slots=True)
class SourceScore:
    """A hit's score and 1-based rank in one source list (dense, bm25, sparse).

    ``weight``: the source's weight in the fusion when the set's calibration set one (None: unweighted).
    """

    score: float
    rank: int
    weight: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"score", "rank"}``, and ``weight`` when the fusion weighed the source."""
        out: dict[str, Any] = {"score": self.score, "rank": self.rank}
        if self.weight is not None:
            out["weight"] = self.weight
        return out


@dataclass(frozen=True, slots=True)
class MergedHit:
    """A hit that ``group_by`` folded into a better one of the same section or document, with its scores."""

    chunk_id: str
    rank: int  # its rank before grouping
    score: float
    scores: Mapping[str, SourceScore]

    def to_dict(self) -> dict[str, Any]:
        """JSON form (under the kept hit's ``merged``)."""
        return {
            "chunk_id": self.chunk_id,
            "rank": self.rank,
            "score": self.score,
            "scores": {k: v.to_dict() for k, v in self.scores.items()},
        }


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result, backfilled from the truth store (never a REMOVED chunk)."""

    rank: int
    chunk_id: str
    doc_id: int
    set_id: int
    score: float
    source: str
    filename: str
    text: str
    page: int | None
    section: str | None
    start_line: int | None
    end_line: int | None
    scores: Mapping[str, SourceScore]
    metadata: Mapping[str, Any] = field(default_factory=dict)
    skipped: Mapping[str, str] = field(default_factory=dict)
    """Sources the search did not run, with the reason, e.g. ``{"dense": "model does not cover han script"}``
    (the language guard); ``scores`` holds only the sources that ran. ``to_dict`` lists both under ``scores``."""
    context: str | None = None
    """The hit's text joined with its neighbouring chunks or its section, within the search's ``context_chars``
    (``expand``); None without expansion, and then ``to_dict`` leaves the key out."""
    merged: tuple[MergedHit, ...] = ()
    """Lower-ranked hits of the same section or document folded into this one (``group_by``), in rank order;
    ``to_dict`` leaves the key out when there are none."""
    chunk_type: str = "text"
    """What the chunk is made of: ``text``, ``table``, ``ocr_text``, ... (:class:`BlockKind`)."""
    bbox: BBox | None = None
    """Where the chunk is drawn on its ``page`` (PDF points, top-left origin), for parsers that see layout."""
    record: bool = field(default=False, compare=False)
    """Whether the hit's document is a record (upserted under its ``key``) rather than a file (``source`` is then its
    path). Not in ``to_dict`` (False in a hit read over HTTP): the service uses it to show a record's key as given,
    even one that starts with ``/``."""

    @property
    def key(self) -> str:
        """The key of the hit's document: a record's key, or a file document's source path (its ``source``)."""
        return self.source

    def to_dict(self) -> dict[str, Any]:
        """JSON form used by ``ragindex search --json`` and the HTTP API (``context``, ``merged``: only when set)."""
        out: dict[str, Any] = {
            "rank": self.rank,
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "set_id": self.set_id,
            "score": self.score,
            "key": self.source,
            "source": self.source,
            "filename": self.filename,
            "page": self.page,
            "section": self.section,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "chunk_type": self.chunk_type,
            "bbox": None if self.bbox is None else self.bbox.to_list(),
            "text": self.text,
            "metadata": dict(self.metadata),
            "scores": {
                **{k: v.to_dict() for k, v in self.scores.items()},
                **{k: {"skipped": reason} for k, reason in self.skipped.items()},
            },
        }
        if self.context is not None:
            out["context"] = self.context
        if self.merged:
            out["merged"] = [m.to_dict() for m in self.merged]
        return out


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Hits in rank order plus the latency of each phase in milliseconds, and warnings about the ranking.

    ``warnings`` explains a result that is likely poor, e.g. a dense search for a query in a script the dense
    model does not cover; ``degraded`` names the sources that failed in a search that went on without them
    (``on_source_error="degrade"``), with the error, e.g. ``{"dense": "dense query encoding failed: ..."}``.
    ``to_dict`` adds each of those keys only when it is not empty.
    """

    hits: tuple[Hit, ...]
    latency_ms: Mapping[str, float]
    mode: str
    warnings: tuple[str, ...] = ()
    degraded: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON form used by ``ragindex search --json`` and the HTTP API."""
        out = {"mode": self.mode, "hits": [h.to_dict() for h in self.hits], "latency_ms": dict(self.latency_ms)}
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.degraded:
            out["degraded"] = dict(self.degraded)
        return out
