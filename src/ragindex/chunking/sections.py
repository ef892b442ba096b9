"""Sections: the lexical unit above chunks, and the context line each chunk is indexed with.

A section is a run of consecutive chunks under the same heading (a markdown section, a record, a stretch of a
plain text), cut at ``max_chars`` characters; its text is the document's text over that run, so it never repeats
the chunks' overlaps. BM25 (and learned sparse) score sections, where term statistics work; dense scores chunks.
A heading's section larger than the limit is split at chunk boundaries, which the chunkers place at paragraph,
then sentence boundaries. A document without headings still gets sections, by size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ragindex.chunking.headings import find_headings
from ragindex.chunking.layout import TABLE_CAPTION
from ragindex.chunking.splitting import HEADINGS_ONLY
from ragindex.types import CHUNK_FIELDS, ChunkDraft, Document, Unit

CONTEXT_SEPARATOR = " > "
_MAX_CONTEXT_CHARS = 300


def with_sections(
    document: Document, drafts: Sequence[ChunkDraft], *, max_chars: int, contextual: bool
) -> list[ChunkDraft]:
    """The document's section drafts, then its chunk drafts pointing at them (``section_index``).

    Args:
        document: The document the drafts index into.
        drafts: Its chunks, in order.
        max_chars: Most characters of document text per section (a single longer chunk is a section alone);
            0: no sections, the chunks alone.
        contextual: Give each row a context line (title, heading path) indexed in front of its text.
    """
    if max_chars <= 0:
        return [replace(d, context=_chunk_context(document, d) if contextual else None) for d in drafts]
    sections: list[ChunkDraft] = []
    chunks: list[ChunkDraft] = []
    run: list[ChunkDraft] = []

    def close_run() -> None:
        if run:
            sections.append(_section(document, run, len(sections), contextual=contextual))
            run.clear()

    for draft in drafts:
        if run and (
            draft.section != run[0].section
            or draft.end_char - run[0].start_char > max_chars
            or draft.metadata.get(CHUNK_FIELDS) != run[0].metadata.get(CHUNK_FIELDS)  # its fields are its chunks'
        ):
            close_run()
        run.append(draft)
        context = _chunk_context(document, draft) if contextual else None
        chunks.append(replace(draft, section_index=len(sections), context=context))
    close_run()
    return [*sections, *chunks]


def context_line(title: str | None, heading: str | None, text: str, *, caption: str | None = None) -> str | None:
    """``Title > Heading`` (then ``> Caption`` for a table's piece), leaving out what the text opens with.

    None when nothing is left.

    A text opens with its leading markdown heading lines (``# Guide`` / ``## Setup``: both named already) and its
    first line of text (a record that starts with its own title, a table piece that starts with its caption).
    """
    opening = _opening(text)
    parts = [p.strip() for p in (title, heading, caption) if p and p.strip()]
    parts = [p for p in parts if not any(line.startswith(p) for line in opening)]
    if len(parts) == 2 and parts[1].startswith(parts[0]):  # a heading path that already names the title
        parts = parts[1:]
    line = CONTEXT_SEPARATOR.join(parts)[:_MAX_CONTEXT_CHARS]
    return line or None


def _opening(text: str) -> list[str]:
    """The titles of ``text``'s leading heading lines, then the start of its first line of text."""
    lead = HEADINGS_ONLY.match(text)
    titles = [heading.title for heading in find_headings(lead.group())] if lead else []
    return [*titles, text[lead.end() if lead else 0 :].lstrip()[:_MAX_CONTEXT_CHARS]]


def _chunk_context(document: Document, draft: ChunkDraft) -> str | None:
    """A chunk's context line: only where it sits under a heading (the title alone is left out).

    Measured on SciFact (one-section abstracts, no headings), the title in front of every chunk cost dense
    retrieval 0.016 nDCG@10 (0.677 vs 0.693) and gained hybrid 0.002: a repeated prefix pulls a document's chunks
    towards each other. A heading path is what tells a chunk of a long document where it is.
    """
    caption = draft.metadata.get(TABLE_CAPTION)
    if not draft.section and not caption:
        return None
    title = document.title if draft.section else None  # the title alone is left out (above)
    return context_line(title, draft.section, draft.text, caption=caption)


def _section(document: Document, run: Sequence[ChunkDraft], index: int, *, contextual: bool) -> ChunkDraft:
    first = run[0]
    start, end = first.start_char, max(d.end_char for d in run)
    text = document.text[start:end]
    tokens = [d.token_count for d in run]
    return ChunkDraft(
        index=index,
        text=text,
        start_char=start,
        end_char=end,
        start_line=first.start_line,
        end_line=max(d.end_line for d in run),
        page=first.page,
        section=first.section,
        token_count=None if None in tokens else sum(t for t in tokens if t is not None),
        unit=Unit.SECTION,
        context=context_line(document.title, first.section, text) if contextual else None,
        metadata={CHUNK_FIELDS: first.metadata[CHUNK_FIELDS]} if first.metadata.get(CHUNK_FIELDS) else {},
    )
