"""Tables without rules: found from the geometry of a PDF page's text runs (issue 26).

A ruled table is found by pdfplumber from its lines (:mod:`ragindex.loaders.pdf_words`). Many tables draw no
vertical rules (papers' results tables, financial statements, reports): their structure is in the positions of
their text. This module reads it, with no model:

* **Segments**: the page's text runs, dot leaders cut out (``Labor cost ........ $766,865`` is two cells), runs
  closer than half an em joined again.
* **Bands**: segments whose vertical centres agree (within a third of a line) form a band, top to bottom.
* **Regions**: runs of bands with two or more segments (short ones, not two columns of prose), the one-segment
  bands between them included (wrapped cells, row-spanning labels), and no vertical gap over 2.5 lines.
* **Columns**: the gutters are the x ranges that (almost) no segment of the data bands covers; a label alone on
  its band (a group's title centred over the values) does not close a gutter it straddles, and stands in the first
  column it reaches.
* **Rows**: a band with values is a row; a band with labels only is, by its place, a row-spanning label (the
  rows above and below it have that column empty: it is given to each of them), the rest of a wrapped label (it
  is joined to the neighbouring row it is closest to, or to the row whose leader it leads into), or a section row
  (it ends with ``:``). A band of text only in non-numeric columns right under a row continues its cells.
  Labels stacked in one cell, each beside its own values, are simply rows of their own here.
* **Header**: the bands above the first band with a number in a numeric column (at most seven, joined per
  column); a table without numeric columns takes its first band.

What it does not do: tables whose cells are separated by spaces inside one text run (typewriter tables), and
tables set inside one column of a multi-column page next to prose (the prose shares the table's bands).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ragindex.loaders.pdf_layout import Paragraph
from ragindex.types import BBox

Word = dict[str, object]

_LEADER = re.compile(r"\s*(?:\.\s?){4,}\s*|\s*(?:…\s?){2,}\s*|\s*(?:_\s?){4,}\s*")
_NUMERIC = re.compile(
    r"[-+−–(\[]?\s?[$€£¥]?\s?[-+−–]?\d[\d,.\s]*(?:%|‰|[a-zA-Z*†‡]{1,2})?\s?"
    r"(?:\s?[/±–-]\s?[-+−–]?\d[\d,.]*%?)?[)\]]?"
)
_TOKEN_NUMBER = re.compile(r"[-+−–(\[]?[$€£¥]?[-+−–]?\d[\d,.]*(?:%|‰)?(?:[–-]\d[\d,.]*%?)?[)\]]?[*†‡]?")
_THOUSANDS = re.compile(r"\d{3}")
_PLACEHOLDERS = frozenset({"-", "—", "–", "−", "n/a", "na", "n.a.", "nil", "none", "x", "*", "…", "..."})
_JOIN_GAP_EM = 0.5
_LIST_MARKER = re.compile(r"[•◦▪▫‣∙·●○■□➢►▶✓\-–—*\uf000-\uf8ff\x80-\x9f]|\(?(?:\d{1,2}|[a-zA-Z]|[ivxIVX]{1,4})[.)]")
_SECTION_GAP_LINES = 4.0
_SECTION_GAP_HEIGHTS = 0.8
_MAX_SECTION_LABELS = 2
_AXIS_MIN_TICKS = 4
_AXIS_SHARE = 0.75
_UNIT_SHARE = 0.8
_BAND_TOLERANCE = 0.34
_MAX_GAP_LINES = 2.5
_MIN_DATA_BANDS = 3
_MAX_HEADER_BANDS = 7
_PROSE_WORDS = 6
_PROSE_CHARS = 25
_PROSE_WORD_SHARE = 0.7
_OPENING = "(['\"“‘"
_COLUMN_X_STEP = 4.0
_MIN_COLUMN_LINES = 5
_MAX_TEXT_CELL_WORDS = 4.0
_NUMERIC_SHARE = 0.6


@dataclass(slots=True)
class Segment:
    """A piece of a line: one cell's text on one band."""

    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    size: float
    bold: bool = False
    leader: bool = False  # a dot leader ran from it to the next segment
    apart: bool = False  # cut from the next segment on purpose (numbers side by side): never joined to it

    @property
    def middle(self) -> float:
        """The vertical centre."""
        return (self.top + self.bottom) / 2


