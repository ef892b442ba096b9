"""Word ``.docx`` files via python-docx (imported when a file is loaded, never at package import)."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ragindex.errors import DocumentLoadError
from ragindex.types import Document

if TYPE_CHECKING:
    from docx.table import Table
    from docx.text.paragraph import Paragraph

_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
_SPACES = re.compile(r"[ \t\u00a0]+")


class DocxLoader:
    """Loads ``.docx`` files: paragraphs and tables in document order, headings as markdown ``#`` lines.

    Paragraph styles "Title" and "Heading N" become ``#`` and ``#`` * N headings (capped at 6),
    "List ..." styles become ``- `` items, and each table row becomes one ``cell | cell`` line.
    The title is the core-properties title, else the first heading.
    """

    name: str = "docx"
    suffixes: tuple[str, ...] = (".docx",)

    def load(self, path: Path, data: bytes) -> list[Document]:
        """Read ``data`` into one document whose ``source_uri`` is ``str(path)``.

        Returns:
            A single document; its text is empty when the file has no text.

        Raises:
            DocumentLoadError: The file is not a readable docx package.
        """
        import docx
        from docx.table import Table

        try:
            document = docx.Document(io.BytesIO(data))
            blocks: list[str] = []
            first_heading: str | None = None
            for item in document.iter_inner_content():
                if isinstance(item, Table):
                    rendered = _table(item)
                else:
                    rendered, level = _paragraph(item)
                    if level and first_heading is None:
                        first_heading = rendered.lstrip("#").strip()
                if rendered:
                    blocks.append(rendered)
            core_title = (document.core_properties.title or "").strip()
        # python-docx reports a damaged package as BadZipFile, KeyError, ValueError, lxml errors, ...
        except Exception as exc:
            raise DocumentLoadError(
                f"{path.name}: not a readable docx file ({type(exc).__name__}: {exc})", path=str(path)
            ) from exc
        return [
            Document(
                source_uri=str(path),
                text="\n\n".join(blocks),
                parser=self.name,
                title=core_title or first_heading,
            )
        ]


def _clean(text: str) -> str:
    return "\n".join(_SPACES.sub(" ", line).strip() for line in text.replace("\r", "\n").split("\n")).strip()


def _paragraph(paragraph: Paragraph) -> tuple[str, int]:
    """The paragraph as markdown and its heading level (0 for body text)."""
    text = _clean(paragraph.text)
    if not text:
        return "", 0
    style = paragraph.style
    style_name = (style.name or "") if style is not None else ""
    heading = _HEADING_STYLE.match(style_name)
    if heading:
        level = min(int(heading.group(1)), 6)
        return "#" * level + " " + text.replace("\n", " "), level
    if style_name.lower() == "title":
        return "# " + text.replace("\n", " "), 1
    if style_name.lower().startswith("list"):
        return "- " + text, 0
    return text, 0


def _table(table: Table) -> str:
    rows: list[str] = []
    for row in table.rows:
        cells: list[str] = []
        previous: object = None
        for cell in row.cells:
            if cell is previous:  # a horizontally merged cell is yielded once per grid column it spans
                continue
            previous = cell
            cells.append(_clean(cell.text).replace("\n", " "))
        if any(cells):
            rows.append(" | ".join(cells))
    return "\n".join(rows)
