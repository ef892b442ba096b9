"""PDF files: layout-aware text with headings and tables (pdfplumber), OCR for pages without a text layer.

pdfplumber (MIT, on pdfminer.six) was chosen on the parsing test set (docs/parsing.md): it gives every word with
its font and box, which is what headings and reading order are read from (:mod:`ragindex.loaders.pdf_layout`),
and its ruling-line table finder keeps each cell in its row and column. A page whose text layer is empty is
rendered with pypdfium2 and read by OCR (:mod:`ragindex.loaders.ocr`); a page with a text layer is never OCR'd.
Both libraries are imported when a pdf is loaded, never at package import.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragindex.errors import DocumentLoadError, RagindexError
from ragindex.loaders.layout import LayoutBuilder
from ragindex.loaders.pdf_layout import (
    HeadingLevels,
    Line,
    Paragraph,
    join_words,
    lines_of,
    paragraphs_of,
    reading_order,
)
from ragindex.types import BBox, BlockKind, Document

if TYPE_CHECKING:
    from ragindex.loaders.ocr import OcrParagraph, TesseractOcr

OcrFactory = Callable[[], "TesseractOcr"]

_MIN_TABLE_ROWS = 2
_MIN_TABLE_COLUMNS = 2


class PdfLoader:
    """Loads ``.pdf`` files into one markdown document with a block per heading, paragraph and table.

    Args:
        ocr: Builds the OCR engine, on the first page that needs it; None: pages without a text layer are
            skipped with a warning.
        max_pages: A pdf with more pages fails alone (a runaway or hostile file).
        ocr_dpi: Resolution of the page images read by OCR.
    """

    name: str = "pdf"
    suffixes: tuple[str, ...] = (".pdf",)

    def __init__(self, *, ocr: OcrFactory | None = None, max_pages: int = 2000, ocr_dpi: int = 200) -> None:
        self.ocr = ocr
        self.max_pages = max_pages
        self.ocr_dpi = ocr_dpi
        self._engine: TesseractOcr | None = None

    def __getstate__(self) -> dict[str, Any]:  # the engine is rebuilt in the parser process, never pickled
        return {**{k: v for k, v in self.__dict__.items() if k != "_engine"}, "_engine": None}

    def load(self, path: Path, data: bytes) -> list[Document]:
        """Parse ``data`` into a single document whose ``source_uri`` is ``str(path)``.

        Raises:
            DocumentLoadError: The pdf is corrupt, truncated, encrypted with a password, has no pages, or more
                than ``max_pages``; a page that fails alone becomes a warning.
        """
        import pdfplumber

        try:
            pdf = pdfplumber.open(io.BytesIO(data))
            page_count = len(pdf.pages)
        # pdfminer signals damage with PDFSyntaxError, PSEOF, ValueError, KeyError, ...; and a password with
        # PDFPasswordIncorrect: all of them end this file, none the ingest.
        except Exception as exc:
            raise DocumentLoadError(_open_error(path, exc), path=str(path)) from exc
        with pdf:
            if page_count == 0:
                raise DocumentLoadError(f"{path.name}: the pdf has no pages", path=str(path))
            if page_count > self.max_pages:
                raise DocumentLoadError(
                    f"{path.name}: {page_count} pages, more than RAGINDEX_MAX_PDF_PAGES={self.max_pages}; "
                    "split the file or raise the limit",
                    path=str(path),
                )
            builder = LayoutBuilder(str(path), self.name)
            pages = [self._read_page(pdf, number, builder) for number in range(1, page_count + 1)]
            levels = HeadingLevels(line for page, _ in pages for p in page if p.kind != "table" for line in p.lines)
            ocr = _PageOcr(self, data, builder)
            for number, (paragraphs, pictured) in enumerate(pages, 1):
                builder.start_page(number)
                if not paragraphs and pictured:
                    ocr.read(number)
                for paragraph in paragraphs:
                    _emit(builder, paragraph, levels)
            ocr.close()
            title = _title(pdf.metadata)
        if ocr.skipped:
            builder.warnings.append(f"{ocr.skipped} page(s) without a text layer were skipped: OCR is off")
        if builder.empty:
            builder.warnings.append("no extractable text (scanned pdf?)")
        metadata: dict[str, Any] = {"page_count": page_count}
        if ocr.confidences:
            metadata["ocr_pages"] = ocr.confidences
        return [builder.build(title=title, metadata=metadata)]

    def engine(self) -> TesseractOcr | None:
        """The OCR engine (built on first use), or None when OCR is off."""
        if self.ocr is None:
            return None
        if self._engine is None:
            self._engine = self.ocr()
        return self._engine

    def _read_page(self, pdf: Any, number: int, builder: LayoutBuilder) -> tuple[list[Paragraph], bool]:
        """The page's paragraphs and tables in reading order, and whether it shows an image.

        A page without a text layer has no paragraphs; it is OCR'd only when it shows an image (else it is blank).
        """
        page = pdf.pages[number - 1]
        try:
            return self._layout(page), bool(page.images)
        # a damaged content stream costs its page, not the file
        except Exception as exc:
            builder.warnings.append(f"page {number}: text extraction failed ({type(exc).__name__}: {exc})")
            return [], False
        finally:
            page.close()

    @staticmethod
    def _layout(page: Any) -> list[Paragraph]:
        """One page's paragraphs and tables, in reading order."""
        tables = [t for t in page.find_tables() if _is_table(t)]
        boxes = [t.bbox for t in tables]
        text_page = page.filter(lambda obj: not _inside(obj, boxes)) if boxes else page
        words = text_page.extract_words(extra_attrs=["size", "fontname"])
        lines, middle = lines_of(words, float(page.width))
        paragraphs = paragraphs_of(lines, middle)
        for table in tables:
            x0, top, x1, bottom = table.bbox
            paragraphs.append(Paragraph(kind="table", rows=table.extract(), box=BBox(x0, top, x1, bottom)))
        return reading_order(paragraphs, middle)