@dataclass(slots=True)
class Band:
    """Segments on one line across the page, left to right."""

    segments: list[Segment] = field(default_factory=list)

    @property
    def top(self) -> float:
        """The band's top."""
        return min(s.top for s in self.segments)

    @property
    def bottom(self) -> float:
        """The band's bottom."""
        return max(s.bottom for s in self.segments)

    @property
    def middle(self) -> float:
        """The vertical centre of its first segment."""
        return self.segments[0].middle

    @property
    def height(self) -> float:
        """The band's height (at least 1)."""
        return max(self.bottom - self.top, 1.0)


@dataclass(slots=True)
class GeoTable:
    """A table found from text positions: its box, its rows (the first ``header`` of them the header)."""

    box: BBox
    rows: list[list[str | None]]
    header: int
    columns: list[tuple[float, float]]


def is_numeric(text: str) -> bool:
    """Whether a cell holds a number (amounts, percentages, ``0.965``, ``12 ± 3``) or a placeholder (``—``)."""
    text = text.strip()
    return bool(text) and (text.lower() in _PLACEHOLDERS or _NUMERIC.fullmatch(text) is not None)


def drop_empty_columns(rows: Sequence[Sequence[str | None]]) -> list[list[str | None]]:
    """``rows`` without the columns that are empty in every row (a ruled grid's slivers around spanning cells)."""
    width = max((len(r) for r in rows), default=0)
    keep = [i for i in range(width) if any(i < len(r) and (r[i] or "").strip() for r in rows)]
    return [[r[i] if i < len(r) else None for i in keep] for r in rows]


def segments_of(words: Sequence[Word]) -> list[Segment]:
    """The words as segments, dot leaders cut out (their x positions estimated from the characters)."""
    out: list[Segment] = []
    for word in words:
        text = str(word["text"])
        x0, x1 = float(word["x0"]), float(word["x1"])  # type: ignore[arg-type]
        top, bottom = float(word["top"]), float(word["bottom"])  # type: ignore[arg-type]
        size = float(word.get("size") or (bottom - top))  # type: ignore[arg-type]
        bold = "bold" in str(word.get("fontname", "")).lower()
        if not (_maybe_leader(text) or _maybe_numbers(text)):  # most words of prose: one segment as they are
            out.append(Segment(text, x0, x1, top, bottom, size, bold))
            continue
        per_char = (x1 - x0) / max(len(text), 1)
        position = 0
        pieces: list[tuple[int, int, bool]] = []
        for match in _LEADER.finditer(text):
            pieces.append((position, match.start(), True))
            position = match.end()
        pieces.append((position, len(text), False))
        for start, end, leader in pieces:
            piece = text[start:end].strip()
            cuts = _number_cuts(text, start, end)
            for i, (a, b) in enumerate(itertools.pairwise([start, *cuts, end])):
                part = text[a:b].strip()
                if part:
                    last = i == len(cuts)
                    segment = Segment(
                        part, x0 + a * per_char, x0 + b * per_char, top, bottom, size, bold, leader and last
                    )
                    segment.apart = not last
                    out.append(segment)
            if piece:
                continue
            if leader and out and out[-1].top == top:  # the leader opened the run: it follows the last segment
                out[-1].leader = True
    return out


def _maybe_leader(text: str) -> bool:
    return "...." in text or ". . . ." in text or "…" in text or "____" in text or "_ _ _ _" in text


def _maybe_numbers(text: str) -> bool:
    """Whether the text ends like a number after a space (the cheap test before :func:`_number_cuts`)."""
    return " " in text and (text[-1].isdigit() or text[-1] in "%)]*†‡")


def _number_cuts(text: str, start: int, end: int) -> list[int]:
    """Where ``text[start:end]`` ends in two numbers or more side by side (``Ohio 19,820 154.0``): before each.

    ``100 000`` (a thousands group after a space) stays one number; a label with one number (``Ages 18``) is
    not cut.
    """
    tokens = [(m.start(), m.group()) for m in re.finditer(r"\S+", text[start:end])]
    tail = len(tokens)
    while tail > 0 and _TOKEN_NUMBER.fullmatch(tokens[tail - 1][1]):
        tail -= 1
    if len(tokens) - tail < 2:
        return []
    cuts = []
    for i in range(max(tail, 1), len(tokens)):
        previous, token = tokens[i - 1][1], tokens[i][1]
        if _THOUSANDS.fullmatch(token) and previous.isdigit() and len(previous) <= 3:
            continue
        cuts.append(start + tokens[i][0])
    return cuts


