"""Reading order of an OCR'd page by columns, from Tesseract's word boxes (issue 26).

Tesseract's own layout analysis reads long columns right, but on short column runs (a few lines between two
full-width headings) it joins the lines of both columns into one line ("...the left line. the right line..."),
and a paragraph running from the bottom of one column to the top of the next comes out as two. The rules, chosen
on the scans of ``bench/ocr_quality.py`` (docs/parsing.md):

* **Columns**: a column starts at an x where at least three wide runs of words (12+ word heights, so not table
  cells or list numbers) start, with wide runs of text on its left over the same height, and which at most half as
  many runs cross. A page with no such x keeps Tesseract's order.
* **Lines** are split at the column starts (a gap in a Tesseract line there is the gutter); a line with a word
  over a column start, or words on both sides of it without a gutter between them, spans the columns (a title,
  a full-width heading).
* **Order**: spanning lines cut the page into bands; each band is read column by column, top to bottom, and the
  spanning lines sit between the bands by their height.
* **Paragraphs**: consecutive lines of a column with a gap under half a line, the same height within 30% and no
  indented first line after a sentence stop; the last paragraph of a column continues into the first of the next
  column of the band when its last line fills most of the column (60%) and does not end with a sentence stop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from math import atan, cos, sin
from statistics import median

from ragindex.loaders.pdf_layout import join_words
from ragindex.types import BBox

_RUN_GAP = 0.8
"""A gap of this many line heights between two words splits a line into runs (column detection only)."""
_WIDE_RUN = 12.0
"""A run this many word heights wide (about 1.2 in of 10 pt type) is running text, not a table cell, a list number
or a page number: a borderless two-column table of terms and definitions is not read as two columns."""
_MIN_COLUMN_RUNS = 3
_GUTTER = 1.0
"""Words on both sides of a column start with a gap under this many (body) word heights, or under 2.5 times the
line's usual word gap, form one spanning line (a heading whose space falls on the column start)."""
_PARAGRAPH_GAP = 0.5
"""Two spanning lines closer than this many line heights are one paragraph (a heading on two lines)."""
_PARAGRAPH_PITCH = 1.3
_FULL_LINE = 0.6
"""A column's last line at least this share of its widest line is wrapped text that may run on into the next."""
_DESCENDERS = frozenset("gjpqyQ,;()[]{}/|@$")
_STOPS = (".", "!", "?", ":", "。", "！", "？", "：", '"', "”", "'", "’")


@dataclass(frozen=True, slots=True)
class Word:
    """A word Tesseract read: its text, box (image pixels), confidence (0..1) and its (block, paragraph, line)."""

    text: str
    box: BBox
    confidence: float
    line: tuple[int, int, int]


@dataclass(slots=True)
class _Piece:
    """A line, or the part of one inside a column; ``column`` None: it spans the columns."""

    words: list[Word]
    column: int | None

    @property
    def box(self) -> BBox:
        box = self.words[0].box
        for word in self.words[1:]:
            box = box.union(word.box)
        return box

    @property
    def height(self) -> float:
        """The line's height: its box's, ascenders to descenders."""
        box = self.box
        return max(box.bottom - box.top, 1.0)

    @property
    def size(self) -> float | None:
        """The type size: the height of the line's tall words without descenders (capitals, digits, ascenders, CJK).

        None when it has none. A word's box runs from its highest to its lowest ink, so "depots" is a third higher
        than "northern" in the same type.
        """
        tall = [
            w.box.bottom - w.box.top
            for w in self.words
            if any(_tall(c) for c in w.text) and not any(c in _DESCENDERS for c in w.text)
        ]
        return max(tall) if tall else None

    @property
    def text(self) -> str:
        """The words joined by spaces (none between CJK characters)."""
        return join_words(w.text for w in self.words)


@dataclass(slots=True)
class Block:
    """A paragraph in reading order: its lines' words."""

    lines: list[_Piece] = field(default_factory=list)

    @property
    def words(self) -> list[Word]:
        """The paragraph's words in reading order."""
        return [w for line in self.lines for w in line.words]

    @property
    def text(self) -> str:
        """The lines joined by line breaks."""
        return "\n".join(line.text for line in self.lines)


