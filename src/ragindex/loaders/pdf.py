"""PDF files: layout-aware text with headings and tables, OCR for pages without a text layer.

Text comes from PDFium (pypdfium2, Apache-2.0/BSD): every run of text with its box and font
(:mod:`ragindex.loaders.pdf_words`), from which :mod:`ragindex.loaders.pdf_layout` reads lines, paragraphs,
columns and headings. Ruled tables come from pdfplumber (MIT), only on pages that draw lines, and keep each cell
in its row and column. A page whose text layer is empty but which shows an image is rendered by PDFium and read by
OCR (:mod:`ragindex.loaders.ocr`); a page with a text layer is never OCR'd. The choice and its measurements are
in docs/parsing.md. The libraries are imported when a pdf is loaded, never at package import.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragindex.errors import DocumentLoadError, RagindexError
from ragindex.loaders.layout import LayoutBuilder
from ragindex.loaders.ocr import UPSCALE_BELOW_PPI
from ragindex.loaders.pdf_layout import (
    HeadingLevels,
    Line,
    Paragraph,
    join_words,
    lines_of,
    paragraphs_of,
    place_tables,
)
from ragindex.loaders.pdf_tables import drop_empty_columns, find_tables, mark_captions, merge_continued
from ragindex.loaders.pdf_words import (
    RuledTables,
    draws_paths,
    outside,
    page_words,
    shows_image,
    split_merged_rows,
)
from ragindex.types import BBox, BlockKind, Document

if TYPE_CHECKING:
    from ragindex.loaders.ocr import OcrParagraph, TesseractOcr

OcrFactory = Callable[[], "TesseractOcr"]

_MIN_TABLE_ROWS = 2
_MIN_TABLE_COLUMNS = 2


class OcrLoader:
    """What the loaders that read by OCR share: the engine, built on first use in the parser process.

    Args:
        ocr: Builds the OCR engine; None: OCR is off.
        max_pages: A file with more pages fails alone (a runaway or hostile file).
    """

    def __init__(self, *, ocr: OcrFactory | None = None, max_pages: int = 2000) -> None:
        self.ocr = ocr
        self.max_pages = max_pages
        self._engine: TesseractOcr | None = None

    def __getstate__(self) -> dict[str, Any]:  # the engine is rebuilt in the parser process, never pickled
        return {**{k: v for k, v in self.__dict__.items() if k != "_engine"}, "_engine": None}

    def engine(self) -> TesseractOcr | None:
        """The OCR engine (built on first use), or None when OCR is off."""
        if self.ocr is None:
            return None
        if self._engine is None:
            self._engine = self.ocr()
        return self._engine


class PdfLoader(OcrLoader):
    """Loads ``.pdf`` files into one markdown document with a block per heading, paragraph and table.

    Args:
        ocr: Builds the OCR engine, on the first page that needs it; None: pages without a text layer are
            skipped with a warning.
        max_pages: A pdf with more pages fails alone (a runaway or hostile file).
        ocr_dpi: Resolution of the page images read by OCR.
        ocr_workers: Pages OCR'd at once (0: one per core, at most 4).
    """

    name: str = "pdf"
    suffixes: tuple[str, ...] = (".pdf",)

    def __init__(
        self, *, ocr: OcrFactory | None = None, max_pages: int = 2000, ocr_dpi: int = 200, ocr_workers: int = 0
    ) -> None:
        super().__init__(ocr=ocr, max_pages=max_pages)
        self.ocr_dpi = ocr_dpi
        self.ocr_workers = ocr_workers or min(os.cpu_count() or 1, 4)

    def load(self, path: Path, data: bytes) -> list[Document]:
        """Parse ``data`` into a single document whose ``source_uri`` is ``str(path)``.

        Raises:
            DocumentLoadError: The pdf is corrupt, encrypted with a password, has no pages, or more than
                ``max_pages``; a page that fails alone becomes a warning, and a truncated file keeps the pages
                PDFium recovers, with a warning (it fails when none has text).
        """
        import pypdfium2

        try:
            pdf = pypdfium2.PdfDocument(data)
        except pypdfium2.PdfiumError as exc:
            raise DocumentLoadError(_open_error(path, data, exc), path=str(path)) from exc
        tables = RuledTables(data)
        ocr = _PageOcr(self, pdf)
        try:
            page_count = len(pdf)
            if page_count == 0:
                raise DocumentLoadError(f"{path.name}: the pdf has no pages", path=str(path))
            if page_count > self.max_pages:
                raise DocumentLoadError(
                    f"{path.name}: {page_count} pages, more than RAGINDEX_MAX_PDF_PAGES={self.max_pages}; "
                    "split the file or raise the limit",
                    path=str(path),
                )
            builder = LayoutBuilder(str(path), self.name)
            pages = [self._read_page(pdf, number, tables, builder) for number in range(1, page_count + 1)]
            for paragraphs, _ in pages:
                mark_captions(paragraphs)
            merge_continued([paragraphs for paragraphs, _ in pages])
            levels = HeadingLevels(line for page, _ in pages for p in page if p.kind != "table" for line in p.lines)
            ocr.run([number for number, (paragraphs, pictured) in enumerate(pages, 1) if pictured and not paragraphs])
            for number, (paragraphs, _) in enumerate(pages, 1):
                builder.start_page(number)
                ocr.emit(number, builder)
                for paragraph in paragraphs:
                    _emit(builder, paragraph, levels)
            title = _title(pdf.get_metadata_dict())
        finally:
            tables.close()
            pdf.close()
        if ocr.skipped:
            builder.warnings.append(f"{ocr.skipped} page(s) without a text layer were skipped: OCR is off")
        truncated = b"%%EOF" not in data[-2048:]
        if truncated and builder.empty:
            raise DocumentLoadError(f"{path.name}: the pdf is truncated and no text could be recovered", path=str(path))
        if truncated:
            builder.warnings.append("the pdf is truncated (no %%EOF): its text is what PDFium could recover")
        if builder.empty:
            builder.warnings.append("no extractable text (scanned pdf?)")
        metadata: dict[str, Any] = {"page_count": page_count}
        if ocr.confidences:
            metadata["ocr_pages"] = ocr.confidences
        return [builder.build(title=title, metadata=metadata)]

    @staticmethod
    def _read_page(pdf: Any, number: int, tables: RuledTables, builder: LayoutBuilder) -> tuple[list[Paragraph], bool]:
        """The page's paragraphs and tables in reading order, and whether it shows an image.

        A page without a text layer has no paragraphs; it is OCR'd only when it shows an image (else it is blank).
        """
        page = pdf[number - 1]
        textpage = None
        try:
            textpage = page.get_textpage()
            words = page_words(page, textpage)
            if not words:
                return [], shows_image(page)
            found = tables.find(number) if draws_paths(page) else []
            if found:  # a grid may rule only the values of a table whose labels stand beside it
                boxes = [box for box, _ in found]
                wider = [t.box for t in find_tables(words)]
                wider = [w for w in wider if sum(_extends(w, box) for box in boxes) == 1]  # never two grids in one
                found = [(box, rows) for box, rows in found if not any(_extends(w, box) for w in wider)]
            words = outside(words, [box for box, _ in found]) if found else words
            ruled = [
                Paragraph(kind="table", rows=drop_empty_columns(split_merged_rows(rows)), box=box)
                for box, rows in found
            ]
            geometric = find_tables(words)
            words = outside(words, [t.box for t in geometric]) if geometric else words
            ruled += [Paragraph(kind="table", rows=t.rows, box=t.box) for t in geometric]
            paragraphs = paragraphs_of(lines_of(words))
            return place_tables(paragraphs, ruled), False
        # a damaged content stream costs its page, not the file
        except Exception as exc:
            builder.warnings.append(f"page {number}: text extraction failed ({type(exc).__name__}: {exc})")
            return [], False
        finally:
            if textpage is not None:
                textpage.close()
            page.close()


_EXTENDS_BY = 10.0
_OVERLAP = 0.9
"""Points a table of aligned text must reach beyond a ruled table's side to hold columns outside its grid."""


