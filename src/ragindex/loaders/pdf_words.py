"""A PDF page's text runs with their boxes and fonts (PDFium), and its ruled tables (pdfplumber, only where drawn).

PDFium (pypdfium2, Apache-2.0/BSD) reads a page's text in ~7 ms; pdfminer, under pdfplumber, takes ~125 ms for
the same page (docs/parsing.md). So text always comes from PDFium: each of its text rectangles (a run of
characters on one line, split where the text jumps, e.g. at a column gutter) becomes a "word" with its box, font
size and font name, in the top-left coordinates pdfplumber uses. pdfplumber's ruling-line table finder runs only
on pages that draw enough path objects to hold a grid, so a page without lines never pays for pdfminer.
"""

from __future__ import annotations

import ctypes
import io
import math
import re
from collections.abc import Sequence
from typing import Any

from ragindex.types import BBox

MIN_TABLE_PATHS = 4
"""Path objects a page needs before its tables are looked for (a ruled 2 x 2 table draws at least 4 lines)."""
MIN_TABLE_ROWS = 2
MIN_TABLE_COLUMNS = 2
MAX_CELL_LINES = 8
"""A cell with more lines than this is rows the finder failed to separate, not a cell."""

_WIDE_RUN = 1.35
"""A run wider than this times what its characters need is looked at for gaps inside it (cells in one run)."""
_MEAN_CHAR_EM = 0.5
_CELL_GAP_EM = 0.65
_NUMBER = r"[-+(−–$€£]*\d[\d,.–-]*[%)*]*"
_TWO_NUMBERS_AT_END = re.compile(rf"(?:^|\s){_NUMBER}\s+{_NUMBER}$")

Word = dict[str, object]
Table = tuple[BBox, list[list[str | None]]]


def page_words(page: Any, textpage: Any) -> list[Word]:
    """The text runs of a PDFium page as pdfplumber-style words, ``top`` measured from the top of the page.

    Each word has ``text``, ``x0``, ``x1``, ``top``, ``bottom``, ``size`` (its first character's font size as
    drawn, text matrix included) and ``fontname`` (``-Bold`` appended when the font's weight is 600 or more).
    """
    import pypdfium2.raw as pdfium_c

    height = page.get_height()
    name = ctypes.create_string_buffer(128)
    matrix = pdfium_c.FS_MATRIX()
    flags = ctypes.c_int()
    words: list[Word] = []
    for i in range(textpage.count_rects()):
        left, bottom, right, top = textpage.get_rect(i)
        text = textpage.get_text_bounded(left, bottom, right, top).strip()
        if not text:
            continue
        index = pdfium_c.FPDFText_GetCharIndexAtPos(textpage.raw, left + 0.5, (bottom + top) / 2, 2.0, 2.0)
        size, font = 0.0, ""
        if index >= 0:
            # the nominal size times the text matrix's vertical scale: a pdf that scales its text by the matrix
            # (Quartz) has a nominal size of 1.0 for every character (measured in docs/parsing.md)
            size = float(pdfium_c.FPDFText_GetFontSize(textpage.raw, index))
            if pdfium_c.FPDFText_GetMatrix(textpage.raw, index, matrix):
                size *= math.hypot(matrix.c, matrix.d) or 1.0
            size = round(size, 1)
            if pdfium_c.FPDFText_GetFontInfo(textpage.raw, index, name, len(name), ctypes.byref(flags)):
                font = name.value.decode("latin-1", "replace")
            if pdfium_c.FPDFText_GetFontWeight(textpage.raw, index) >= 600:
                font += "-Bold"
        pieces = [(text, left, right)]
        if (
            index >= 0
            and size > 0
            and (right - left > _WIDE_RUN * len(text) * size * _MEAN_CHAR_EM or _TWO_NUMBERS_AT_END.search(text))
        ):
            pieces = _split_at_gaps(textpage, index, (left, bottom, right, top), size) or pieces
        for piece, x0, x1 in pieces:
            words.append(
                {
                    "text": " ".join(piece.split()),
                    "x0": x0,
                    "x1": x1,
                    "top": height - top,
                    "bottom": height - bottom,
                    "size": size,
                    "fontname": font,
                }
            )
    return words


