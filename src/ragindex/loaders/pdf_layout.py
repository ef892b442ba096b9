"""Reading order, headings and paragraphs of a PDF page from its text runs, with no model.

The rules, chosen on the parsing test set (docs/parsing.md):

* **Order**: the pdf's own order of its text (the content stream's). Writers emit text column by column, so this
  keeps two- and three-column pages in reading order, where every order by position (top to bottom, left to
  right) read across the columns on the test set (LibreOffice's two columns, the Federal Register's three).
* **Lines**: consecutive runs at the same height, each starting right of the last (a table row without rules
  stays one line, its label with its values).
* **Paragraphs**: consecutive lines with a gap under 0.9 line heights, the same size and weight, and starting
  within the paragraph's horizontal extent (a jump to another column starts a new paragraph).
* **Tables** (found elsewhere) take the place of their words, before the first paragraph below their top.
* **Headings**: a paragraph of at most three lines whose font is at least 15% larger than the document's body
  size (the size with the most characters) is a heading; larger sizes get lower levels (the largest is level 1).
  A short bold single line in body size, not ending in a sentence stop, is a heading one level below the
  smallest larger size.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ragindex.types import BBox

_HEADING_RATIO = 1.15
_PARAGRAPH_GAP = 0.9
_MAX_HEADING_LINES = 3
_MAX_HEADING_CHARS = 200
_SENTENCE_STOPS = (".", ":", ";", ",", "。", "：", "；", "，")


@dataclass(slots=True)
class Line:
    """Words on one baseline, left to right."""

    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    size: float
    bold: bool

    @property
    def height(self) -> float:
        """The line's height in points (at least 1)."""
        return max(self.bottom - self.top, 1.0)


@dataclass(slots=True)
class Paragraph:
    """Consecutive lines of one column; ``kind`` is ``text``, ``heading`` or ``table`` (then ``rows`` is set)."""

    lines: list[Line] = field(default_factory=list)
    kind: str = "text"
    level: int = 0
    rows: list[list[str | None]] | None = None
    box: BBox | None = None
    continues: bool = False  # a table that continues the previous page's last table (its rows only)

    @property
    def bbox(self) -> BBox:
        """The paragraph's box (a table's own box)."""
        if self.box is not None:
            return self.box
        return BBox(
            min(x.x0 for x in self.lines),
            min(x.top for x in self.lines),
            max(x.x1 for x in self.lines),
            max(x.bottom for x in self.lines),
        )

    @property
    def text(self) -> str:
        """The lines joined by line breaks."""
        return "\n".join(x.text for x in self.lines)

    @property
    def size(self) -> float:
        """The largest font size of its lines."""
        return max(x.size for x in self.lines)


def lines_of(words: Iterable[dict[str, object]]) -> list[Line]:
    """Group text runs (pdfplumber-style words with ``size`` and ``fontname``), in the pdf's order, into lines."""
    groups: list[list[dict[str, object]]] = []
    for word in words:
        if groups and _same_line(groups[-1][-1], word):
            groups[-1].append(word)
        else:
            groups.append([word])
    return [_line(group) for group in groups]


def _same_line(last: dict[str, object], word: dict[str, object]) -> bool:
    top, bottom = float(word["top"]), float(word["bottom"])  # type: ignore[arg-type]
    last_top, last_bottom = float(last["top"]), float(last["bottom"])  # type: ignore[arg-type]
    if abs((top + bottom) / 2 - (last_top + last_bottom) / 2) > (last_bottom - last_top) / 2:
        return False
    # however far right: in the pdf's order, the next run at the same height is the same row (a table row, tabbed
    # text); a column change comes back up to the top of the next column
    return float(word["x0"]) >= float(last["x1"]) - 1.0  # type: ignore[arg-type]


