"""Chunking of documents with layout blocks: tables kept whole or cut by rows, every chunk placed on its page.

Any chunker is wrapped by :class:`LayoutChunker`. A document without blocks (plain text, markdown, records) goes
to the wrapped chunker untouched. A document with blocks (:mod:`ragindex.loaders.layout`) is cut into stretches
of text and tables:

* the text between tables is chunked by the wrapped chunker, as any text is;
* a table that fits the chunk size is one chunk; a larger one is cut between rows, and every piece after the
  first starts with the table's header row and rule again, so a cell is never retrieved without its column
  labels (the piece's text is then the header plus a slice of the document, its span the slice).

Every chunk then gets ``chunk_type`` (the kind of most of its characters: ``text``, ``table``, ``ocr_text``,
...) and ``metadata``: ``bbox`` (the union of its blocks' boxes on its first page), ``pages`` when it runs
over more than one, ``element_types``, and for OCR'd text ``ocr: true`` with the lowest ``ocr_confidence``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from typing import Any

from ragindex.chunking.headings import Headings
from ragindex.chunking.positions import make_drafts
from ragindex.chunking.protocol import Chunker
from ragindex.types import BBox, Block, BlockKind, ChunkDraft, Document, PageSpan

Measure = Callable[[str], int]

TABLE_CAPTION = "table_caption"
"""Chunk metadata: the caption of the table a table chunk belongs to (indexed in its context line)."""
_MAX_CAPTION_CHARS = 200


class LayoutChunker:
    """Wraps ``inner`` so that documents with layout blocks keep their tables whole and their chunks placed.

    Args:
        inner: The chunker for text (fixed, recursive or structure).
        limit: The most a chunk may hold, in ``measure`` units (characters or tokens).
        measure: The size of a text in the units of ``limit``.
        counts_tokens: Whether ``measure`` counts tokens (then drafts carry ``token_count``).
    """

    def __init__(self, inner: Chunker, *, limit: int, measure: Measure = len, counts_tokens: bool = False) -> None:
        self.inner = inner
        self.name = inner.name
        self.limit = limit
        self.measure = measure
        self.counts_tokens = counts_tokens

    def config(self) -> dict[str, object]:
        """The wrapped chunker's settings (the table rules are fixed, so they add nothing)."""
        return self.inner.config()

    def chunk(self, document: Document) -> list[ChunkDraft]:
        """Split ``document``: by the wrapped chunker when it has no blocks, else by stretches (see the module)."""
        if not document.blocks:
            return self.inner.chunk(document)
        spans: list[tuple[int, int]] = []
        texts: dict[int, str] = {}  # span position -> a table piece's text (header + rows)
        captions: dict[int, str] = {}  # span position -> the caption of the table the piece belongs to
        counts: list[int | None] = []
        # a table continued on the next page is one markdown table in blocks per page: cut between them, so
        # that every chunk has its page (each piece after the first starts with the header again)
        cuts = {b.start for i, b in enumerate(document.blocks) if _continues(document.blocks, i)}
        for start, end, table in _stretches(document):
            if table is not None:
                caption = _caption(document, start, table)
                for piece_start, piece_end, text in self._table_pieces(document.text, start, table, end, cuts):
                    if text is not None:
                        texts[len(spans)] = text
                    if caption:
                        captions[len(spans)] = caption
                    spans.append((piece_start, piece_end))
                    counts.append(self.measure(text or document.text[piece_start:piece_end]))
                continue
            for draft in self.inner.chunk(_part(document, start, end)):
                spans.append((draft.start_char + start, draft.end_char + start))
                counts.append(draft.token_count)
        headings = Headings(document.text)
        drafts = make_drafts(
            document,
            [(s, e, headings.section_at(s)) for s, e in spans],
            counts if self.counts_tokens else None,
        )
        # make_drafts drops blank spans; a table piece is never blank, so map the kept drafts back by position
        by_start = {(s, e): i for i, (s, e) in enumerate(spans)}
        placed = _Placement(document.blocks)
        out = []
        for draft in drafts:
            position = by_start[(draft.start_char, draft.end_char)]
            text = texts.get(position)
            chunk_type, metadata = placed.describe(draft.start_char, draft.end_char, draft.page)
            if position in captions:
                metadata[TABLE_CAPTION] = captions[position]
            path = headings.path_at(draft.start_char)
            if len(path) > 1:  # the section alone says as much for a single heading
                metadata["heading_path"] = path
            out.append(
                replace(draft, text=text if text is not None else draft.text, chunk_type=chunk_type, metadata=metadata)
            )
        return out

    def _table_pieces(
        self, text: str, start: int, table: int, end: int, cuts: Collection[int] = ()
    ) -> list[tuple[int, int, str | None]]:
        """``(start, end, text)`` per piece of the table at ``text[table:end]``; text None: the exact slice.

        ``text[start:table]`` holds the headings (and caption) right above the table, if any. They stay in the
        first piece only (every piece's section names the headings, its context the caption). A row longer than
        the limit on its own stays one piece (the dense encoder truncates it). A piece also ends before a row
        that starts at one of ``cuts`` (a page break inside the table).
        """
        if self.measure(text[start:end]) <= self.limit and not any(table < c < end for c in cuts):
            return [(start, end, None)]
        lines = _line_spans(text, table, end)
        if len(lines) < 3:  # a header and rule without rows: one (truncated) chunk
            return [(start, end, None)]
        header = text[lines[0][0] : lines[1][1]]
        pieces: list[tuple[int, int, str | None]] = []
        piece_start, rows = start, list[tuple[int, int]]()
        for row in lines[2:]:
            if rows and (row[0] in cuts or self.measure(_with_header(header, text, [*rows, row])) > self.limit):
                pieces.append((piece_start, rows[-1][1], _with_header(header, text, rows)))
                piece_start, rows = row[0], []
            rows.append(row)
        pieces.append((piece_start, rows[-1][1], _with_header(header, text, rows)))
        first_start, first_end, _ = pieces[0]
        pieces[0] = (first_start, first_end, None)  # header and first rows: a slice of the document as it stands
        return pieces