def _split_at_gaps(
    textpage: Any, index: int, rect: tuple[float, float, float, float], size: float
) -> list[tuple[str, float, float]] | None:
    """A text run cut where its characters leave a gap of over ``_CELL_GAP_EM`` ems, as ``(text, x0, x1)``.

    Table cells set apart by spaces or by positioning inside one run come apart; None when there is no such gap.
    Only runs much wider than their characters need, or ending in two numbers, are looked at (the caller checks),
    so prose costs nothing.
    """
    import pypdfium2.raw as pdfium_c

    left, bottom, right, top = rect
    raw = textpage.raw
    c_left, c_right, c_bottom, c_top = (ctypes.c_double() for _ in range(4))
    pieces: list[tuple[str, float, float]] = []
    text, x0, x1 = "", 0.0, 0.0
    spaced = False
    for i in range(index, pdfium_c.FPDFText_CountChars(raw)):
        char = chr(pdfium_c.FPDFText_GetUnicode(raw, i))
        if char.isspace() or char == "\x00":
            spaced = bool(text)
            continue
        pdfium_c.FPDFText_GetCharBox(raw, i, c_left, c_right, c_bottom, c_top)
        middle = (c_bottom.value + c_top.value) / 2
        if c_left.value > right + 1 or c_right.value < left - 1 or not bottom <= middle <= top:
            break  # past the run
        if text and c_left.value - x1 > _CELL_GAP_EM * size:
            pieces.append((text, x0, x1))
            text, spaced = "", False
        if not text:
            x0, x1 = c_left.value, c_right.value
        text += (" " if spaced else "") + char
        spaced = False
        x1 = max(x1, c_right.value)
    if text:
        pieces.append((text, x0, x1))
    return pieces if len(pieces) > 1 else None


def draws_paths(page: Any) -> bool:
    """Whether the page draws enough path objects (lines, rectangles) to hold a ruled table."""
    import pypdfium2.raw as pdfium_c

    for count, _ in enumerate(page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_PATH], max_depth=2), 1):
        if count >= MIN_TABLE_PATHS:
            return True
    return False


def shows_image(page: Any) -> bool:
    """Whether the page draws an image (a scan) — a page with neither text nor images is blank."""
    import pypdfium2.raw as pdfium_c

    return any(True for _ in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2))