def bands_of(segments: Sequence[Segment]) -> list[Band]:
    """Segments grouped into bands, top to bottom; close segments of a band joined."""
    bands: list[Band] = []
    for segment in sorted(segments, key=lambda s: s.middle):
        band = bands[-1] if bands else None
        if band is not None and abs(segment.middle - band.middle) <= _BAND_TOLERANCE * band.height:
            band.segments.append(segment)
        else:
            bands.append(Band([segment]))
    for band in bands:
        band.segments.sort(key=lambda s: s.x0)
        joined: list[Segment] = []
        for s in band.segments:
            last = joined[-1] if joined else None
            if (
                last is not None
                and not (last.leader or last.apart)
                and s.x0 - last.x1 < _JOIN_GAP_EM * max(s.size, 1.0)
            ):
                last.text = f"{last.text} {s.text}"
                last.x1 = max(last.x1, s.x1)
                last.top, last.bottom = min(last.top, s.top), max(last.bottom, s.bottom)
                last.leader, last.apart = s.leader, s.apart
            else:
                joined.append(s)
        band.segments = joined
    return bands


def _prose(segment: Segment) -> bool:
    """A line of running text: several words, nearly all of them words (not numbers)."""
    words = segment.text.split()
    if len(words) < _PROSE_WORDS and len(segment.text) < _PROSE_CHARS:
        return False
    alpha = sum(w.lstrip(_OPENING)[:1].isalpha() for w in words)
    # a sentence may quote figures ("a median of 126.1 per 100,000"): most of its words are still words
    return len(words) >= 3 and (
        alpha >= len(words) - 1 or (len(words) >= _PROSE_WORDS and alpha >= _PROSE_WORD_SHARE * len(words))
    )


def _tabular(band: Band) -> bool:
    """Two segments or more, and not two columns of prose side by side."""
    segments = band.segments
    if len(segments) < 2:
        return False
    return sum(_prose(s) for s in segments) < 2 or any(is_numeric(s.text) for s in segments)


def find_tables(words: Sequence[Word]) -> list[GeoTable]:
    """The tables without rules among a page's ``words`` (pdfplumber-style words with ``size``, ``fontname``)."""
    segments = segments_of(words)
    boxes = _text_columns(segments)
    if boxes:  # a table beside a column of prose: the prose is not part of its bands
        segments = [s for s in segments if not any(_within(s, box) for box in boxes)]
    bands = bands_of(segments)
    out: list[GeoTable] = []
    for region in _join_sections(bands, _regions(bands)):
        table = _table(region)
        if table is not None:
            out.append(table)
    return out


def _text_columns(segments: Sequence[Segment]) -> list[BBox]:
    """The boxes of the page's columns of running text.

    Five or more lines of prose starting at one x, one under the other; a gap of over three lines starts a new box.
    Long row labels are not running text: a run whose every line has a number on its right at its height (the
    label's values, or the row it is wrapped around) is a table's label column.
    """
    by_x: dict[int, list[Segment]] = {}
    for s in segments:
        if _prose(s):
            by_x.setdefault(round(s.x0 / _COLUMN_X_STEP), []).append(s)
    boxes: list[BBox] = []
    numbers: list[Segment] | None = None
    for members in by_x.values():
        members.sort(key=lambda s: s.top)
        runs: list[list[Segment]] = []
        for s in members:
            if runs and s.top - runs[-1][-1].bottom <= 3 * max(runs[-1][-1].bottom - runs[-1][-1].top, 1.0):
                runs[-1].append(s)
            else:
                runs.append([s])
        for run in runs:
            if len(run) < _MIN_COLUMN_LINES:
                continue
            if numbers is None:
                numbers = [s for s in segments if is_numeric(s.text)]
            if all(_beside_number(line, numbers) for line in run):
                continue
            boxes.append(
                BBox(min(x.x0 for x in run) - 1, run[0].top - 1, max(x.x1 for x in run) + 1, run[-1].bottom + 1)
            )
    return boxes


def _beside_number(line: Segment, numbers: Sequence[Segment]) -> bool:
    """Whether a number stands right of ``line`` and overlaps its height."""
    return any(n.x0 >= line.x1 and n.top < line.bottom and n.bottom > line.top for n in numbers)


def _within(segment: Segment, box: BBox) -> bool:
    return segment.x0 >= box.x0 and segment.x1 <= box.x1 + segment.size and box.top <= segment.middle <= box.bottom