def _continues(blocks: Sequence[Block], i: int) -> bool:
    """Whether block ``i`` is the continuation of the table before it (one line break apart, not two)."""
    block = blocks[i]
    if i == 0 or block.kind != BlockKind.TABLE:
        return False
    previous = blocks[i - 1]
    return previous.kind == BlockKind.TABLE and block.start == previous.end + 1


def _caption(document: Document, start: int, table: int) -> str | None:
    """The caption among the blocks that travel with the table at ``table`` (``[start, table)``), if any."""
    for block in document.blocks:
        if block.kind == BlockKind.CAPTION and start <= block.start < table:
            return " ".join(document.text[block.start : block.end].split())[:_MAX_CAPTION_CHARS]
    return None


def _with_header(header: str, text: str, rows: Sequence[tuple[int, int]]) -> str:
    return "\n".join([header, *(text[a:b] for a, b in rows)])


def _line_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans = []
    position = start
    for line in text[start:end].split("\n"):
        spans.append((position, position + len(line)))
        position += len(line) + 1
    return [s for s in spans if s[1] > s[0]]


def _stretches(document: Document) -> list[tuple[int, int, int | None]]:
    """``(start, end, table_start)`` stretches covering the text: each table, then the text between them.

    ``table_start`` is None for text. Text is also cut before every heading, so that a chunk never ends with the
    heading of the next section (e.g. the next slide's title); headings (and a table's caption) right above a
    table travel with it, so that no chunk is a bare heading; the blocks of a table continued on the next page are
    one stretch.
    """
    out: list[tuple[int, int, int | None]] = []
    position = 0
    headed = False  # whether [position, here) holds nothing but headings
    blocks = document.blocks
    for i, block in enumerate(blocks):
        if block.kind == BlockKind.HEADING or (
            block.kind == BlockKind.CAPTION and i + 1 < len(blocks) and blocks[i + 1].kind == BlockKind.TABLE
        ):
            if block.start > position and not headed:
                out.append((position, block.start, None))
                position = block.start
            headed = True
            continue
        if block.kind != BlockKind.TABLE:
            headed = False
            continue
        if _continues(blocks, i) and out and out[-1][2] is not None:  # the same table, on the next page
            out[-1] = (out[-1][0], block.end, out[-1][2])
            position = block.end
            continue
        if block.start > position and not headed:
            out.append((position, block.start, None))
            position = block.start
        out.append((position, block.end, block.start))
        position, headed = block.end, False
    if position < len(document.text):
        out.append((position, len(document.text), None))
    return out


def _part(document: Document, start: int, end: int) -> Document:
    """The stretch ``[start, end)`` of ``document`` as a document of its own (pages shifted, no blocks)."""
    pages = [PageSpan(p.page, max(p.start - start, 0)) for p in document.pages if p.start < end]
    kept = [p for i, p in enumerate(pages) if i + 1 == len(pages) or pages[i + 1].start > 0]
    return replace(document, text=document.text[start:end], pages=tuple(kept), blocks=())


class _Placement:
    """Which blocks a span of the text covers, and what that makes of a chunk."""

    def __init__(self, blocks: Sequence[Block]) -> None:
        self.blocks = sorted(blocks, key=lambda b: b.start)
        self.ends = [b.end for b in self.blocks]

    def describe(self, start: int, end: int, page: int | None) -> tuple[str, dict[str, Any]]:
        """``(chunk_type, metadata)`` of the chunk spanning ``[start, end)`` whose first page is ``page``."""
        covered: dict[BlockKind, int] = {}
        box: BBox | None = None
        pages: set[int] = set()
        confidences: list[float] = []
        i = bisect_right(self.ends, start)
        while i < len(self.blocks) and self.blocks[i].start < end:
            block = self.blocks[i]
            i += 1
            overlap = min(end, block.end) - max(start, block.start)
            if overlap <= 0:
                continue
            covered[block.kind] = covered.get(block.kind, 0) + overlap
            if block.page is not None:
                pages.add(block.page)
            if block.bbox is not None and block.page == page:
                box = block.bbox if box is None else box.union(block.bbox)
            if block.confidence is not None:
                confidences.append(block.confidence)
        if not covered:
            return BlockKind.TEXT.value, {}
        body = {k: v for k, v in covered.items() if k != BlockKind.HEADING} or covered
        chunk_type = max(body.items(), key=lambda item: item[1])[0].value
        metadata: dict[str, Any] = {"element_types": sorted(k.value for k in covered)}
        if box is not None:
            metadata["bbox"] = box.to_list()
        if len(pages) > 1:
            metadata["pages"] = sorted(pages)
        if BlockKind.OCR_TEXT in covered:
            metadata["ocr"] = True
            if confidences:
                metadata["ocr_confidence"] = round(min(confidences), 3)
        return chunk_type, metadata