def _extends(wide: BBox, ruled: BBox) -> bool:
    """Whether a table of aligned text spans a ruled table's rows (and few more) with columns left or right of its grid.

    Then the grid rules only part of the table (the values under a spanning header, the labels outside), and the
    aligned-text table is the whole one.
    """
    overlap = min(wide.bottom, ruled.bottom) - max(wide.top, ruled.top)
    rows = overlap >= _OVERLAP * (ruled.bottom - ruled.top) and overlap >= _OVERLAP * (wide.bottom - wide.top)
    return rows and (ruled.x0 - wide.x0 > _EXTENDS_BY or wide.x1 - ruled.x1 > _EXTENDS_BY)


class _PageOcr:
    """Reads pages without a text layer by OCR, several at once.

    PDFium renders the pages one after the other (it is not thread-safe); Tesseract reads them in parallel, one
    process per worker (each single-threaded: see :mod:`ragindex.loaders.ocr`), with at most ``workers`` page
    images held at a time.
    """

    def __init__(self, loader: PdfLoader, pdf: Any) -> None:
        self.loader = loader
        self.pdf = pdf
        self.confidences: dict[str, float] = {}
        self.skipped = 0
        self.results: dict[int, list[OcrParagraph] | str] = {}  # page -> paragraphs, or the error's message
        self.dpis: dict[int, float] = {}  # page -> the resolution it was rendered at

    def run(self, numbers: Sequence[int]) -> None:
        """OCR the pages ``numbers`` (results in :attr:`results`)."""
        engine = self.loader.engine() if numbers else None
        if engine is None:
            self.skipped += len(numbers)
            return
        workers = max(1, min(self.loader.ocr_workers, len(numbers)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            pending: dict[int, Future[list[OcrParagraph]]] = {}
            for number in numbers:
                if len(pending) >= workers:
                    self._collect(pending, wait_for_one=True)
                page = self.pdf[number - 1]
                try:
                    # a low-resolution scan is rendered at its own resolution, and the OCR enlarges it (Lanczos)
                    ppi = scan_ppi(page)
                    low = ppi is not None and ppi < min(self.loader.ocr_dpi, UPSCALE_BELOW_PPI) - 5
                    dpi = ppi if low and ppi is not None else self.loader.ocr_dpi
                    image = page.render(scale=dpi / 72, grayscale=True).to_pil()
                finally:
                    page.close()
                self.dpis[number] = dpi
                pending[number] = pool.submit(engine.recognize, image, dpi)
            self._collect(pending, wait_for_one=False)

    def _collect(self, pending: dict[int, Future[list[OcrParagraph]]], *, wait_for_one: bool) -> None:
        if wait_for_one:
            wait(pending.values(), return_when=FIRST_COMPLETED)
        for number in [n for n, f in pending.items() if f.done() or not wait_for_one]:
            future = pending.pop(number)
            try:
                self.results[number] = future.result()
            except RagindexError as exc:
                self.results[number] = exc.message

    def emit(self, number: int, builder: LayoutBuilder) -> None:
        """Add page ``number``'s OCR'd paragraphs to ``builder`` (which is on that page)."""
        result = self.results.get(number)
        if isinstance(result, str):
            builder.warnings.append(f"page {number}: {result}")
            return
        if not result:
            return
        add_ocr_paragraphs(builder, result, 72 / self.dpis.get(number, self.loader.ocr_dpi))
        self.confidences[str(number)] = round(sum(p.confidence for p in result) / len(result), 3)


def scan_ppi(page: Any) -> float | None:
    """The resolution of the scan a pdf page shows, or None when it shows none.

    The pixels per inch of its images at least half the page wide (a whole-page scan or a strip of one; not a
    logo), the lowest of them.
    """
    import pypdfium2.raw as pdfium_c

    width, height = page.get_size()
    found: list[float] = []
    for image in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2):
        left, bottom, right, top = image.get_bounds()
        px_w, px_h = image.get_px_size()
        if right - left < 0.5 * width or top - bottom < 0.01 * height:
            continue
        found.append(min(px_w / ((right - left) / 72), px_h / ((top - bottom) / 72)))
    return min(found) if found else None


def add_ocr_paragraphs(builder: LayoutBuilder, paragraphs: Sequence[OcrParagraph], scale: float) -> None:
    """OCR'd paragraphs as ``ocr_text`` blocks, their pixel boxes scaled to points by ``scale``."""
    for p in paragraphs:
        box = BBox(p.box.x0 * scale, p.box.top * scale, p.box.x1 * scale, p.box.bottom * scale)
        builder.paragraph(p.text, kind=BlockKind.OCR_TEXT, bbox=box, confidence=round(p.confidence, 3))


def _emit(builder: LayoutBuilder, paragraph: Paragraph, levels: HeadingLevels) -> None:
    if paragraph.kind == "table":
        builder.table(paragraph.rows or [], bbox=paragraph.bbox, continues=paragraph.continues)
        return
    if paragraph.kind == "caption":
        builder.paragraph(_unwrap(paragraph.lines), kind=BlockKind.CAPTION, bbox=paragraph.bbox)
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


def _open_error(path: Path, data: bytes, exc: Exception) -> str:
    """Why PDFium refused the file, in words: a password, a truncated file, a pdf without pages, or damage."""
    if "password" in str(exc).lower():
        return f"{path.name}: the pdf is encrypted with a password; decrypt it and ingest it again"
    if b"%%EOF" not in data[-2048:]:
        return f"{path.name}: the pdf is truncated (no end-of-file marker: an interrupted download or copy?)"
    if _page_count(data) == 0:  # PDFium refuses a valid pdf whose page tree is empty
        return f"{path.name}: the pdf has no pages"
    return f"{path.name}: not a readable pdf ({exc})"


def _page_count(data: bytes) -> int | None:
    """The page count pdfminer reads, or None when it cannot read the file either."""
    import pdfplumber

    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            return len(pdf.pages)
    except Exception:  # pdfminer's many damage exceptions: the caller keeps PDFium's message
        return None


def _title(metadata: Any) -> str | None:
    value = metadata.get("Title") if isinstance(metadata, dict) else None
    if not isinstance(value, str) or value.strip().lower() in ("", "untitled"):
        return None
    return value.strip()
