"""PDF layout parsing and OCR on real files: reportlab draws the pages, pypdfium2 and Pillow make the scans,
and the real Tesseract reads them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ragindex.chunking import build_chunker
from ragindex.errors import ConfigurationError, DocumentLoadError
from ragindex.loaders.image import ImageLoader
from ragindex.loaders.ocr import TesseractOcr, parse_tsv
from ragindex.loaders.pdf import PdfLoader
from ragindex.types import BlockKind, Document

FILLER = "The depots report their volumes every quarter to the operations board."


def _report_pdf() -> bytes:
    """Two pages: headings in larger bold type, a ruled table, and a two-column stretch of text."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas
    from reportlab.platypus import Table, TableStyle

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=letter, invariant=1)
    pdf.setTitle("Depot report")
    pdf.setFont("Helvetica-Bold", 20)
    pdf.drawString(72, 720, "Quarterly Depot Report")
    pdf.setFont("Helvetica-Bold", 14)
    pdf.drawString(72, 690, "Regional Results")
    pdf.setFont("Helvetica", 10)
    pdf.drawString(72, 672, "The table lists the shipped volume per region.")
    table = Table([["Region", "Q1", "Q2"], ["North", "1,204", "1,317"], ["West", "3,743", "3,802"]])
    table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black), ("FONTSIZE", (0, 0), (-1, -1), 10)]))
    table.wrapOn(pdf, 400, 200)
    table.drawOn(pdf, 72, 590)
    pdf.setFont("Helvetica", 10)
    pdf.drawString(72, 560, "Volumes grow in the fourth quarter.")
    pdf.showPage()
    pdf.setFont("Helvetica-Bold", 14)
    pdf.drawString(72, 720, "Field Notes")
    pdf.setFont("Helvetica", 10)
    left = ["Left column opens the notes here.", *[f"Left note {i}: the yard was inspected today." for i in range(6)]]
    right = ["Right column follows the left one.", *[f"Right note {i}: the gate had short delays." for i in range(6)]]
    for x, column in ((72, left), (330, right)):  # column by column, as writers emit them
        for i, line in enumerate(column):
            pdf.drawString(x, 690 - 13 * i, line)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def _scan(pdf: bytes, *, dpi: int = 200) -> bytes:
    """An image-only pdf of ``pdf``'s pages (rendered by pypdfium2, re-wrapped by Pillow), as a scanner makes."""
    import pypdfium2

    document = pypdfium2.PdfDocument(pdf)
    images = [document[i].render(scale=dpi / 72, grayscale=True).to_pil() for i in range(len(document))]
    document.close()
    out = io.BytesIO()
    images[0].save(out, format="PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return out.getvalue()


def _load(loader: PdfLoader | ImageLoader, path: Path, data: bytes) -> Document:
    path.write_bytes(data)
    (doc,) = loader.load(path, data)
    return doc


@pytest.fixture(scope="module")
def report() -> bytes:
    return _report_pdf()


def test_headings_come_from_font_sizes_and_tables_from_ruling_lines(tmp_path: Path, report: bytes) -> None:
    doc = _load(PdfLoader(), tmp_path / "report.pdf", report)
    assert doc.title == "Depot report" and doc.metadata["page_count"] == 2
    assert doc.text.startswith("# Quarterly Depot Report\n\n## Regional Results\n\nThe table lists")
    assert "\n\n## Field Notes\n\n" in doc.text
    assert "| Region | Q1 | Q2 |\n| --- | --- | --- |\n| North | 1,204 | 1,317 |\n| West | 3,743 | 3,802 |" in doc.text
    assert "Region Q1 Q2" not in doc.text  # the table's words are not also read as text
    kinds = [b.kind for b in doc.blocks]
    assert kinds.count(BlockKind.HEADING) == 3 and kinds.count(BlockKind.TABLE) == 1
    table = next(b for b in doc.blocks if b.kind == BlockKind.TABLE)
    assert table.page == 1 and table.bbox is not None
    assert 60 < table.bbox.x0 < 80 and table.bbox.top < table.bbox.bottom
    assert doc.text.index("The table lists") < table.start < doc.text.index("Volumes grow")  # reading order


def test_two_columns_are_read_left_column_first(tmp_path: Path, report: bytes) -> None:
    doc = _load(PdfLoader(), tmp_path / "report.pdf", report)
    positions = [doc.text.index(f"Left note {i}") for i in range(6)] + [
        doc.text.index(f"Right note {i}") for i in range(6)
    ]
    assert positions == sorted(positions)
    assert "today. Right" not in doc.text  # no line runs across the gutter


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parsing"


def test_a_libreoffice_report_keeps_columns_labels_and_headings() -> None:
    """The LibreOffice fixture (tests/fixtures/parsing/README.md): headings, a ruled table, a table without rules,
    two columns."""
    path = FIXTURES / "report.pdf"
    doc = PdfLoader().load(path, path.read_bytes())[0]
    text = doc.text
    assert text.startswith("# Quarterly Operations Report\n\n")
    assert "\n## Regional Results\n" in text and "\n## Staffing Summary\n" in text and "\n# Field Notes\n" in text
    assert "| West | 3,743 | 3,802 | 3,866 |" in text
    # the table without rules is found from its text's positions (issue 26), every cell in its column
    assert "| Site | Drivers | Loaders |\n| --- | --- | --- |\n| Aberdeen | 41 | 17 |\n" in text
    amber = [text.index(f"Amber note {n}") for n in ("one", "two", "three")]
    birch = [text.index(f"Birch note {n}") for n in ("one", "two", "three")]
    assert amber == sorted(amber) and birch == sorted(birch) and amber[-1] < birch[0]  # left column first


def test_merged_rows_of_a_table_finder_are_split_again() -> None:
    from ragindex.loaders.pdf_words import _plausible, split_merged_rows

    rows = [
        ["State", "Permit\nHandgun", "Total"],
        ["Alabama\nAlaska", "18,870\n209", "71,137\n7,095"],
        ["Ohio", None, "1"],
    ]
    assert split_merged_rows(rows) == [
        ["State", "Permit\nHandgun", "Total"],
        ["Alabama", "18,870", "71,137"],
        ["Alaska", "209", "7,095"],
        ["Ohio", None, "1"],
    ]
    assert not _plausible([["a", "b"], ["\n".join(map(str, range(20))), "x"]])  # a whole column in one cell
    assert _plausible(rows)


def test_pdf_chunks_carry_page_section_type_and_box(tmp_path: Path, report: bytes) -> None:
    doc = _load(PdfLoader(), tmp_path / "report.pdf", report)
    drafts = build_chunker("recursive").chunk(doc)
    table = next(d for d in drafts if d.chunk_type == "table")
    assert table.section == "Regional Results" and table.page == 1
    assert "| West | 3,743 | 3,802 |" in table.text and table.text.startswith("| Region | Q1 | Q2 |")
    notes = [d for d in drafts if "Right note 5" in d.text]
    assert notes and notes[0].page == 2 and notes[0].section == "Field Notes"
    assert all(len(d.metadata["bbox"]) == 4 for d in drafts)


def test_a_scanned_pdf_is_read_by_ocr_with_confidence(tmp_path: Path, report: bytes) -> None:
    doc = _load(PdfLoader(ocr=TesseractOcr), tmp_path / "scan.pdf", _scan(report))
    assert set(doc.metadata["ocr_pages"]) == {"1", "2"}
    assert all(0.5 < c <= 1 for c in doc.metadata["ocr_pages"].values())
    assert {b.kind for b in doc.blocks} == {BlockKind.OCR_TEXT}
    flat = " ".join(doc.text.split())
    for words in ("Quarterly Depot Report", "Volumes grow in the fourth quarter", "Right note 5"):
        assert words in flat
    assert [p.page for p in doc.pages] == [1, 2]
    box = doc.blocks[0].bbox  # in pdf points, like a text page's boxes
    assert box is not None and 60 < box.x0 < 90 and box.bottom < 200
    (first, *_) = build_chunker("recursive").chunk(doc)
    assert first.chunk_type == "ocr_text" and first.metadata["ocr"] is True and first.metadata["ocr_confidence"] > 0.5


def test_a_page_with_a_text_layer_is_never_ocrd(tmp_path: Path, report: bytes) -> None:
    def refuse() -> TesseractOcr:
        raise AssertionError("OCR must not run on pages with a text layer")

    doc = _load(PdfLoader(ocr=refuse), tmp_path / "report.pdf", report)  # type: ignore[arg-type]
    assert "ocr_pages" not in doc.metadata


def test_ocr_off_skips_scanned_pages_with_a_warning(tmp_path: Path, report: bytes) -> None:
    doc = _load(PdfLoader(ocr=None), tmp_path / "scan.pdf", _scan(report))
    assert doc.text == ""
    assert doc.warnings == (
        "2 page(s) without a text layer were skipped: OCR is off",
        "no extractable text (scanned pdf?)",
    )


def test_images_are_read_by_ocr_with_pixel_boxes(tmp_path: Path, report: bytes) -> None:
    import pypdfium2

    document = pypdfium2.PdfDocument(report)
    image = document[0].render(scale=200 / 72).to_pil()
    document.close()
    for suffix, fmt in ((".png", "PNG"), (".jpg", "JPEG"), (".tiff", "TIFF")):
        out = io.BytesIO()
        image.save(out, format=fmt)
        doc = _load(ImageLoader(ocr=TesseractOcr), tmp_path / f"page{suffix}", out.getvalue())
        assert "Quarterly Depot Report" in " ".join(doc.text.split()), suffix
        assert doc.metadata["bbox_unit"] == "px" and doc.metadata["image_size"] == list(image.size)
        assert doc.blocks[0].bbox is not None and doc.blocks[0].bbox.x0 > 150  # pixels at 200 dpi, not points


def test_a_multi_page_tiff_is_a_multi_page_document(tmp_path: Path, report: bytes) -> None:
    import pypdfium2

    document = pypdfium2.PdfDocument(report)
    pages = [document[i].render(scale=150 / 72, grayscale=True).to_pil() for i in range(2)]
    document.close()
    out = io.BytesIO()
    pages[0].save(out, format="TIFF", save_all=True, append_images=pages[1:])
    doc = _load(ImageLoader(ocr=TesseractOcr), tmp_path / "pages.tiff", out.getvalue())
    assert [p.page for p in doc.pages] == [1, 2]
    assert doc.text.index("Quarterly") < doc.text.index("Right note")


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("fake.png", b"this is not an image at all", "not a readable image"),
        ("cut.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "not a readable image"),
    ],
)
def test_bad_images_fail_alone(tmp_path: Path, name: str, data: bytes, message: str) -> None:
    with pytest.raises(DocumentLoadError, match=message) as info:
        _load(ImageLoader(ocr=TesseractOcr), tmp_path / name, data)
    assert name in str(info.value)