def _regions(bands: Sequence[Band]) -> list[list[Band]]:
    regions: list[list[Band]] = []
    current: list[Band] = []
    pending: list[Band] = []  # one-segment bands after the last tabular one: kept if another follows

    def close() -> None:
        if sum(1 for b in current if len(b.segments) > 1) >= _MIN_DATA_BANDS:
            regions.append([*current, *_wrapped_tail(current[-1], pending)])
        current.clear()
        pending.clear()

    for band in bands:
        last = (pending or current)[-1] if (pending or current) else None
        if last is not None and band.top - last.bottom > _MAX_GAP_LINES * max(last.height, band.height):
            close()
            last = None
        if _tabular(band):
            current.extend(pending)
            pending.clear()
            current.append(band)
        elif current and len(band.segments) == 1 and len(pending) < 3 and _inside(band.segments[0], current):
            pending.append(band)
        else:
            close()
    close()
    return regions


def _wrapped_tail(last: Band, pending: Sequence[Band]) -> list[Band]:
    """The lines under a region's last row that finish its wrapped label.

    Each stands right under the one before (less than a line apart) and starts in lower case (a note under a table
    starts with a capital or a mark).
    """
    out: list[Band] = []
    for band in pending:
        if band.top - last.bottom >= band.height or not _continues_text(band.segments[0].text):
            break
        out.append(band)
        last = band
    return out


def _join_sections(bands: Sequence[Band], regions: list[list[Band]]) -> list[list[Band]]:
    """Regions that one table's section labels split, joined again.

    A row label alone on its band (``Female``) set off by a little more space than the rows (but under four lines)
    starts a section of the same table, not a new one: when the rows above and below it stand in the same columns
    (each cell of one row aligned left or right with a cell of the other), the two regions and the labels between
    them are one table.
    """
    if len(regions) < 2:
        return regions
    index = {id(b): i for i, b in enumerate(bands)}
    out = [regions[0]]
    for region in regions[1:]:
        above = out[-1]
        between = list(bands[index[id(above[-1])] + 1 : index[id(region[0])]])
        if len(between) <= _MAX_SECTION_LABELS and _same_columns(above, region, between):
            out[-1] = [*above, *between, *region]
        else:
            out.append(region)
    return out


def _same_columns(above: Sequence[Band], below: Sequence[Band], between: Sequence[Band]) -> bool:
    if any(len(b.segments) != 1 for b in between):
        return False
    chain = [above[-1], *between, below[0]]
    for a, b in zip(chain, chain[1:], strict=False):
        if b.top - a.bottom > _SECTION_GAP_LINES * max(a.height, b.height):
            return False
    last = next((b for b in reversed(above) if len(b.segments) > 1), None)
    first = next((b for b in below if len(b.segments) > 1), None)
    if last is None or first is None:
        return False

    def aligned(x: Segment, row: Band) -> bool:
        return any(min(abs(x.x0 - y.x0), abs(x.x1 - y.x1)) <= max(x.size, y.size) for y in row.segments)

    # a row may leave cells empty (a control group without a ratio): one row's cells within the other's
    return all(aligned(x, last) for x in first.segments) or all(aligned(x, first) for x in last.segments)


def _inside(segment: Segment, bands: Sequence[Band]) -> bool:
    """Whether a lone segment could be a cell of the table so far: within its width, narrower than 60% of it."""
    x0 = min(s.x0 for b in bands for s in b.segments)
    x1 = max(s.x1 for b in bands for s in b.segments)
    slack = segment.size
    return segment.x0 >= x0 - slack and segment.x1 <= x1 + slack and segment.x1 - segment.x0 < 0.6 * (x1 - x0)


def _gutters(bands: Sequence[Band], x0: float, x1: float) -> list[tuple[float, float]]:
    """The column ranges: x stretches that fewer than a tenth of ``bands``' segments cover separate them.

    A label alone on its band (a spanning header or section title, the rest of a wrapped label) may straddle
    gutters: the columns come from the bands of two cells or more, and a lone label adds a column only where it
    stands clear of theirs (a row-spanning label in a column of its own).
    """
    step = 0.5
    width = int((x1 - x0) / step) + 2
    limit = len(bands) // 10
    counts = [0] * width
    lone: list[Segment] = []
    for band in bands:
        if len(band.segments) == 1:
            lone.append(band.segments[0])
            continue
        for s in band.segments:
            _cover(counts, s, x0, step)
    if not any(counts):
        for s in lone:
            _cover(counts, s, x0, step)
        return _ranges(counts, limit, x0, x1, step)
    columns = _ranges(counts, limit, x0, x1, step)
    for s in lone:
        if not any(min(b, s.x1) > max(a, s.x0) for a, b in columns):
            _cover(counts, s, x0, step)
    return _ranges(counts, limit, x0, x1, step)