def column_starts(lines: Sequence[Sequence[Word]]) -> list[float]:
    """The x of every column start after the first (empty for a one-column page); see the module for the rule."""
    words = [w for line in lines for w in line]
    if not words:
        return []
    height = median(w.box.bottom - w.box.top for w in words)
    tol = height / 2
    runs = [run for line in lines for run in _runs(line, height)]
    left, right = min(r.x0 for r in runs), max(r.x1 for r in runs)
    width = right - left
    starts: list[float] = []
    for group in _clusters(sorted(runs, key=lambda r: r.x0), tol):
        x = median(r.x0 for r in group)
        wide = [r for r in group if r.x1 - r.x0 >= _WIDE_RUN * height]
        if len(wide) < _MIN_COLUMN_RUNS or x - left < 0.2 * width or right - x < 0.15 * width:
            continue
        top, bottom = min(r.top for r in wide), max(r.bottom for r in wide)
        beside = [r for r in runs if r.top < bottom and r.bottom > top]
        crossing = sum(1 for r in beside if r.x0 < x - tol and r.x1 > x + tol)
        text_left = sum(1 for r in beside if r.x1 <= x + tol and r.x1 - r.x0 >= _WIDE_RUN * height)
        if crossing <= len(wide) / 2 and text_left >= _MIN_COLUMN_RUNS:
            starts.append(x)
    return starts


def _runs(line: Sequence[Word], height: float) -> list[BBox]:
    """The boxes of a line's runs of words: split where two words stand more than :data:`_RUN_GAP` lines apart."""
    ordered = sorted(line, key=lambda w: w.box.x0)
    out: list[BBox] = []
    for word in ordered:
        if out and word.box.x0 - out[-1].x1 < _RUN_GAP * height:
            out[-1] = out[-1].union(word.box)
        else:
            out.append(word.box)
    return out


def _clusters(runs: Sequence[BBox], tol: float) -> list[list[BBox]]:
    groups: list[list[BBox]] = []
    for run in runs:
        if groups and run.x0 - groups[-1][-1].x0 <= tol:
            groups[-1].append(run)
        else:
            groups.append([run])
    return groups


def order_by_columns(lines: Sequence[Sequence[Word]]) -> list[Block] | None:
    """The page's paragraphs read column by column, or None for a page without columns (keep Tesseract's order).

    ``lines`` are Tesseract's lines (words in its order), in its order. A skewed scan is judged on its words turned
    straight (:func:`_straightened`); the blocks keep the words as Tesseract boxed them.
    """
    original = {id(w): w for line in lines for w in line}
    lines, source = _straightened(lines)
    starts = column_starts(lines)
    if not starts:
        return None
    blocks = _order(lines, starts)
    for block in blocks:
        for piece in block.lines:
            piece.words = [original[source[id(w)]] for w in piece.words]
    return blocks


def _straightened(lines: Sequence[Sequence[Word]]) -> tuple[list[list[Word]], dict[int, int]]:
    """The words turned by the page's skew so that its lines run level, and each new word's id -> its original's.

    The skew is the median slope of the lines of 4+ words; under 0.1 degree the words are left alone. A column's
    left edge drifts 35 px down a 1,000 px column at 2 degrees, more than the half word height the column rule
    allows.
    """
    slopes = []
    for line in lines:
        if len(line) < 4:
            continue
        xs = [(w.box.x0 + w.box.x1) / 2 for w in line]
        ys = [(w.box.top + w.box.bottom) / 2 for w in line]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        spread = sum((x - mx) ** 2 for x in xs)
        if spread > 0:
            slopes.append(sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / spread)
    slope = median(slopes) if slopes else 0.0
    if abs(slope) < 0.0017 or abs(slope) > 0.2:  # under 0.1 degree, or not a skew (over 11 degrees)
        return [list(line) for line in lines], {id(w): id(w) for line in lines for w in line}
    angle = atan(slope)
    c, s = cos(angle), sin(angle)
    out: list[list[Word]] = []
    source: dict[int, int] = {}
    for line in lines:
        turned = []
        for w in line:
            x, y = (w.box.x0 + w.box.x1) / 2, (w.box.top + w.box.bottom) / 2
            nx, ny = x * c + y * s, -x * s + y * c
            half_w, half_h = (w.box.x1 - w.box.x0) / 2, (w.box.bottom - w.box.top) / 2
            word = Word(w.text, BBox(nx - half_w, ny - half_h, nx + half_w, ny + half_h), w.confidence, w.line)
            source[id(word)] = id(w)
            turned.append(word)
        out.append(turned)
    return out, source


