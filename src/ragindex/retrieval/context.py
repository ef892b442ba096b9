"""Grouping and context expansion of search hits (``group_by``, ``expand``, ``context_chars``).

They run after the retriever and never reorder it: grouping keeps the first (best) hit of each section or
document at its place and folds the others into its ``merged`` list; expansion gives each hit a ``context``,
its own text joined with its neighbouring chunks or with its section, within a character budget.

Chunks may overlap (the recursive and fixed chunkers repeat up to ``chunk_overlap`` characters), so they are
joined without repeating the overlap: where the next chunk may start on the line where the previous one ends,
the longest suffix of the previous text that begins the next one is written once. Between chunks on different
lines the join is one line break (two when a blank line separated them). The hit's own text is never cut: when
it alone is longer than the budget, the context is the text alone.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from ragindex.errors import ValidationError
from ragindex.store.protocol import ChunkStore
from ragindex.store.records import ChunkRow, ChunkText
from ragindex.types import MAX_CONTEXT_CHARS, Expand, GroupBy, Hit, MergedHit, SearchResult

GROUP_OVERFETCH = 5
"""With ``group_by``, the retriever is asked for ``top_k`` times this many hits (at most :data:`MAX_GROUP_FETCH`)."""
MAX_GROUP_FETCH = 500
_SNAP = 40  # how far a cut moves to fall on whitespace (text without spaces, e.g. Chinese, is cut where it falls)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class HitShape:
    """A validated ``expand`` / ``context_chars`` / ``group_by`` choice."""

    expand: Expand = Expand.NONE
    context_chars: int = 2000
    group_by: GroupBy = GroupBy.NONE

    def fetch(self, top_k: int) -> int:
        """Hits to ask the retriever for, so that ``top_k`` groups remain after grouping."""
        if self.group_by == GroupBy.NONE:
            return top_k
        return max(top_k, min(top_k * GROUP_OVERFETCH, MAX_GROUP_FETCH))


def validate_shape(*, expand: str, context_chars: int, group_by: str) -> HitShape:
    """Check the three options at the edge; errors name the field."""
    try:
        expand_as = Expand(expand)
    except ValueError:
        valid = ", ".join(e.value for e in Expand)
        raise ValidationError("expand", f"unknown expand {expand!r}; valid: {valid}") from None
    try:
        group_as = GroupBy(group_by)
    except ValueError:
        valid = ", ".join(g.value for g in GroupBy)
        raise ValidationError("group_by", f"unknown group_by {group_by!r}; valid: {valid}") from None
    if (
        not isinstance(context_chars, int)
        or isinstance(context_chars, bool)
        or not 0 <= context_chars <= MAX_CONTEXT_CHARS
    ):
        raise ValidationError(
            "context_chars", f"must be an integer from 0 to {MAX_CONTEXT_CHARS}, got {context_chars!r}"
        )
    return HitShape(expand=expand_as, context_chars=context_chars, group_by=group_as)


# ---------------------------------------------------------------------------------------------- pure functions
class Piece(Protocol):
    """What joining needs of a chunk (a :class:`~ragindex.store.records.ChunkRow` is one)."""

    @property
    def content(self) -> str:
        """The chunk's text."""
        ...

    @property
    def start_line(self) -> int | None:
        """1-based first line in the document, if known."""
        ...

    @property
    def end_line(self) -> int | None:
        """1-based last line in the document, if known."""
        ...


def overlap(left: str, right: str) -> int:
    """Length of the longest suffix of ``left`` that is also a prefix of ``right`` (0 if none)."""
    if not left or not right:
        return 0
    first = right[0]
    at = left.find(first, len(left) - min(len(left), len(right)))
    while at != -1:  # the earliest match is the longest overlap
        if right.startswith(left[at:]):
            return len(left) - at
        at = left.find(first, at + 1)
    return 0


