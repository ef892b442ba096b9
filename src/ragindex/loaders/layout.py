"""The structured document model: parsers add typed layout elements, and get one markdown :class:`Document`.

Every parser that sees structure (PDF layout, OCR, pptx, xlsx, docx) describes a file as elements in reading
order — headings with a level, paragraphs, list items, captions, code, tables as rows of cells, OCR'd lines —
each with its page and box. :class:`LayoutBuilder` renders them as markdown (``#`` headings, pipe tables, blank
lines between blocks) and records a :class:`~ragindex.types.Block` per element over the rendered characters, so
the chunkers see headings as they do in any markdown file, keep tables whole (see
:mod:`ragindex.chunking.layout`) and give every chunk its page, box and ``chunk_type``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ragindex.types import BBox, Block, BlockKind, Document, PageSpan

BLOCK_SEPARATOR = "\n\n"
_SPACES = re.compile(r"[ \t\r\f\v]+")
_PIPE = re.compile(r"(?<!\\)\|")


def clean_line(text: str) -> str:
    """One line of text: runs of spaces and tabs collapsed, line breaks turned into spaces, ends stripped."""
    return _SPACES.sub(" ", text.replace("\n", " ")).strip()


def markdown_table(rows: Sequence[Sequence[str | None]]) -> str:
    """A GitHub-flavoured markdown table of ``rows``; the first row is the header.

    Cells are cleaned to one line and ``|`` in them is escaped; short rows are padded, so every row has as many
    cells as the widest one. A table of a single row gets an empty-named header over it, so that the row stays
    data.

    Args:
        rows: The table's rows of cell texts (None for an empty cell).

    Returns:
        The table, one line per row plus the ``---`` rule under the header; "" for a table without cells.
    """
    cleaned = [[_PIPE.sub(r"\\|", clean_line(c or "")) for c in row] for row in rows]
    cleaned = [row for row in cleaned if any(row)]
    if not cleaned:
        return ""
    width = max(len(row) for row in cleaned)
    padded = [row + [""] * (width - len(row)) for row in cleaned]
    if len(padded) == 1:
        padded.insert(0, [""] * width)
    lines = ["| " + " | ".join(row) + " |" for row in padded]
    lines.insert(1, "|" + "|".join([" --- "] * width) + "|")
    return "\n".join(lines)


class LayoutBuilder:
    """Collects a document's elements in reading order and renders them into one :class:`Document`.

    Args:
        source_uri: The document's ``source_uri``.
        parser: The parser's name (recorded on the document).
    """

    def __init__(self, source_uri: str, parser: str) -> None:
        self.source_uri = source_uri
        self.parser = parser
        self._parts: list[str] = []
        self._length = 0
        self._blocks: list[Block] = []
        self._pages: list[PageSpan] = []
        self._page: int | None = None
        self._table_width = 0
        self.warnings: list[str] = []

    def start_page(self, page: int) -> None:
        """Elements added from now on are on ``page`` (1-based); a page without elements gets no span."""
        self._page = page

    def heading(self, text: str, level: int, *, bbox: BBox | None = None) -> None:
        """A heading of ``level`` (1-6) as a markdown ATX heading line."""
        line = clean_line(text)
        if line:
            self._add(BlockKind.HEADING, "#" * min(max(level, 1), 6) + " " + line, bbox, None)

    def paragraph(
        self, text: str, *, kind: BlockKind = BlockKind.TEXT, bbox: BBox | None = None, confidence: float | None = None
    ) -> None:
        """A paragraph of ``kind`` (text, list, caption, code, ocr_text); its inner line breaks are kept."""
        body = "\n".join(line for line in (clean_line(x) for x in text.split("\n")) if line)
        if kind == BlockKind.CODE:
            body = "```\n" + text.strip("\n") + "\n```"
        if body.strip():
            self._add(kind, body, bbox, confidence)

    def table(self, rows: Sequence[Sequence[str | None]], *, bbox: BBox | None = None, continues: bool = False) -> None:
        """A table (first row: the header) as a markdown table.

        ``continues``: the rows (no header) continue the table just added, e.g. on the next page: they are
        rendered as more rows of the same markdown table, in a block of their own (with its page and box).
        """
        previous = self._blocks[-1] if self._blocks else None
        if continues and previous is not None and previous.kind == BlockKind.TABLE:
            width = max([self._table_width, *(len(r) for r in rows)])
            body = markdown_table([["-"] * width, *rows]).split("\n", 2)[2:]  # the rows without the header
            if body:
                self._add(BlockKind.TABLE, body[0], bbox, None, separator="\n")
            return
        rendered = markdown_table(rows)
        if rendered:
            self._table_width = rendered.split("\n", 1)[0].count(" | ") + 1
            self._add(BlockKind.TABLE, rendered, bbox, None)

    def _add(
        self, kind: BlockKind, text: str, bbox: BBox | None, confidence: float | None, separator: str = BLOCK_SEPARATOR
    ) -> None:
        if self._parts:
            self._parts.append(separator)
            self._length += len(separator)
        if self._page is not None and (not self._pages or self._pages[-1].page != self._page):
            self._pages.append(PageSpan(page=self._page, start=self._length))
        start = self._length
        self._parts.append(text)
        self._length += len(text)
        self._blocks.append(Block(kind, start, self._length, page=self._page, bbox=bbox, confidence=confidence))

    @property
    def empty(self) -> bool:
        """Whether no element was added."""
        return not self._blocks

    def build(self, *, title: str | None = None, metadata: Mapping[str, Any] | None = None) -> Document:
        """The document: the rendered markdown, its page spans and blocks, the collected warnings."""
        return Document(
            source_uri=self.source_uri,
            text="".join(self._parts),
            parser=self.parser,
            metadata=dict(metadata or {}),
            pages=tuple(self._pages),
            title=title,
            warnings=tuple(self.warnings),
            blocks=tuple(self._blocks),
        )