def _cover(counts: list[int], segment: Segment, x0: float, step: float) -> None:
    for i in range(int((segment.x0 - x0) / step), int((segment.x1 - x0) / step) + 1):
        counts[i] += 1


def _ranges(counts: Sequence[int], limit: int, x0: float, x1: float, step: float) -> list[tuple[float, float]]:
    columns: list[tuple[float, float]] = []
    start: int | None = None
    for i, count in enumerate(counts):
        if count > limit and start is None:
            start = i
        elif count <= limit and start is not None:
            columns.append((x0 + start * step, x0 + i * step))
            start = None
    if start is not None:
        columns.append((x0 + start * step, x1))
    return columns


def _spanned_column(segment: Segment, columns: Sequence[tuple[float, float]]) -> int:
    """The column of a label alone on its band: the first it reaches when it covers a whole column (it spans them).

    A spanning cell stands at its first column; a label that covers no whole column goes where it overlaps most.
    """
    if any(segment.x0 <= a and b <= segment.x1 for a, b in columns):
        return next(i for i, (a, b) in enumerate(columns) if min(b, segment.x1) > max(a, segment.x0))
    return _column_of(segment, columns)


def _column_of(segment: Segment, columns: Sequence[tuple[float, float]]) -> int:
    best, best_overlap = 0, -1.0
    for i, (a, b) in enumerate(columns):
        overlap = min(b, segment.x1) - max(a, segment.x0)
        if overlap > best_overlap:
            best, best_overlap = i, overlap
    if best_overlap <= 0:  # in a gutter: the nearest column
        centre = (segment.x0 + segment.x1) / 2
        best = min(range(len(columns)), key=lambda i: min(abs(columns[i][0] - centre), abs(columns[i][1] - centre)))
    return best


@dataclass(slots=True)
class _Row:
    cells: list[str]
    top: float
    bottom: float
    leader: bool = False
    kind: str = "row"  # row | label (a band of labels only)
    bold: bool = False

    @property
    def middle(self) -> float:
        return (self.top + self.bottom) / 2


def _table(region: Sequence[Band]) -> GeoTable | None:
    multi = [b for b in region if len(b.segments) > 1]
    x0 = min(s.x0 for b in region for s in b.segments)
    x1 = max(s.x1 for b in region for s in b.segments)
    # the header's wide cells may bridge gutters: columns come from the bands below the first numeric one
    first_numeric = next((i for i, b in enumerate(multi) if any(is_numeric(s.text) for s in b.segments[1:])), 0)
    skip = region.index(multi[min(first_numeric, _MAX_HEADER_BANDS)]) if first_numeric else 0
    columns = _gutters(region[skip:], x0, x1)
    if len(columns) < 2:
        return None
    rows = []
    for band in region:
        cells = [""] * len(columns)
        for s in band.segments:
            i = _spanned_column(s, columns) if len(band.segments) == 1 else _column_of(s, columns)
            cells[i] = f"{cells[i]} {s.text}".strip()
        rows.append(
            _Row(
                cells,
                band.top,
                band.bottom,
                leader=any(s.leader for s in band.segments),
                bold=all(s.bold for s in band.segments),
            )
        )
    if sum(1 for r in rows if sum(1 for c in r.cells if c) > 1) < _MIN_DATA_BANDS:
        return None
    numeric = _numeric_columns(rows)
    if not numeric and not _short_column(rows):  # text only: not lines of prose that sit side by side
        return None
    if _list(rows, numeric):
        return None
    header_count = _header_count(rows, numeric)
    while header_count > 1 and all(not c for c in rows[header_count - 1].cells[1:]):
        header_count -= 1  # a label alone right above the data opens a section of rows ("Actual"), not the header
    header, body = rows[:header_count], rows[header_count:]
    if _axes(body):
        return None
    labels = range(numeric[0]) if numeric and numeric[0] > 0 else range(1)
    logical = _logical_rows(body, list(labels), numeric, len(columns))
    if len(logical) < 2:
        return None
    header_row = [" ".join(r.cells[i] for r in header if r.cells[i]) or None for i in range(len(columns))]
    out_rows: list[list[str | None]] = [[c or None for c in r.cells] for r in logical]
    if header:
        out_rows.insert(0, header_row)
        out_rows, columns = _join_unit_columns(out_rows, columns)
    box = BBox(x0, min(b.top for b in region), x1, max(b.bottom for b in region))
    return GeoTable(box=box, rows=out_rows, header=1 if header else 0, columns=columns)