def _order(lines: Sequence[Sequence[Word]], starts: Sequence[float]) -> list[Block]:
    """The blocks of a page with columns starting at ``starts`` (see the module)."""
    words = [w for line in lines for w in line]
    height = median(w.box.bottom - w.box.top for w in words)
    pieces = [piece for line in lines for piece in _split(line, starts, height)]
    spanning = sorted((p for p in pieces if p.column is None), key=lambda p: p.box.top)
    cuts = [(p.box.top + p.box.bottom) / 2 for p in spanning]
    bands: list[list[list[_Piece]]] = [[[] for _ in range(len(starts) + 1)] for _ in range(len(spanning) + 1)]
    for piece in pieces:
        if piece.column is not None:
            middle = (piece.box.top + piece.box.bottom) / 2
            bands[sum(1 for c in cuts if c < middle)][piece.column].append(piece)
    blocks: list[Block] = []
    for number, band in enumerate(bands):
        previous: Block | None = None  # the last paragraph of the band's previous column
        width = 0.0  # that column's widest line
        for column in band:
            column.sort(key=lambda p: p.box.top)
            paragraphs = _paragraphs(column)
            if paragraphs and previous is not None and _continues(previous, paragraphs[0], width):
                previous.lines.extend(paragraphs[0].lines)
                paragraphs = paragraphs[1:]
            blocks.extend(paragraphs)
            if paragraphs:
                previous = paragraphs[-1]
            if column:
                width = max(p.box.x1 - p.box.x0 for p in column)
        if number < len(spanning):
            line = spanning[number]
            last = blocks[-1] if blocks else None
            if (
                last is not None
                and last.lines[-1].column is None
                and line.box.top - last.lines[-1].box.bottom < _PARAGRAPH_GAP * line.height
                and _similar(last.lines[-1], line)
            ):
                last.lines.append(line)  # a heading's second line
            else:
                blocks.append(Block([line]))
    return blocks


def _split(line: Sequence[Word], starts: Sequence[float], height: float) -> list[_Piece]:
    """The line's parts, one per column it touches; one spanning piece when it crosses a column start."""
    tol = height / 2
    ordered = sorted(line, key=lambda w: w.box.x0)
    columns = [sum(1 for s in starts if w.box.x0 >= s - tol) for w in ordered]
    for word, column in zip(ordered, columns, strict=True):
        if column < len(starts) and word.box.x1 > starts[column] + tol:
            return [_Piece(list(line), None)]  # a word over a column start
    gaps = [b.box.x0 - a.box.x1 for a, b in zip(ordered, ordered[1:], strict=False)]
    usual = median(gaps) if gaps else 0.0
    for gap, column, following in zip(gaps, columns, columns[1:], strict=False):
        if column != following and gap < max(_GUTTER * height, 2.5 * usual):
            return [_Piece(list(line), None)]  # words on both sides of a column start, no gutter between
    pieces: list[_Piece] = []
    for word, column in zip(ordered, columns, strict=True):
        if pieces and pieces[-1].column == column:
            pieces[-1].words.append(word)
        else:
            pieces.append(_Piece([word], column))
    return pieces


def _paragraphs(column: Sequence[_Piece]) -> list[Block]:
    """A column's lines (top to bottom) grouped into paragraphs.

    Lines are compared by their middles: a box's top and bottom move with ascenders and descenders, the line
    pitch does not. A paragraph ends where the pitch grows by :data:`_PARAGRAPH_PITCH` over the column's usual one.
    """
    if not column:
        return []
    left = min(p.box.x0 for p in column)
    middles = [(p.box.top + p.box.bottom) / 2 for p in column]
    pitches = [b - a for a, b in zip(middles, middles[1:], strict=False)]
    height = median(p.height for p in column)
    usual = min(max(median(pitches), height), 1.5 * height) if pitches else height
    out: list[Block] = []
    for piece, pitch in zip(column, [0.0, *pitches], strict=True):
        if out:
            last = out[-1].lines[-1]
            indented = piece.box.x0 - left > 0.8 * piece.height and last.text.endswith(_STOPS)
            if pitch < _PARAGRAPH_PITCH * usual and _similar(last, piece) and not indented:
                out[-1].lines.append(piece)
                continue
        out.append(Block([piece]))
    return out


def _continues(block: Block, following: Block, width: float) -> bool:
    """Whether ``block`` (a column's last paragraph) runs on into ``following`` (the next column's first).

    It does when its last line has no sentence stop, fills most of the column (``width``: its widest line; a short
    last line ends a paragraph, or is a heading) and is in type of the same size.
    """
    last, first = block.lines[-1], following.lines[0]
    wide = last.box.x1 - last.box.x0 >= _FULL_LINE * width
    return wide and not last.text.rstrip().endswith(_STOPS) and _similar(last, first)


def _similar(a: _Piece, b: _Piece) -> bool:
    """Whether two lines are in type of one size (within 30%); a line without tall letters is like any."""
    x, y = a.size, b.size
    return x is None or y is None or max(x, y) <= 1.3 * min(x, y)


def _tall(char: str) -> bool:
    return char.isupper() or char.isdigit() or char in "bdfhklt" or "\u3000" <= char <= "\u9fff"