def test_a_decompression_bomb_is_refused_before_it_is_decoded(tmp_path: Path) -> None:
    from PIL import Image

    out = io.BytesIO()
    Image.new("1", (9000, 9000)).save(out, format="PNG")  # 81 M pixels in a ~10 KB file
    assert len(out.getvalue()) < 100_000
    with pytest.raises(DocumentLoadError, match="pixels"):
        _load(ImageLoader(ocr=TesseractOcr), tmp_path / "bomb.png", out.getvalue())


def test_images_with_ocr_off_fail_with_the_setting_named(tmp_path: Path) -> None:
    with pytest.raises(DocumentLoadError, match="RAGINDEX_OCR"):
        _load(ImageLoader(ocr=None), tmp_path / "a.png", b"\x89PNG")


def test_a_missing_language_pack_is_a_configuration_error_naming_the_package() -> None:
    with pytest.raises(ConfigurationError, match="tesseract-ocr-kor") as info:
        TesseractOcr(("en", "ko"))
    assert "apt-get install tesseract-ocr-kor" in str(info.value)
    with pytest.raises(ConfigurationError, match="not on PATH"):
        TesseractOcr(("en",), command="tesseract-that-does-not-exist")


def test_encrypted_truncated_empty_and_oversized_pdfs_fail_alone(tmp_path: Path, report: bytes) -> None:
    from reportlab.lib.pdfencrypt import StandardEncryption
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    locked = canvas.Canvas(buffer, encrypt=StandardEncryption("secret", canPrint=0))
    locked.drawString(72, 720, "hidden")
    locked.showPage()
    locked.save()
    with pytest.raises(DocumentLoadError, match="encrypted with a password"):
        _load(PdfLoader(), tmp_path / "locked.pdf", buffer.getvalue())
    with pytest.raises(DocumentLoadError, match="cut.pdf"):
        _load(PdfLoader(), tmp_path / "cut.pdf", report[: len(report) // 3])
    empty = b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\n"
    empty += b"trailer<</Root 1 0 R>>\n%%EOF\n"
    with pytest.raises(DocumentLoadError, match="no pages|not a readable pdf"):
        _load(PdfLoader(), tmp_path / "empty.pdf", empty)
    with pytest.raises(DocumentLoadError, match="RAGINDEX_MAX_PDF_PAGES=1"):
        _load(PdfLoader(max_pages=1), tmp_path / "long.pdf", report)


def test_tesseract_tsv_becomes_paragraphs_and_chinese_loses_its_spaces() -> None:
    header = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
    rows = [
        "5\t1\t1\t1\t1\t1\t10\t10\t30\t12\t96.5\t季度",
        "5\t1\t1\t1\t1\t2\t42\t10\t30\t12\t91.0\t报告",
        "5\t1\t1\t1\t1\t3\t80\t10\t20\t12\t89.0\tQ3",
        "4\t1\t1\t1\t2\t0\t10\t30\t60\t12\t-1\t",
        "5\t1\t1\t1\t2\t1\t10\t30\t60\t12\t80.0\tsecond",
        "5\t1\t2\t1\t1\t1\t10\t60\t60\t12\t70.0\tother",
    ]
    first, second = parse_tsv("\n".join([header, *rows]))
    assert first.text == "季度报告 Q3\nsecond"
    assert first.box.to_list() == [10.0, 10.0, 100.0, 42.0]
    assert first.confidence == pytest.approx((0.965 + 0.91 + 0.89 + 0.80) / 4)
    assert second.text == "other"


def test_a_scanned_chinese_page_is_read_with_the_default_languages(tmp_path: Path) -> None:
    """The Chinese fixture: a LibreOffice page (Noto CJK) rasterised by pdftoppm (see its README)."""
    from ragindex.config import Settings
    from ragindex.loaders.registry import build_registry

    path = FIXTURES / "scan-zh.png"
    (doc,) = build_registry(Settings().loading).for_path(path).load(path, path.read_bytes())
    assert "本报告总结了北方仓储网络第三季度的运营情况" in doc.text
    assert doc.metadata["ocr_pages"]["1"] > 0.8
    scanned = FIXTURES / "scanned-en.pdf"
    (english,) = build_registry(Settings().loading).for_path(scanned).load(scanned, scanned.read_bytes())
    assert "Quarterly Operations Report" in english.text and english.metadata["page_count"] == 1


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("encrypted.pdf", "encrypted with a password"),
        ("truncated.pdf", "truncated"),
        ("zero-pages.pdf", "has no pages"),
    ],
)
def test_hostile_pdf_fixtures_fail_alone_with_the_reason(name: str, reason: str) -> None:
    """qpdf's encrypted and empty pdfs and a half-copied pdf (tests/fixtures/parsing/README.md)."""
    path = FIXTURES / name
    with pytest.raises(DocumentLoadError, match=reason) as info:
        PdfLoader().load(path, path.read_bytes())
    assert name in str(info.value)