class _PageOcr:
    """Reads pages without a text layer by OCR, opening the pdf for rendering on the first such page."""

    def __init__(self, loader: PdfLoader, data: bytes, builder: LayoutBuilder) -> None:
        self.loader = loader
        self.data = data
        self.builder = builder
        self.confidences: dict[str, float] = {}
        self.skipped = 0
        self._document: Any = None

    def read(self, number: int) -> None:
        """OCR page ``number`` into the builder (the builder is on that page)."""
        engine = self.loader.engine()
        if engine is None:
            self.skipped += 1
            return
        if self._document is None:
            import pypdfium2

            self._document = pypdfium2.PdfDocument(self.data)
        dpi = self.loader.ocr_dpi
        page = self._document[number - 1]
        try:
            paragraphs = engine.recognize(page.render(scale=dpi / 72, grayscale=True).to_pil())
        except RagindexError as exc:
            self.builder.warnings.append(f"page {number}: {exc.message}")
            return
        finally:
            page.close()
        add_ocr_paragraphs(self.builder, paragraphs, 72 / dpi)
        if paragraphs:
            self.confidences[str(number)] = round(sum(p.confidence for p in paragraphs) / len(paragraphs), 3)

    def close(self) -> None:
        if self._document is not None:
            self._document.close()


def add_ocr_paragraphs(builder: LayoutBuilder, paragraphs: Sequence[OcrParagraph], scale: float) -> None:
    """OCR'd paragraphs as ``ocr_text`` blocks, their pixel boxes scaled to points by ``scale``."""
    for p in paragraphs:
        box = BBox(p.box.x0 * scale, p.box.top * scale, p.box.x1 * scale, p.box.bottom * scale)
        builder.paragraph(p.text, kind=BlockKind.OCR_TEXT, bbox=box, confidence=round(p.confidence, 3))


def _emit(builder: LayoutBuilder, paragraph: Paragraph, levels: HeadingLevels) -> None:
    if paragraph.kind == "table":
        builder.table(paragraph.rows or [], bbox=paragraph.bbox)
        return
    levels.mark(paragraph)
    if paragraph.kind == "heading":
        builder.heading(paragraph.text, paragraph.level, bbox=paragraph.bbox)
    else:
        builder.paragraph(_unwrap(paragraph.lines), bbox=paragraph.bbox)


def _unwrap(lines: Sequence[Line]) -> str:
    """A paragraph's lines as flowing text: a line broken after a hyphen joins the next without it."""
    out = ""
    for line in lines:
        text = line.text
        if out.endswith("-") and len(out) > 1 and out[-2].isalpha() and text[:1].islower():
            out = out[:-1] + text
        elif out:
            out = join_words((out, text))
        else:
            out = text
    return out


def _is_table(table: Any) -> bool:
    rows = table.extract()
    return len(rows) >= _MIN_TABLE_ROWS and max((len(r) for r in rows), default=0) >= _MIN_TABLE_COLUMNS


def _inside(obj: dict[str, Any], boxes: Sequence[tuple[float, float, float, float]]) -> bool:
    if "x0" not in obj or "top" not in obj:
        return False
    x = (float(obj["x0"]) + float(obj["x1"])) / 2
    y = (float(obj["top"]) + float(obj["bottom"])) / 2
    return any(x0 <= x <= x1 and top <= y <= bottom for x0, top, x1, bottom in boxes)


def _open_error(path: Path, exc: Exception) -> str:
    name = type(exc).__name__
    causes = " ".join(type(a).__name__ for a in (exc, *exc.args) if isinstance(a, Exception))  # pdfplumber wraps
    if "Password" in causes or "Encrypt" in causes:
        return f"{path.name}: the pdf is encrypted with a password; decrypt it and ingest it again"
    return f"{path.name}: not a readable pdf ({name}: {exc})"


def _title(metadata: Any) -> str | None:
    value = metadata.get("Title") if isinstance(metadata, dict) else None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str) or value.strip().lower() in ("", "untitled"):
        return None
    return value.strip()
