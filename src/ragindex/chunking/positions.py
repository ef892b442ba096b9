"""Char spans -> positioned :class:`~ragindex.types.ChunkDraft` objects (lines, page, index)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from ragindex.types import ChunkDraft, Document

Span = tuple[int, int, str | None]
"""``(start_char, end_char, section)`` of one piece of a document (end exclusive)."""


def newline_offsets(text: str) -> list[int]:
    """Offsets of every line break (newline character) in ``text``, ascending.

    Args:
        text: Any text.

    Returns:
        The positions of the line breaks.
    """
    offsets: list[int] = []
    find = text.find
    i = find("\n")
    while i >= 0:
        offsets.append(i)
        i = find("\n", i + 1)
    return offsets


def make_drafts(
    document: Document, spans: Sequence[Span], token_counts: Sequence[int | None] | None = None
) -> list[ChunkDraft]:
    """Turn spans of ``document.text`` into drafts numbered 0..n-1.

    Whitespace-only (or empty) spans are dropped before numbering. Lines are 1-based and
    inclusive (``end_line`` is the line of the last character); ``page`` is the page whose
    start is at or before ``start_char`` (``None`` for documents without pages).

    Args:
        document: The document the spans index into.
        spans: ``(start_char, end_char, section)`` per piece, in output order.
        token_counts: Optional token count per span (aligned with ``spans``).

    Returns:
        One draft per non-blank span.

    Raises:
        ValueError: A span lies outside the text or ``token_counts`` has another length.
    """
    text = document.text
    if token_counts is not None and len(token_counts) != len(spans):
        raise ValueError("token_counts must align with spans")
    newlines = newline_offsets(text) if spans else []
    pages = sorted(document.pages, key=lambda p: p.start)
    page_starts = [p.start for p in pages]
    drafts: list[ChunkDraft] = []
    for i, (start, end, section) in enumerate(spans):
        if not 0 <= start <= end <= len(text):
            raise ValueError(f"span ({start}, {end}) outside a text of {len(text)} characters")
        piece = text[start:end]
        if not piece or piece.isspace():
            continue
        page: int | None = None
        if pages:
            page = pages[max(bisect_right(page_starts, start) - 1, 0)].page
        drafts.append(
            ChunkDraft(
                index=len(drafts),
                text=piece,
                start_char=start,
                end_char=end,
                start_line=bisect_left(newlines, start) + 1,
                end_line=bisect_left(newlines, end - 1) + 1,
                page=page,
                section=section,
                token_count=None if token_counts is None else token_counts[i],
            )
        )
    return drafts