def link(left: Piece, right: Piece) -> tuple[str, int]:
    """How ``right`` follows ``left`` when joined: the separator, and how many of its first characters to skip.

    A chunk starting on a later line than the previous one ends cannot overlap it: the separator is the line
    break(s) between them. Otherwise the overlap is looked for; without one the separator is a space (same
    line) or a line break (lines unknown).
    """
    ends, starts = left.end_line, right.start_line
    if ends is not None and starts is not None and starts > ends:
        return "\n" * min(starts - ends, 2), 0
    shared = overlap(left.content, right.content)
    if shared:
        return "", shared
    return (" " if ends is not None and starts is not None else "\n"), 0


def join_chunks(pieces: Sequence[Piece]) -> tuple[str, list[tuple[int, int]]]:
    """Join consecutive chunks without repeating overlaps; return the text and each chunk's (start, end) in it."""
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    for j, piece in enumerate(pieces):
        separator, shared = link(pieces[j - 1], piece) if j else ("", 0)
        start = length + len(separator) - shared
        tail = separator + piece.content[shared:]
        parts.append(tail)
        length += len(tail)
        spans.append((start, start + len(piece.content)))
    return "".join(parts), spans


def _link_costs(pieces: Sequence[Piece]) -> Callable[[int], int]:
    """``cost(j)``: characters the link between pieces j-1 and j adds (separator minus overlap), computed once."""
    costs: dict[int, int] = {}

    def cost(j: int) -> int:
        if j not in costs:
            separator, shared = link(pieces[j - 1], pieces[j])
            costs[j] = len(separator) - shared
        return costs[j]

    return cost


def neighbour_run(pieces: Sequence[Piece], index: int, budget: int) -> tuple[int, int]:
    """The widest ``pieces[lo:hi]`` around ``pieces[index]`` whose joined text fits ``budget`` characters.

    Whole chunks only, added alternately before and after the hit, nearest first; a side stops at the first
    chunk that no longer fits (the other side may still grow).
    """
    cost = _link_costs(pieces)
    lo, hi = index, index + 1
    length = len(pieces[index].content)
    before, after = lo > 0, hi < len(pieces)
    while before or after:
        if before:
            grown = length + len(pieces[lo - 1].content) + cost(lo)
            before = grown <= budget
            if before:
                lo, length = lo - 1, grown
                before = lo > 0
        if after:
            grown = length + len(pieces[hi].content) + cost(hi)
            after = grown <= budget
            if after:
                hi, length = hi + 1, grown
                after = hi < len(pieces)
    return lo, hi


def reach(pieces: Sequence[Piece], index: int, budget: int) -> tuple[int, int]:
    """``pieces[lo:hi]``: the chunks that can fall within ``budget`` characters before or after ``pieces[index]``."""
    cost = _link_costs(pieces)
    lo, before = index, 0
    while lo > 0 and before < budget:
        before += len(pieces[lo - 1].content) + cost(lo)
        lo -= 1
    hi, after = index + 1, 0
    while hi < len(pieces) and after < budget:
        after += len(pieces[hi].content) + cost(hi)
        hi += 1
    return lo, hi


def around(text: str, span: tuple[int, int], budget: int) -> str:
    """At most ``budget`` characters of ``text`` centred on ``span``, which is kept whole (even beyond the budget).

    Room one side does not need goes to the other; each cut moves to the nearest whitespace within a few
    characters (inwards, never into the span), so words are not split where the text has spaces.
    """
    start, end = span
    if len(text) <= budget:
        return text
    if end - start >= budget:
        return text[start:end]
    room = budget - (end - start)
    before, after = room // 2, room - room // 2
    if before > start:
        before, after = start, after + before - start
    if end + after > len(text):
        before, after = min(start, before + end + after - len(text)), len(text) - end
    lo, hi = start - before, end + after
    if lo > 0 and not text[lo - 1].isspace() and (space := _SPACE.search(text, lo, min(lo + _SNAP, start))):
        lo = space.end()
    if hi < len(text) and not text[hi].isspace():
        cut = next((j for j in range(hi - 1, max(end, hi - _SNAP) - 1, -1) if text[j].isspace()), None)
        hi = hi if cut is None else cut
    return text[lo:hi].strip()


