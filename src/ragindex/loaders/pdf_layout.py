"""Reading order, headings and paragraphs of a PDF page from its words (pdfplumber), with no model.

The rules, chosen on the parsing test set (docs/parsing.md):

* **Lines**: words whose vertical centres are within half a line height, left to right.
* **Paragraphs**: consecutive lines of one column with a gap under 0.9 line heights and the same font size.
* **Columns**: a paragraph lying wholly left or right of the page's middle is a column paragraph; one crossing
  it is full-width. Reading order walks the page top to bottom; at each full-width paragraph, the column
  paragraphs above it are emitted left column first, then right.
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
_COLUMN_SHARE = 0.25
_MIN_COLUMN_ROWS = 3
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


def lines_of(words: Iterable[dict[str, object]], page_width: float) -> tuple[list[Line], float | None]:
    """Group pdfplumber words (with ``size`` and ``fontname``) into lines, top to bottom.

    Returns:
        The lines, and the x of the gutter on a two-column page (None on a one-column page). On a two-column
        page, words at one height on both sides of a wide gap across the middle are two lines.
    """
    ordered = sorted(words, key=lambda w: (float(w["top"]), float(w["x0"])))  # type: ignore[arg-type]
    lines: list[list[dict[str, object]]] = []
    last_top = last_bottom = 0.0
    for word in ordered:
        top, bottom = float(word["top"]), float(word["bottom"])  # type: ignore[arg-type]
        if lines and abs((top + bottom) / 2 - (last_top + last_bottom) / 2) <= (last_bottom - last_top) / 2:
            lines[-1].append(word)
            last_top, last_bottom = min(last_top, top), max(last_bottom, bottom)
            continue
        lines.append([word])
        last_top, last_bottom = top, bottom
    middle = page_width / 2
    splits = [_split_at_gutter(group, middle) for group in lines]
    if not _two_columns(splits, page_width):
        return [_line(group) for group in lines], None
    return [_line(part) for parts in splits for part in parts], middle


def _split_at_gutter(words: list[dict[str, object]], middle: float) -> list[list[dict[str, object]]]:
    words.sort(key=lambda w: float(w["x0"]))  # type: ignore[arg-type]
    for i in range(1, len(words)):
        left_end, right_start = float(words[i - 1]["x1"]), float(words[i]["x0"])  # type: ignore[arg-type]
        size = float(words[i].get("size", 10.0))  # type: ignore[arg-type]
        if left_end <= middle <= right_start and right_start - left_end > size:
            return [words[:i], words[i:]]
    return [words]


def _two_columns(splits: Sequence[Sequence[Sequence[dict[str, object]]]], page_width: float) -> bool:
    """Whether the page is set in two columns: at least three rows split at the middle into two wide halves.

    A borderless table also has rows split at the middle, but into narrow cells, so its rows stay whole (a
    row label keeps its values) and the page is read top to bottom.
    """
    wide = 0
    for parts in splits:
        if len(parts) == 2 and all(_width(part) >= _COLUMN_SHARE * page_width for part in parts):
            wide += 1
    return wide >= _MIN_COLUMN_ROWS


def _width(words: Sequence[dict[str, object]]) -> float:
    return max(float(w["x1"]) for w in words) - min(float(w["x0"]) for w in words)  # type: ignore[arg-type]


def _line(words: list[dict[str, object]]) -> Line:
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


def paragraphs_of(lines: Sequence[Line], middle: float | None) -> list[Paragraph]:
    """Split lines into paragraphs of one column each (see the module for the rules; ``middle``: the gutter)."""
    out: list[Paragraph] = []
    open_by_column: dict[str, Paragraph] = {}
    for line in lines:
        # the short last line of a full-width paragraph sits on one side of the middle: it still continues it
        if out and abs(line.x0 - out[-1].lines[-1].x0) < 3 and _continues(out[-1], line):
            out[-1].lines.append(line)
            continue
        column = _column(line.x0, line.x1, middle)
        current = open_by_column.get(column)
        if current is not None and _continues(current, line):
            current.lines.append(line)
            continue
        paragraph = Paragraph(lines=[line])
        out.append(paragraph)
        open_by_column[column] = paragraph
        if column == "full":
            open_by_column = {"full": paragraph}
        else:
            open_by_column.pop("full", None)
    return out


def _continues(paragraph: Paragraph, line: Line) -> bool:
    last = paragraph.lines[-1]
    gap = line.top - last.bottom
    return -1 <= gap <= _PARAGRAPH_GAP * last.height and abs(line.size - last.size) < 0.6 and line.bold == last.bold


def _column(x0: float, x1: float, middle: float | None) -> str:
    slack = 2.0
    if middle is None:
        return "full"
    if x1 <= middle + slack:
        return "left"
    if x0 >= middle - slack:
        return "right"
    return "full"


def reading_order(paragraphs: Sequence[Paragraph], middle: float | None) -> list[Paragraph]:
    """Paragraphs in reading order: top to bottom, and within a two-column band left column before right."""
    ordered = sorted(paragraphs, key=lambda p: (p.bbox.top, p.bbox.x0))
    out: list[Paragraph] = []
    left: list[Paragraph] = []
    right: list[Paragraph] = []
    for paragraph in ordered:
        box = paragraph.bbox
        column = _column(box.x0, box.x1, middle)
        if column == "full":
            out.extend(left)
            out.extend(right)
            left, right = [], []
            out.append(paragraph)
        else:
            (left if column == "left" else right).append(paragraph)
    out.extend(left)
    out.extend(right)
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