class RuledTables:
    """pdfplumber's table finder, opened on the first page that needs it (pdfminer parses only those pages)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._pdf: Any = None

    def find(self, number: int) -> list[Table]:
        """The ruled tables of page ``number`` (1-based) with at least 2 rows and 2 columns."""
        if self._pdf is None:
            import pdfplumber

            self._pdf = pdfplumber.open(io.BytesIO(self.data))
        page = self._pdf.pages[number - 1]
        try:
            out: list[Table] = []
            words: list[dict[str, Any]] | None = None
            for table in page.find_tables():
                rows = table.extract()
                if _spanning(table, rows):
                    words = page.extract_words() if words is None else words
                    rows = split_spanning_cells(table, rows, words)
                if _plausible(rows):
                    out.append((BBox(*table.bbox), rows))
            return out
        finally:
            page.close()

    def close(self) -> None:
        """Close the pdfplumber document if it was opened."""
        if self._pdf is not None:
            self._pdf.close()


_SLOT_TOLERANCE = 1.0
_SAME_LINE = 2.0
_CELL_GAP_HEIGHTS = 0.8
"""Words of one line in two columns stand at least this times their height apart (a word space is ~0.3)."""


def _slots(table: Any) -> list[tuple[float, float]]:
    """The x-ranges of the table's column slots (pdfplumber's rows put a cell in the slot of its left edge)."""
    lefts = sorted({float(cell[0]) for cell in table.cells})
    return [(x, lefts[i + 1] if i + 1 < len(lefts) else float(table.bbox[2])) for i, x in enumerate(lefts)]


def _covered(cell: Sequence[float], slots: Sequence[tuple[float, float]]) -> list[int]:
    return [k for k, (x0, _) in enumerate(slots) if cell[0] - _SLOT_TOLERANCE <= x0 < cell[2] - _SLOT_TOLERANCE]


def _spanning(table: Any, rows: Sequence[Sequence[str | None]]) -> bool:
    """Cheap test: does a filled cell of ``table`` span two column slots or more?"""
    slots = _slots(table)
    if len(slots) < MIN_TABLE_COLUMNS:
        return False
    for row, texts in zip(table.rows, rows, strict=False):
        for cell, text in zip(row.cells, texts, strict=False):
            if cell is not None and text and len(_covered(cell, slots)) > 1:
                return True
    return False


def split_spanning_cells(
    table: Any, rows: Sequence[Sequence[str | None]], words: Sequence[dict[str, Any]]
) -> list[list[str | None]]:
    """A cell that spans several column slots, split into them where its words line up with the columns.

    A grid that draws its column rules only around the header (or the totals row) and rules the body rows
    across the whole width leaves each body row one wide cell (``Austria 86.2 13.8 0 3,375``). Its words still
    stand in the header's columns: when every word lies inside one slot and words of one line in neighbouring
    slots are a cell gap apart (not a word space), the cell's text goes to the slots. A heading centred over
    several columns, or a note that runs across them, has a word across a slot edge or word-spaced words, and
    stays whole.
    """
    slots = _slots(table)
    out = [list(r) for r in rows]
    for r, (row, texts) in enumerate(zip(table.rows, rows, strict=False)):
        for j, (cell, text) in enumerate(zip(row.cells, texts, strict=False)):
            covered = _covered(cell, slots) if cell is not None and text else []
            if len(covered) < 2 or any(out[r][k] for k in covered if k != j):
                continue
            parts = _split_cell(cell, [slots[k] for k in covered], words)
            if parts is not None:
                for k, part in zip(covered, parts, strict=True):
                    out[r][k] = part
    return out


def _split_cell(
    cell: Sequence[float], slots: Sequence[tuple[float, float]], words: Sequence[dict[str, Any]]
) -> list[str | None] | None:
    x0, top, x1, bottom = (float(v) for v in cell)
    inside = [
        w
        for w in words
        if x0 <= (float(w["x0"]) + float(w["x1"])) / 2 <= x1
        and top <= (float(w["top"]) + float(w["bottom"])) / 2 <= bottom
    ]
    placed: list[tuple[int, dict[str, Any]]] = []
    for w in inside:
        slot = next(
            (
                k
                for k, (left, right) in enumerate(slots)
                if left - _SLOT_TOLERANCE <= float(w["x0"]) and float(w["x1"]) <= right + _SLOT_TOLERANCE
            ),
            None,
        )
        if slot is None:
            return None  # a word across a column edge: the cell really spans
        placed.append((slot, w))
    if len({k for k, _ in placed}) < 2:
        return None
    placed.sort(key=lambda p: (round(float(p[1]["top"]) / _SAME_LINE), float(p[1]["x0"])))
    for (k, a), (m, b) in zip(placed, placed[1:], strict=False):
        same_line = abs(float(a["top"]) - float(b["top"])) <= _SAME_LINE
        height = float(a["bottom"]) - float(a["top"])
        if same_line and k != m and float(b["x0"]) - float(a["x1"]) < _CELL_GAP_HEIGHTS * height:
            return None
    parts: list[list[tuple[str, float]]] = [[] for _ in slots]
    for k, w in placed:
        parts[k].append((str(w["text"]), float(w["top"])))
    return [_lines_text(p) for p in parts]


def _lines_text(words: Sequence[tuple[str, float]]) -> str | None:
    """Words (text, top) in reading order as lines of text, or None for none."""
    if not words:
        return None
    lines: list[list[str]] = []
    last_top: float | None = None
    for text, top in words:
        if last_top is None or abs(top - last_top) > _SAME_LINE:
            lines.append([])
            last_top = top
        lines[-1].append(text)
    return "\n".join(" ".join(line) for line in lines)


def _plausible(rows: Sequence[Sequence[str | None]]) -> bool:
    """Whether the finder's rows look like a table: 2 rows and 2 columns at least, no cell a column of lines.

    A grid whose rows have no lines between them comes back as one row of tall cells (the 50 states of the NICS
    table of docs/parsing.md in one cell); its text reads better as lines.
    """
    if len(rows) < MIN_TABLE_ROWS or max((len(r) for r in rows), default=0) < MIN_TABLE_COLUMNS:
        return False
    return all((cell or "").count("\n") < MAX_CELL_LINES for row in split_merged_rows(rows) for cell in row)


def split_merged_rows(rows: Sequence[Sequence[str | None]]) -> list[list[str | None]]:
    """Rows the finder merged, split again: a row whose filled cells all hold ``k > 1`` lines is ``k`` rows.

    A grid with rules only between every fifth row gives five states per cell (the NICS table of docs/parsing.md).
    A grid cell may also stack the labels and the values of ``k`` logical rows (``OTSL / HTML`` beside
    ``0.965 / 0.969``) next to a one-line label that spans them (``6``): when the ``k``-line cells are two or more,
    one of them numbers only, and every one-line cell stands before them, the row is split and the spanning label
    given to each part. A label that merely wraps beside one-line values is left alone.
    """
    out: list[list[str | None]] = []
    for row in rows:
        parts = [(cell or "").split("\n") for cell in row]
        counts = {len(p) for p, cell in zip(parts, row, strict=True) if cell}
        if len(counts) == 1 and (k := counts.pop()) > 1:
            out.extend([[p[i] if len(p) == k else None for p in parts] for i in range(k)])
        elif (k := _stacked(row, parts)) > 1:
            out.extend(
                [
                    [(p[i] if len(p) == k else p[0]) if cell else None for p, cell in zip(parts, row, strict=True)]
                    for i in range(k)
                ]
            )
        else:
            out.append(list(row))
    return out


def _stacked(row: Sequence[str | None], parts: Sequence[Sequence[str]]) -> int:
    """``k`` when ``row`` stacks ``k`` logical rows beside leading one-line spanning labels, else 0."""
    from ragindex.loaders.pdf_tables import is_numeric

    filled = [(i, p) for i, (p, cell) in enumerate(zip(parts, row, strict=True)) if cell]
    k = max((len(p) for _, p in filled), default=0)
    stacked = [i for i, p in filled if len(p) == k]
    single = [i for i, p in filled if len(p) == 1]
    if k < 2 or len(stacked) < 2 or len(stacked) + len(single) != len(filled):
        return 0
    if not single or max(single) > min(stacked):
        return 0
    if not any(all(is_numeric(line) for line in parts[i]) for i in stacked):
        return 0
    return k


def outside(words: Sequence[Word], boxes: Sequence[BBox]) -> list[Word]:
    """The words whose centre lies in none of ``boxes`` (a table's words are read from the table)."""

    def inside(word: Word) -> bool:
        x = (float(word["x0"]) + float(word["x1"])) / 2  # type: ignore[arg-type]
        y = (float(word["top"]) + float(word["bottom"])) / 2  # type: ignore[arg-type]
        return any(b.x0 <= x <= b.x1 and b.top <= y <= b.bottom for b in boxes)

    return [w for w in words if not inside(w)]