def neighbours_context(pieces: Sequence[Piece], index: int, budget: int) -> str:
    """``pieces[index]`` joined with whole neighbouring chunks, balanced around it, within ``budget``."""
    lo, hi = neighbour_run(pieces, index, budget)
    return join_chunks(pieces[lo:hi])[0]


def section_context(pieces: Sequence[Piece], index: int, budget: int) -> str:
    """The joined ``pieces`` (one section), cut to ``budget`` characters around ``pieces[index]``."""
    lo, hi = reach(pieces, index, budget)
    text, spans = join_chunks(pieces[lo:hi])
    return around(text, spans[index - lo], budget)


def heading_run(rows: Sequence[ChunkRow], index: int) -> tuple[int, int]:
    """``rows[lo:hi]``: the consecutive chunks around ``rows[index]`` under the same heading (``section``)."""
    heading = rows[index].section
    lo, hi = index, index + 1
    while lo > 0 and rows[lo - 1].section == heading:
        lo -= 1
    while hi < len(rows) and rows[hi].section == heading:
        hi += 1
    return lo, hi


def group_hits(hits: Sequence[Hit], keys: Sequence[Hashable], top_k: int) -> list[Hit]:
    """Keep the first hit of each key, in order, up to ``top_k``; fold every later hit of a kept key into it.

    Kept hits are renumbered from 1; a folded hit is listed in its keeper's ``merged`` with its earlier rank
    and scores. Hits of keys beyond the first ``top_k`` are dropped.
    """
    kept: dict[Hashable, int] = {}
    out: list[Hit] = []
    merged: list[list[MergedHit]] = []
    for hit, key in zip(hits, keys, strict=True):
        at = kept.get(key)
        if at is not None:
            merged[at].append(MergedHit(chunk_id=hit.chunk_id, rank=hit.rank, score=hit.score, scores=hit.scores))
        elif len(out) < top_k:
            kept[key] = len(out)
            out.append(hit)
            merged.append([])
    pairs = zip(out, merged, strict=True)
    return [replace(hit, rank=i, merged=tuple(folded)) for i, (hit, folded) in enumerate(pairs, 1)]


# ---------------------------------------------------------------------------------------------- over the store
@dataclass(slots=True)
class StoreReads:
    """Truth-store rows a search has read already, so that shaping its hits does not read them again.

    Attributes:
        rows: A hit's chunk id -> its row (the retriever's backfill).
        sections: A section id -> its live chunks in order (read to fuse the section's lexical score).
    """

    rows: dict[str, ChunkRow] = field(default_factory=dict)
    sections: dict[str, list[ChunkText]] = field(default_factory=dict)


