"""Excel ``.xlsx`` / ``.xlsm`` workbooks via openpyxl (imported when a file is loaded, never at package import).

openpyxl reads in read-only mode (the sheets are streamed, never held as cell objects) and data-only mode (a
formula gives the value Excel saved with it; a file saved by a program that never computed it has none, and that
cell is empty). Each worksheet is a page, numbered by its tab position (1 = the first tab, so a hit cites the tab),
with its name as a level-2 heading (the ``section`` of its chunks) over one markdown table: empty rows and empty
columns are dropped and the first remaining row is the header. A large table is cut by rows with the header
repeated by :mod:`ragindex.chunking.layout`, so a cell is always retrieved with its column labels. Chart sheets
have no cells and are skipped; hidden sheets are read like the others.

A workbook with more than ``max_cells`` non-empty cells fails as a whole, with a message naming the setting,
rather than being cut short: a truncated sheet would answer searches as if it were complete, and a sheet that
large is a data set (export it to csv or jsonl records) more than a document. Cell grids that are mostly empty
count against ``20 * max_cells`` too, so a sheet padded to a million empty rows cannot keep the parser busy.
"""

from __future__ import annotations

import datetime as dt
import io
import warnings
from pathlib import Path
from typing import Any

from ragindex._optional import require_for_file
from ragindex.errors import DocumentLoadError
from ragindex.loaders._ooxml import check_package, load_error
from ragindex.loaders.layout import LayoutBuilder
from ragindex.types import Document

_GRID_FACTOR = 20


class XlsxLoader:
    """Loads ``.xlsx`` and ``.xlsm`` workbooks: a heading and a table per worksheet, a page per sheet tab.

    Args:
        max_cells: The most non-empty cells a workbook may hold; a larger one fails alone, before it is rendered.
    """

    name: str = "xlsx"
    suffixes: tuple[str, ...] = (".xlsx", ".xlsm")

    def __init__(self, *, max_cells: int = 300_000) -> None:
        self.max_cells = max_cells

    def load(self, path: Path, data: bytes) -> list[Document]:
        """Read ``data`` into one document whose ``source_uri`` is ``str(path)``.

        Returns:
            A single document; a workbook without cells gives an empty one with a warning.

        Raises:
            DocumentLoadError: Not a readable xlsx (not a zip, truncated, damaged, encrypted), a zip bomb, or more
                than ``max_cells`` cells.
        """
        check_package(path, data, "xlsx")
        # openpyxl warns about parts it does not read (data validation, conditional formats, a missing default
        # style): none of them is text, so the warnings are dropped rather than passed on
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self._read(path, data)

    def _read(self, path: Path, data: bytes) -> list[Document]:
        require_for_file(path, "parsing", "reading .xlsx files", "openpyxl")
        import openpyxl

        builder = LayoutBuilder(str(path), self.name)
        budget = _Budget(path, self.max_cells)
        try:
            workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True, keep_links=False)
        except Exception as exc:  # openpyxl signals damage with KeyError, InvalidFileException, lxml errors, ...
            raise load_error(path, "xlsx", exc) from exc
        try:
            names: list[str] = list(workbook.sheetnames)
            for number, name in enumerate(names, 1):
                sheet = workbook[name]
                if not hasattr(sheet, "iter_rows"):  # a chart sheet
                    continue
                rows = _table(sheet, budget)
                if rows:
                    builder.start_page(number)
                    builder.heading(name, 2)
                    builder.table(rows)
            title = (workbook.properties.title or "").strip() or None
        except DocumentLoadError:
            raise
        except Exception as exc:
            raise load_error(path, "xlsx", exc) from exc
        finally:
            workbook.close()
        if builder.empty:
            builder.warnings.append("no cells with values in the workbook")
        return [builder.build(title=title, metadata={"page_count": len(names), "sheets": names})]


class _Budget:
    """Counts the cells read against the limits, failing the file once one is passed."""

    def __init__(self, path: Path, max_cells: int) -> None:
        self.path = path
        self.max_cells = max_cells
        self.cells = 0
        self.grid = 0

    def spend(self, filled: int, width: int) -> None:
        self.cells += filled
        self.grid += max(width, 1)
        if self.cells > self.max_cells or self.grid > _GRID_FACTOR * self.max_cells:
            raise DocumentLoadError(
                f"{self.path.name}: more than RAGINDEX_MAX_SPREADSHEET_CELLS={self.max_cells:,} cells; export the "
                "large sheets to csv or jsonl records, or raise the limit",
                path=str(self.path),
            )


def _table(sheet: Any, budget: _Budget) -> list[list[str]]:
    """The sheet's non-empty rows, cut to its non-empty columns; [] for a sheet without values."""
    sheet.reset_dimensions()  # stream the cells present; a stale <dimension> would pad every row to its width
    rows: list[list[str]] = []
    for cells in sheet.iter_rows():
        texts = [_text(cell) for cell in cells]
        filled = sum(1 for t in texts if t)
        budget.spend(filled, len(texts))
        if filled:
            rows.append(texts)
    return _drop_empty_columns(rows)


def _drop_empty_columns(rows: list[list[str]]) -> list[list[str]]:
    if not rows:
        return []
    width = max(len(row) for row in rows)
    used = [i for i in range(width) if any(i < len(row) and row[i] for row in rows)]
    return [[row[i] if i < len(row) else "" for i in used] for row in rows]


def _text(cell: Any) -> str:
    """A cell's value as Excel shows it, roughly: dates without a zero time, whole numbers without ``.0``, percents."""
    value = getattr(cell, "value", None)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (int, float)):
        return _number(value, str(getattr(cell, "number_format", "") or ""))
    return str(value).strip()


def _number(value: float, number_format: str) -> str:
    if "%" in number_format:
        decimals = _decimals(number_format.split("%", 1)[0])
        return f"{value * 100:.{decimals}f}%"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def _decimals(pattern: str) -> int:
    """Digits after the point of a number format such as ``0.00``."""
    _, _, fraction = pattern.partition(".")
    return sum(1 for c in fraction if c in "0#")