def _join_unit_columns(
    rows: list[list[str | None]], columns: list[tuple[float, float]]
) -> tuple[list[list[str | None]], list[tuple[float, float]]]:
    """A column without a header that repeats one word (``1 | years``, ``2 | years``) joined to the one on its left.

    A label of a number and a unit, the number right-aligned and the unit left-aligned, splits into two columns
    under one header (``Age``); the unit column has no header of its own and says the same word all the way down.
    """
    header, body = rows[0], rows[1:]
    c = len(header) - 1
    while c > 0:
        cells = [x for r in body if (x := r[c])]
        if not header[c] and header[c - 1] and len(cells) >= _MIN_DATA_BANDS and not any(map(is_numeric, cells)):
            word, count = Counter(cells).most_common(1)[0]
            if count >= _UNIT_SHARE * len(cells) and len(word.split()) == 1:
                for r in rows:
                    r[c - 1] = " ".join(x for x in (r[c - 1], r[c]) if x) or None
                    del r[c]
                columns = [*columns[: c - 1], (columns[c - 1][0], columns[c][1]), *columns[c + 1 :]]
        c -= 1
    return rows, columns


def _list(rows: Sequence[_Row], numeric: Sequence[int]) -> bool:
    """A bulleted or numbered list: list markers alone in the first column, and text (no numbers) beside them."""
    markers = [r.cells[0] for r in rows if r.cells[0]]
    if len(markers) < 2 or not all(_LIST_MARKER.fullmatch(m) for m in markers):
        return False
    return not [c for c in numeric if c > 0]


def _axes(rows: Sequence[_Row]) -> bool:
    """A chart's axes: nearly every row numbers only, each column of them evenly spaced ticks (450, 400, 350, ...).

    The ticks may skip values (a tick label lost in a band of the plot's other labels) but keep one step.
    """
    filled = [r for r in rows if any(r.cells)]
    numbers = [values for r in filled if (values := _numbers(r.cells)) is not None]
    if len(numbers) < _AXIS_MIN_TICKS or len(numbers) < _AXIS_SHARE * len(filled):
        return False
    columns = [[v for row in numbers if (v := row[i]) is not None] for i in range(len(filled[0].cells))]
    columns = [c for c in columns if c]
    return bool(columns) and all(_ticks(c) for c in columns)


def _numbers(cells: Sequence[str]) -> list[float | None] | None:
    """The cells as numbers (None where empty), or None when one is not a plain number."""
    out: list[float | None] = []
    for cell in cells:
        if not cell:
            out.append(None)
            continue
        text = cell.replace(",", "").rstrip("%").replace("−", "-").replace("–", "-")
        try:
            out.append(float(text))
        except ValueError:
            return None
    return out


def _ticks(values: Sequence[float]) -> bool:
    """At least four values that rise or fall by whole multiples of one step."""
    if len(values) < _AXIS_MIN_TICKS:
        return False
    steps = [b - a for a, b in zip(values, values[1:], strict=False)]
    unit = min(abs(d) for d in steps)
    if unit == 0 or len({d > 0 for d in steps}) > 1:
        return False
    return all(abs(d / unit - round(d / unit)) < 1e-6 for d in steps)


def _short_column(rows: Sequence[_Row]) -> bool:
    """Whether some column holds short cells (labels: at most four words on average)."""
    for i in range(len(rows[0].cells)):
        cells = [r.cells[i] for r in rows if r.cells[i]]
        if len(cells) >= 2 and sum(len(c.split()) for c in cells) <= _MAX_TEXT_CELL_WORDS * len(cells):
            return True
    return False


def _numeric_columns(rows: Sequence[_Row]) -> list[int]:
    width = len(rows[0].cells)
    out = []
    for i in range(width):
        filled = [r.cells[i] for r in rows if r.cells[i]]
        if filled and sum(is_numeric(c) for c in filled) >= _NUMERIC_SHARE * len(filled) and len(filled) >= 2:
            out.append(i)
    return out


