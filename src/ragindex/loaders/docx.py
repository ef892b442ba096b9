"""Word ``.docx`` files via python-docx (imported when a file is loaded, never at package import)."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ragindex._optional import require_for_file
from ragindex.errors import DocumentLoadError
from ragindex.loaders._ooxml import check_package, load_error
from ragindex.loaders.layout import LayoutBuilder
from ragindex.types import BlockKind, Document

if TYPE_CHECKING:
    from docx.table import Table
    from docx.text.paragraph import Paragraph

_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)


class DocxLoader:
    """Loads ``.docx`` files: paragraphs and tables in document order, on the layout model.

    Paragraph styles "Title" and "Heading N" become level 1 and level N headings (capped at 6), "List ..."
    styles become ``list`` blocks (``- `` items), and each table becomes a markdown table whose first row is the
    header, so the chunker keeps it whole (or cuts it by rows with the header repeated) and a cell is retrieved
    with its column labels. A merged cell keeps its text in its first grid column and leaves the others empty,
    so the columns stay aligned. The title is the core-properties title, else the first heading.
    """

    name: str = "docx"
    suffixes: tuple[str, ...] = (".docx",)

    def load(self, path: Path, data: bytes) -> list[Document]:
        """Read ``data`` into one document whose ``source_uri`` is ``str(path)``.

        Returns:
            A single document; its text is empty when the file has no text.

        Raises:
            DocumentLoadError: The file is not a readable docx package, is encrypted, or is a zip bomb.
        """
        check_package(path, data, "docx")
        require_for_file(path, "parsing", "reading .docx files", "docx")
        import docx
        from docx.table import Table

        builder = LayoutBuilder(str(path), self.name)
        first_heading: str | None = None
        try:
            document = docx.Document(io.BytesIO(data))
            for item in document.iter_inner_content():
                if isinstance(item, Table):
                    builder.table(_rows(item))
                    continue
                heading = _paragraph(builder, item)
                if heading and first_heading is None:
                    first_heading = heading
            core_title = (document.core_properties.title or "").strip()
        except DocumentLoadError:
            raise
        # python-docx reports a damaged package as BadZipFile, KeyError, ValueError, lxml errors, ...
        except Exception as exc:
            raise load_error(path, "docx", exc) from exc
        return [builder.build(title=core_title or first_heading)]


def _paragraph(builder: LayoutBuilder, paragraph: Paragraph) -> str | None:
    """Add the paragraph by its style; the heading's text when it is one."""
    text = paragraph.text.replace("\r", "\n").strip()
    if not text:
        return None
    style = paragraph.style
    style_name = (style.name or "") if style is not None else ""
    heading = _HEADING_STYLE.match(style_name)
    if heading or style_name.lower() == "title":
        builder.heading(text, int(heading.group(1)) if heading else 1)
        return " ".join(text.split())
    if style_name.lower().startswith("list"):
        builder.paragraph("- " + text, kind=BlockKind.LIST)
    else:
        builder.paragraph(text)
    return None


def _rows(table: Table) -> list[list[str]]:
    """The table's cell texts row by row, one per grid column; a merged cell's text only in its first column."""
    rows: list[list[str]] = []
    for row in table.rows:
        cells: list[str] = []
        previous: object = None
        for cell in row.cells:
            # a horizontally merged cell is yielded once per grid column it spans (the same _tc)
            cells.append("" if cell._tc is previous else cell.text)
            previous = cell._tc
        rows.append(cells)
    return rows