class HitShaper:
    """Groups and expands a retriever's hits, reading the chunks it needs from the truth store.

    Args:
        store: The truth store (chunk rows, a document's chunks, a section's chunks).
    """

    def __init__(self, store: ChunkStore) -> None:
        self.store = store

    def apply(self, result: SearchResult, shape: HitShape, top_k: int, reads: StoreReads | None = None) -> SearchResult:
        """``result`` grouped (then cut to ``top_k``) and expanded as ``shape`` says; latency gains the phases.

        ``reads`` are the rows the retriever has already read (hits' chunks, sections' chunks); others are read.
        """
        if not result.hits or (shape.group_by == GroupBy.NONE and shape.expand == Expand.NONE):
            return result
        reads = reads or StoreReads()
        latency = dict(result.latency_ms)
        retrieved_ms = latency.pop("total", 0.0)
        rows = dict(reads.rows)
        hits = list(result.hits)
        t0 = time.perf_counter()
        if shape.group_by != GroupBy.NONE:
            if shape.group_by == GroupBy.SECTION:
                rows = self._rows(hits, rows)
            hits = group_hits(hits, [_group_key(hit, rows.get(hit.chunk_id), shape.group_by) for hit in hits], top_k)
            latency["group"] = _ms(t0)
        hits = hits[:top_k]
        if shape.expand != Expand.NONE:
            t1 = time.perf_counter()
            hits = self._expand(hits, self._rows(hits, rows), reads.sections, shape)
            latency["expand"] = _ms(t1)
        latency["total"] = round(retrieved_ms + _ms(t0), 3)
        return replace(result, hits=tuple(hits), latency_ms=latency)

    def _rows(self, hits: Sequence[Hit], rows: dict[str, ChunkRow]) -> dict[str, ChunkRow]:
        missing = [hit.chunk_id for hit in hits if hit.chunk_id not in rows]
        return rows | {row.chunk_id: row for row in self.store.get_chunks(missing)} if missing else rows

    def _expand(
        self, hits: Sequence[Hit], rows: dict[str, ChunkRow], known: Mapping[str, list[ChunkText]], shape: HitShape
    ) -> list[Hit]:
        members: dict[str, list[ChunkText]] = {}
        if shape.expand == Expand.SECTION:
            kept = (rows.get(hit.chunk_id) for hit in hits)
            ids = list(dict.fromkeys(row.section_id for row in kept if row is not None and row.section_id is not None))
            members = {section: known[section] for section in ids if section in known}
            if missing := [section for section in ids if section not in known]:
                members |= self.store.section_chunks(missing)
        documents: dict[int, list[ChunkRow]] = {}

        def document(doc_id: int) -> list[ChunkRow]:
            if doc_id not in documents:
                documents[doc_id] = self.store.chunks_of_document(doc_id)
            return documents[doc_id]

        out: list[Hit] = []
        for hit in hits:
            row = rows.get(hit.chunk_id)
            context = None if row is None else self._context(row, members, document, shape)
            out.append(replace(hit, context=hit.text if context is None else context))
        return out

    @staticmethod
    def _context(
        row: ChunkRow,
        members: Mapping[str, Sequence[ChunkText]],
        document: Callable[[int], list[ChunkRow]],
        shape: HitShape,
    ) -> str | None:
        """A hit's context, or None when its chunk is gone (deleted since the search): its text alone then."""
        if shape.expand == Expand.SECTION and row.section_id in members:
            section = members[str(row.section_id)]
            index = next((i for i, piece in enumerate(section) if piece.chunk_id == row.chunk_id), None)
            return None if index is None else section_context(section, index, shape.context_chars)
        pieces = document(row.doc_id)
        index = next((i for i, piece in enumerate(pieces) if piece.chunk_id == row.chunk_id), None)
        if index is None:
            return None
        if shape.expand == Expand.NEIGHBOURS:
            return neighbours_context(pieces, index, shape.context_chars)
        lo, hi = heading_run(pieces, index)  # no section row: the chunks under the same heading
        return section_context(pieces[lo:hi], index - lo, shape.context_chars)


def _group_key(hit: Hit, row: ChunkRow | None, group_by: GroupBy) -> Hashable:
    """The unit a hit belongs to (see :func:`group_key`); a hit whose row is gone is a group alone."""
    if row is None:
        return ("document", hit.doc_id) if group_by == GroupBy.DOCUMENT else ("chunk", hit.chunk_id)
    return group_key(row, group_by)


class Grouped(Protocol):
    """What grouping needs of a chunk (a :class:`~ragindex.store.records.ChunkRow` or a backfill's view)."""

    @property
    def chunk_id(self) -> str:
        """The chunk's id."""
        ...

    @property
    def doc_id(self) -> int:
        """Its document's id."""
        ...

    @property
    def section_id(self) -> str | None:
        """Its section row's id, if any."""
        ...

    @property
    def section(self) -> str | None:
        """Its heading, if any."""
        ...


def group_key(row: Grouped, group_by: GroupBy) -> Hashable:
    """The unit a chunk belongs to: its document, or its section.

    A chunk without a section row (``RAGINDEX_SECTION_MAX_CHARS=0``, or indexed before sections) groups with the
    chunks of its document under the same heading; without a heading either it is a group alone, so that a long
    document without headings does not collapse into one hit.
    """
    if group_by == GroupBy.DOCUMENT:
        return ("document", row.doc_id)
    if row.section_id is not None:
        return ("section", row.section_id)
    if row.section is not None:
        return ("heading", row.doc_id, row.section)
    return ("chunk", row.chunk_id)


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)