def _header_count(rows: Sequence[_Row], numeric: Sequence[int]) -> int:
    if numeric:
        for i, row in enumerate(rows[: _MAX_HEADER_BANDS + 1]):
            if any(is_numeric(row.cells[c]) for c in numeric if row.cells[c]):
                return i
        return 1
    return 1


def _logical_rows(rows: list[_Row], labels: list[int], numeric: list[int], width: int) -> list[_Row]:
    """Bands made into the table's rows: wrapped cells joined, spanning labels given out (see the module)."""
    values = [i for i in range(width) if i not in labels]
    for row in rows:
        row.kind = "row" if any(row.cells[i] for i in values) else "label"
    rows = _join_wrapped_cells(rows, labels, numeric)
    out: list[_Row] = []
    spanning: dict[int, list[_Row]] = {c: [] for c in labels}
    for i, row in enumerate(rows):
        if row.kind != "label":
            out.append(row)
            continue
        before = _nearest(rows, i, -1)
        after = _nearest(rows, i, 1)
        filled = [c for c in labels if row.cells[c]]
        if (
            after is not None
            and all(not after.cells[c] for c in filled)
            and (before is None or all(not before.cells[c] for c in filled))
        ):
            for c in filled:
                spanning[c].append(row)
        elif not _continues_text(row.cells[labels[0]]) and (
            row.cells[labels[0]].rstrip().endswith(":")
            or (row.bold and not (after and after.bold))
            or _set_off(row, before, after)
        ):
            out.append(row)  # a section row (its title starts with a capital, or a number)
        else:
            _join_label(row, before, after, out)
    for c, found in spanning.items():
        for row in out if found else ():
            if row.kind == "row" and not row.cells[c]:
                row.cells[c] = min(found, key=lambda s: abs(s.middle - row.middle)).cells[c]
    return out


def _set_off(row: _Row, before: _Row | None, after: _Row | None) -> bool:
    """Whether a band of labels only stands apart from the rows on both sides (a section's label, ``Female``).

    The rest of a wrapped label sits a line's spacing from its row; a gap of most of a line on both sides is no wrap.
    """
    limit = _SECTION_GAP_HEIGHTS * (row.bottom - row.top)
    return (before is None or row.top - before.bottom > limit) and (after is None or after.top - row.bottom > limit)


def _join_wrapped_cells(rows: Sequence[_Row], labels: Sequence[int], numeric: Sequence[int]) -> list[_Row]:
    """A band without labels and without numbers right under a row continues that row's text cells."""
    out: list[_Row] = []
    for row in rows:
        previous = out[-1] if out else None
        if (
            previous is not None
            and row.kind == "row"
            and previous.kind == "row"
            and (not any(row.cells[i] for i in labels) or all(_continues_text(c) for c in row.cells if c))
            and not any(row.cells[i] for i in numeric)
            and row.top - previous.bottom < 0.8 * (row.bottom - row.top)
        ):
            _append(previous, row)
        else:
            out.append(row)
    return out


def _continues_text(cell: str) -> bool:
    """A cell's line that reads as the rest of a wrapped one (it starts in lower case)."""
    return cell[:1].islower()


def _join_label(row: _Row, before: _Row | None, after: _Row | None, out: list[_Row]) -> None:
    """A band of labels only, the rest of a wrapped label: joined to its row (kept as a row when alone)."""
    target = _wrap_target(row, before, after)
    if target is None:
        out.append(row)
    elif target is after:
        after.cells = [f"{a} {b}".strip() for a, b in zip(row.cells, after.cells, strict=True)]
        after.top = min(after.top, row.top)
    else:
        _append(target, row)


def _nearest(rows: Sequence[_Row], i: int, step: int) -> _Row | None:
    j = i + step
    while 0 <= j < len(rows):
        if rows[j].kind == "row":
            return rows[j]
        j += step
    return None


def _wrap_target(row: _Row, before: _Row | None, after: _Row | None) -> _Row | None:
    """The neighbouring row a band of labels only belongs to: the one its leader leads into, else the closer."""
    if after is not None and after.leader and not row.leader:
        return after
    if before is None:
        return after
    if after is None:
        return before
    gap_before = row.top - before.bottom
    gap_after = after.top - row.bottom
    return after if gap_after < gap_before - 1.0 else before


def _append(row: _Row, more: _Row) -> None:
    row.cells = [f"{a} {b}".strip() for a, b in zip(row.cells, more.cells, strict=True)]
    row.bottom = max(row.bottom, more.bottom)