def _line(words: list[dict[str, object]]) -> Line:
    words.sort(key=lambda w: float(w["x0"]))  # type: ignore[arg-type]
    sizes = Counter(round(float(w.get("size", 0.0)), 1) for w in words)  # type: ignore[arg-type]
    return Line(
        text=join_words(str(w["text"]) for w in words),
        x0=min(float(w["x0"]) for w in words),  # type: ignore[arg-type]
        top=min(float(w["top"]) for w in words),  # type: ignore[arg-type]
        x1=max(float(w["x1"]) for w in words),  # type: ignore[arg-type]
        bottom=max(float(w["bottom"]) for w in words),  # type: ignore[arg-type]
        size=sizes.most_common(1)[0][0],
        bold=all("bold" in str(w.get("fontname", "")).lower() for w in words),
    )


def join_words(words: Iterable[str]) -> str:
    """Words of a line joined by spaces, except between two CJK characters (Chinese has no spaces)."""
    out = ""
    for word in words:
        if out and not (_cjk(out[-1]) and _cjk(word[0])):
            out += " "
        out += word
    return out


def _cjk(char: str) -> bool:
    return "\u3000" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff" or "\uff00" <= char <= "\uffef"


def paragraphs_of(lines: Sequence[Line]) -> list[Paragraph]:
    """Split lines, in the pdf's order, into paragraphs (see the module for the rules)."""
    out: list[Paragraph] = []
    for line in lines:
        if out and _continues(out[-1], line):
            out[-1].lines.append(line)
        else:
            out.append(Paragraph(lines=[line]))
    return out


def _continues(paragraph: Paragraph, line: Line) -> bool:
    last = paragraph.lines[-1]
    gap = line.top - last.bottom
    if not (-1 <= gap <= _PARAGRAPH_GAP * last.height):
        return False
    if abs(line.size - last.size) >= 0.6 or line.bold != last.bold:
        return False
    box = paragraph.bbox
    return box.x0 - 2 * line.size <= line.x0 <= box.x1 and line.x1 >= box.x0


def place_tables(paragraphs: Sequence[Paragraph], tables: Sequence[Paragraph]) -> list[Paragraph]:
    """``paragraphs`` with each table placed among them.

    A table goes before the first paragraph that starts below its top and overlaps it horizontally (at the end
    when none does).
    """
    out = list(paragraphs)
    for table in sorted(tables, key=lambda t: t.bbox.top):
        box = table.bbox
        at = next(
            (
                i
                for i, p in enumerate(out)
                if p.kind != "table" and p.bbox.top >= box.top and p.bbox.x0 < box.x1 and p.bbox.x1 > box.x0
            ),
            len(out),
        )
        out.insert(at, table)
    return out


def body_size(lines: Iterable[Line]) -> float:
    """The font size carrying the most characters (the body text's)."""
    weights: Counter[float] = Counter()
    for line in lines:
        weights[line.size] += len(line.text)
    return weights.most_common(1)[0][0] if weights else 0.0


def _bold_line(paragraph: Paragraph, text: str, body: float) -> bool:
    """A single bold line in body size that does not end like a sentence (a run-in heading)."""
    single = len(paragraph.lines) == 1 and paragraph.lines[0].bold
    return single and not text.rstrip().endswith(_SENTENCE_STOPS) and abs(paragraph.size - body) < 0.6


class HeadingLevels:
    """Heading levels by font size: sizes at least 15% above the body size, largest first (level 1).

    Args:
        lines: Every line of the document (the sizes are counted over all pages).
    """

    def __init__(self, lines: Iterable[Line]) -> None:
        lines = list(lines)
        self.body = body_size(lines)
        larger = sorted({x.size for x in lines if self.body and x.size >= self.body * _HEADING_RATIO}, reverse=True)
        self.levels = {size: min(i + 1, 5) for i, size in enumerate(larger)}

    def mark(self, paragraph: Paragraph) -> None:
        """Mark ``paragraph`` as a heading (with its level) when it looks like one."""
        text = paragraph.text
        if len(paragraph.lines) > _MAX_HEADING_LINES or len(text) > _MAX_HEADING_CHARS or not text.strip():
            return
        level = self.levels.get(paragraph.size)
        if level is None and _bold_line(paragraph, text, self.body):
            level = len(self.levels) + 1
        if level is not None and any(ch.isalpha() for ch in text):
            paragraph.kind = "heading"
            paragraph.level = min(level, 6)