_CAPTION = re.compile(r"^\s*(?:table|tab\.|exhibit|schedule)\s*[\dIVXLA-Z]+[A-Za-z]?(?:[.:—–\-\s]|$)", re.IGNORECASE)
_CONTINUED = re.compile(r"\bcontinued\b|\(cont(?:'d|\.)?\)|\bcont(?:'d|\.)\s*$", re.IGNORECASE)
_PAGE_NUMBER = re.compile(r"^\s*(?:page\s*)?[-–]?\s*\d{1,4}\s*[-–]?(?:\s*(?:of|/)\s*\d{1,4})?\s*$", re.IGNORECASE)
_MAX_FURNITURE = 3


def mark_captions(paragraphs: list[Paragraph]) -> None:
    """Mark each table's caption, in place, and put it right before its table.

    The caption is the paragraph of at most three lines that ends just above the table (within three lines),
    overlaps it horizontally and reads like one (``Table 2—...``, or a "Continued" line). The pdf's order may
    put it elsewhere (a table drawn before the text above it), so it is looked for by position.
    """
    for table in [p for p in paragraphs if p.kind == "table"]:
        box = table.bbox
        candidates = [
            p
            for p in paragraphs
            if p.kind in ("text", "heading")
            and len(p.lines) <= 3
            and -2 <= box.top - p.bbox.bottom <= 3 * p.lines[-1].height
            and p.bbox.x0 < box.x1
            and p.bbox.x1 > box.x0
            and (_CAPTION.match(p.text) or _CONTINUED.search(p.text))
        ]
        if not candidates:
            continue
        caption = min(candidates, key=lambda p: box.top - p.bbox.bottom)
        caption.kind = "caption"
        paragraphs.remove(caption)
        paragraphs.insert(paragraphs.index(table), caption)


def merge_continued(pages: Sequence[list[Paragraph]]) -> None:
    """Tables continued on the next page, marked ``continues`` and trimmed to their new rows, in place.

    Page ``n + 1``'s first table continues page ``n``'s last one when nothing but page furniture (page numbers,
    running heads, short lines) and captions lies between them, both have as many columns, and the second has a
    "Continued" caption, repeats the first one's header, or has no header of its own (its first row is data).
    The repeated header and the "Continued" caption are dropped; page numbers between the two are dropped; other
    furniture is moved after the continuation, so that the two parts stay one markdown table.
    """
    for page, following in itertools.pairwise(pages):
        first = _last_table(page)
        second = _first_table(following)
        if first is None or second is None:
            continue
        i, j = first, second
        a, b = page[i], following[j]
        width_a = max(len(r) for r in a.rows or [[]])
        width_b = max(len(r) for r in b.rows or [[]])
        if width_a != width_b or not a.rows or not b.rows:
            continue
        between = [*page[i + 1 :], *following[:j]]
        continued = any(p.kind == "caption" and _CONTINUED.search(p.text) for p in following[:j])
        repeated = _same_row(a.rows[0], b.rows[0])
        if not (continued or repeated or _data_row(b.rows[0])):
            continue
        if repeated:
            b.rows = b.rows[1:]
        b.continues = True
        kept = [p for p in between if not _PAGE_NUMBER.match(p.text) and p.kind != "caption"]
        del page[i + 1 :]
        del following[:j]
        following[1:1] = kept


def _last_table(paragraphs: Sequence[Paragraph]) -> int | None:
    for i in range(len(paragraphs) - 1, max(len(paragraphs) - 2 - _MAX_FURNITURE, -1), -1):
        if paragraphs[i].kind == "table":
            return i if all(_furniture(p) for p in paragraphs[i + 1 :]) else None
    return None


def _first_table(paragraphs: Sequence[Paragraph]) -> int | None:
    for i, p in enumerate(paragraphs[: _MAX_FURNITURE + 2]):
        if p.kind == "table":
            return i if all(_furniture(q) or q.kind == "caption" for q in paragraphs[:i]) else None
    return None


def _furniture(paragraph: Paragraph) -> bool:
    return paragraph.kind != "table" and len(paragraph.lines) <= 2 and len(paragraph.text) <= 120


def _same_row(a: Sequence[str | None], b: Sequence[str | None]) -> bool:
    def norm(row: Sequence[str | None]) -> list[str]:
        return [" ".join((c or "").split()).lower() for c in row]

    return norm(a) == norm(b)


def _data_row(row: Sequence[str | None]) -> bool:
    return any(is_numeric(c or "") for c in row[1:])
