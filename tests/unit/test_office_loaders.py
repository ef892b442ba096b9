"""Office loaders (pptx, xlsx, docx) on real files built in tmp_path with python-pptx, openpyxl and python-docx."""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from pathlib import Path

import pytest

from ragindex.chunking.headings import Headings
from ragindex.chunking.layout import LayoutChunker
from ragindex.chunking.recursive import RecursiveChunker
from ragindex.config import Settings
from ragindex.errors import DocumentLoadError
from ragindex.loaders import DocxLoader, LoaderRegistry, PptxLoader, XlsxLoader, _ooxml, build_registry
from ragindex.types import BlockKind, ChunkDraft, Document


def _load(loader, path: Path, data: bytes) -> Document:
    path.write_bytes(data)
    (doc,) = loader.load(path, path.read_bytes())
    return doc


def _chunks(doc: Document, size: int = 400) -> list[ChunkDraft]:
    return LayoutChunker(RecursiveChunker(size, 40), limit=size).chunk(doc)


def _page_at(doc: Document, offset: int) -> int | None:
    page = None
    for span in doc.pages:
        if span.start <= offset:
            page = span.page
    return page


def _kind_at(doc: Document, offset: int) -> BlockKind:
    (block,) = [b for b in doc.blocks if b.start <= offset < b.end]
    return block.kind


# --- pptx ------------------------------------------------------------------------------------------


def _deck(core_title: str = "") -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    deck.core_properties.title = core_title
    cover = deck.slides.add_slide(deck.slide_layouts[0])  # Title Slide
    cover.shapes.title.text = "Harbour Survey 2024"
    cover.placeholders[1].text = "Field team report"

    content = deck.slides.add_slide(deck.slide_layouts[1])  # Title and Content: a bulleted body
    content.shapes.title.text = "Tide findings"
    body = content.placeholders[1].text_frame
    body.text = "High water at noon"
    body.add_paragraph().text = "Low water six hours later"
    content.notes_slide.notes_text_frame.text = "Mention the storm surge of March."

    table_slide = deck.slides.add_slide(deck.slide_layouts[5])  # Title Only
    table_slide.shapes.title.text = "Catch by harbour"
    table = table_slide.shapes.add_table(4, 3, Inches(1), Inches(2), Inches(6), Inches(2)).table
    for r, values in enumerate([("Harbour", "Cod", "Herring"), ("Northport", "120", "45"), ("Zanzibar", "7", "912")]):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    table.cell(3, 0).text = "Southbay"

    loose = deck.slides.add_slide(deck.slide_layouts[6])  # Blank: no title placeholder
    # added bottom first: the loader reads top to bottom, then left to right
    loose.shapes.add_textbox(Inches(1), Inches(5), Inches(3), Inches(1)).text_frame.text = "Bottom note"
    loose.shapes.add_textbox(Inches(5), Inches(1), Inches(3), Inches(1)).text_frame.text = "Top right"
    loose.shapes.add_textbox(Inches(1), Inches(1), Inches(3), Inches(1)).text_frame.text = "Top left"
    group = loose.shapes.add_group_shape()
    group.shapes.add_textbox(Inches(1), Inches(3.5), Inches(3), Inches(1)).text_frame.text = "Grouped lower"
    group.shapes.add_textbox(Inches(1), Inches(3), Inches(3), Inches(1)).text_frame.text = "Grouped upper"
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def test_pptx_slides_are_pages_with_their_titles_as_headings(tmp_path):
    path = tmp_path / "survey.pptx"
    doc = _load(PptxLoader(), path, _deck())
    assert doc.parser == "pptx"
    assert doc.source_uri == str(path)
    assert doc.title == "Harbour Survey 2024"  # no core-properties title: the first slide's
    assert doc.metadata == {"page_count": 4}
    assert [span.page for span in doc.pages] == [1, 2, 3, 4]
    headings = Headings(doc.text)
    assert [(h.level, h.title) for h in headings.items] == [
        (2, "Harbour Survey 2024"),
        (2, "Tide findings"),
        (2, "Catch by harbour"),
        (2, "Slide 4"),  # untitled: its text does not fall under the previous slide's title
    ]
    order = ["Field team report", "High water at noon", "Mention the storm surge", "Zanzibar", "Top left"]
    assert [doc.text.index(t) for t in order] == sorted(doc.text.index(t) for t in order)
    assert _page_at(doc, doc.text.index("Zanzibar")) == 3
    assert headings.section_at(doc.text.index("Low water")) == "Tide findings"
    assert doc.warnings == ()


def test_pptx_bullets_are_lists_and_notes_follow_the_slide(tmp_path):
    doc = _load(PptxLoader(), tmp_path / "survey.pptx", _deck())
    assert "- High water at noon\n- Low water six hours later" in doc.text
    assert _kind_at(doc, doc.text.index("High water")) == BlockKind.LIST
    assert _kind_at(doc, doc.text.index("Field team report")) == BlockKind.TEXT  # a subtitle has no bullets
    notes = doc.text.index("Notes: Mention the storm surge of March.")
    assert doc.text.index("Low water") < notes < doc.text.index("## Catch by harbour")
    assert _page_at(doc, notes) == 2
    assert Headings(doc.text).section_at(notes) == "Tide findings"


def test_pptx_shapes_in_reading_order_with_groups_opened(tmp_path):
    doc = _load(PptxLoader(), tmp_path / "survey.pptx", _deck())
    slide = doc.text[doc.text.index("## Slide 4") :]
    order = ["Top left", "Top right", "Grouped upper", "Grouped lower", "Bottom note"]
    assert [slide.index(t) for t in order] == sorted(slide.index(t) for t in order)


def test_pptx_table_cell_comes_with_its_row_and_column_labels(tmp_path):
    doc = _load(PptxLoader(), tmp_path / "survey.pptx", _deck())
    assert "| Harbour | Cod | Herring |\n| --- | --- | --- |\n| Northport | 120 | 45 |" in doc.text
    table = next(b for b in doc.blocks if b.kind == BlockKind.TABLE)
    assert table.page == 3
    assert table.bbox is not None and table.bbox.x0 == pytest.approx(72.0)  # 1 inch from the slide's left edge
    (chunk,) = [c for c in _chunks(doc) if "912" in c.text]
    assert chunk.chunk_type == "table"
    assert chunk.page == 3
    assert chunk.section == "Catch by harbour"
    assert "| Harbour | Cod | Herring |" in chunk.text and "| Zanzibar | 7 | 912 |" in chunk.text


def test_pptx_core_properties_title_wins(tmp_path):
    doc = _load(PptxLoader(), tmp_path / "survey.pptx", _deck(core_title="Annual harbour deck"))
    assert doc.title == "Annual harbour deck"


def test_pptx_empty_deck_is_a_warning(tmp_path):
    from pptx import Presentation

    buffer = io.BytesIO()
    Presentation().save(buffer)
    doc = _load(PptxLoader(), tmp_path / "empty.pptx", buffer.getvalue())
    assert doc.text == ""
    assert doc.warnings == ("the deck has no slides",)


# --- xlsx ------------------------------------------------------------------------------------------


def _workbook() -> bytes:
    import openpyxl
    from openpyxl.chart import BarChart, Reference

    book = openpyxl.Workbook()
    stock = book.active
    stock.title = "Stock"
    stock.append([])  # empty rows and columns around the table are dropped
    stock.append([None, "Part", "Count", None, "Checked", "Share"])
    stock.append([None, "Bolt M6", 1200.0, None, dt.datetime(2024, 3, 1), 0.25])
    stock.append([None, "Nut M6", 300, None, dt.date(2024, 3, 2), 0.5])
    stock.append([])
    stock.append([None, "Washer", 75, None, None, 0.125])
    for cell in ("F3", "F4"):
        stock[cell].number_format = "0%"
    stock["F6"].number_format = "0.0%"
    chart = BarChart()
    chart.add_data(Reference(stock, min_col=3, min_row=2, max_row=6), titles_from_data=True)
    book.create_chartsheet("Chart").add_chart(chart)
    book.create_sheet("Blank")
    prices = book.create_sheet("Prices")
    prices.append(["Part", "EUR"])
    prices.append(["Bolt M6", 0.12])
    prices.append(["Hinge | brass", True])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def test_xlsx_sheets_are_headings_over_tables_on_their_tab_page(tmp_path):
    path = tmp_path / "inventory.xlsx"
    doc = _load(XlsxLoader(), path, _workbook())
    assert doc.parser == "xlsx"
    assert doc.metadata == {"page_count": 4, "sheets": ["Stock", "Chart", "Blank", "Prices"]}
    assert doc.text == (
        "## Stock\n\n"
        "| Part | Count | Checked | Share |\n"
        "| --- | --- | --- | --- |\n"
        "| Bolt M6 | 1200 | 2024-03-01 | 25% |\n"
        "| Nut M6 | 300 | 2024-03-02 | 50% |\n"
        "| Washer | 75 |  | 12.5% |\n\n"
        "## Prices\n\n"
        "| Part | EUR |\n"
        "| --- | --- |\n"
        "| Bolt M6 | 0.12 |\n"
        "| Hinge \\| brass | TRUE |"
    )
    assert [(b.kind, b.page) for b in doc.blocks] == [
        (BlockKind.HEADING, 1),
        (BlockKind.TABLE, 1),
        (BlockKind.HEADING, 4),  # the fourth tab (the chart sheet and the blank sheet have no cells)
        (BlockKind.TABLE, 4),
    ]
    assert doc.warnings == ()


def test_xlsx_long_sheet_is_cut_by_rows_with_the_header_repeated(tmp_path):
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Readings"
    sheet.append(["Station", "Depth", "Salinity"])
    for i in range(200):
        sheet.append([f"station-{i:03d}", i, f"{30 + i / 100:.2f}"])
    buffer = io.BytesIO()
    book.save(buffer)
    doc = _load(XlsxLoader(), tmp_path / "readings.xlsx", buffer.getvalue())
    chunks = [c for c in _chunks(doc, 300) if c.chunk_type == "table"]
    assert len(chunks) > 10
    header = "| Station | Depth | Salinity |\n| --- | --- | --- |\n"
    assert chunks[0].text.startswith("## Readings\n\n" + header)  # the sheet's heading travels with its table
    for chunk in chunks[1:]:
        assert chunk.text.startswith(header)
    assert all((chunk.page, chunk.section) == (1, "Readings") for chunk in chunks)
    (hit,) = [c for c in chunks if "station-123" in c.text]
    assert "| station-123 | 123 | 31.23 |" in hit.text


def test_xlsx_over_the_cell_limit_fails_with_the_setting_named(tmp_path):
    with pytest.raises(DocumentLoadError, match="RAGINDEX_MAX_SPREADSHEET_CELLS=10") as info:
        _load(XlsxLoader(max_cells=10), tmp_path / "inventory.xlsx", _workbook())
    assert "inventory.xlsx" in str(info.value)
    registry = build_registry(Settings(max_spreadsheet_cells=10).loading)
    loader = registry.for_path(Path("x.xlsx"))
    assert isinstance(loader, XlsxLoader) and loader.max_cells == 10


def test_xlsx_empty_workbook_is_a_warning(tmp_path):
    import openpyxl

    buffer = io.BytesIO()
    openpyxl.Workbook().save(buffer)
    doc = _load(XlsxLoader(), tmp_path / "empty.xlsx", buffer.getvalue())
    assert doc.text == ""
    assert doc.warnings == ("no cells with values in the workbook",)


# --- docx ------------------------------------------------------------------------------------------


def test_docx_table_is_a_markdown_table_block_in_document_order(tmp_path):
    import docx

    document = docx.Document()
    document.add_heading("Service plan", level=1)
    document.add_paragraph("Before the table.")
    table = document.add_table(rows=3, cols=3)
    for row, values in zip(
        table.rows, [("Task", "Interval", "Cost"), ("Chain", "Monthly", "5"), ("Tyres", "Yearly", "80")], strict=True
    ):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_paragraph("After the table.")
    buffer = io.BytesIO()
    document.save(buffer)
    doc = _load(DocxLoader(), tmp_path / "plan.docx", buffer.getvalue())
    assert doc.text == (
        "# Service plan\n\n"
        "Before the table.\n\n"
        "| Task | Interval | Cost |\n| --- | --- | --- |\n| Chain | Monthly | 5 |\n| Tyres | Yearly | 80 |\n\n"
        "After the table."
    )
    assert [b.kind for b in doc.blocks] == [BlockKind.HEADING, BlockKind.TEXT, BlockKind.TABLE, BlockKind.TEXT]
    (chunk,) = [c for c in _chunks(doc, 80) if "Yearly" in c.text]
    assert chunk.chunk_type == "table" and chunk.text.startswith("| Task | Interval | Cost |")


# --- registry and bad files ------------------------------------------------------------------------

LOADERS = [(PptxLoader, "pptx", _deck), (XlsxLoader, "xlsx", _workbook)]


def _docx_bytes() -> bytes:
    import docx

    buffer = io.BytesIO()
    docx.Document().save(buffer)
    return buffer.getvalue()


ALL = [*LOADERS, (DocxLoader, "docx", _docx_bytes)]


def test_registry_routes_office_suffixes():
    registry = LoaderRegistry()
    for name, cls in [("a.PPTX", PptxLoader), ("a.pptm", PptxLoader), ("a.xlsx", XlsxLoader), ("a.XLSM", XlsxLoader)]:
        assert isinstance(registry.for_path(Path(name)), cls)


@pytest.mark.parametrize(("cls", "kind", "make"), ALL, ids=[k for _, k, _ in ALL])
def test_not_a_zip_and_truncated_files_fail_alone(tmp_path, cls, kind, make):
    name = f"bad.{kind}"
    for data in (b"just some text", make()[:2000]):
        with pytest.raises(DocumentLoadError, match=f"{name}: not a readable {kind} file") as info:
            _load(cls(), tmp_path / name, data)
        assert info.value.__cause__ is not None


@pytest.mark.parametrize(("cls", "kind", "make"), ALL, ids=[k for _, k, _ in ALL])
def test_password_protected_and_legacy_binary_files_are_named_as_such(tmp_path, cls, kind, make):
    # an encrypted OOXML file is an OLE2 compound file with an EncryptionInfo stream (MS-OFFCRYPTO); only the
    # header and the stream's directory name are looked at, so a stand-in with both is enough
    ole2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)
    with pytest.raises(DocumentLoadError, match=f"locked.{kind}: the {kind} is encrypted with a password"):
        _load(cls(), tmp_path / f"locked.{kind}", ole2 + "EncryptionInfo".encode("utf-16-le") + bytes(64))
    with pytest.raises(DocumentLoadError, match=f"old.{kind}: a legacy binary Office file"):
        _load(cls(), tmp_path / f"old.{kind}", ole2 + bytes(64))


@pytest.mark.parametrize(("cls", "kind", "make"), ALL, ids=[k for _, k, _ in ALL])
def test_damaged_part_fails_alone(tmp_path, cls, kind, make):
    source = zipfile.ZipFile(io.BytesIO(make()))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for item in source.infolist():
            data = source.read(item)
            out.writestr(
                item, b"<not xml" if item.filename.endswith(".xml") and "Content_Types" not in item.filename else data
            )
    with pytest.raises(DocumentLoadError, match=f"damaged.{kind}: not a readable {kind} file"):
        _load(cls(), tmp_path / f"damaged.{kind}", buffer.getvalue())


def test_a_package_of_the_wrong_kind_fails(tmp_path):
    with pytest.raises(DocumentLoadError, match="slides.xlsx: not a readable xlsx file"):
        _load(XlsxLoader(), tmp_path / "slides.xlsx", _deck())
    with pytest.raises(DocumentLoadError, match="sheet.pptx: not a readable pptx file"):
        _load(PptxLoader(), tmp_path / "sheet.pptx", _workbook())


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as out:
        for name, data in members.items():
            out.writestr(name, data)
    return buffer.getvalue()


@pytest.mark.parametrize(("cls", "kind", "make"), ALL, ids=[k for _, k, _ in ALL])
def test_zip_bomb_is_refused_before_parsing(tmp_path, cls, kind, make):
    bomb = _zip({"[Content_Types].xml": b"<Types/>", "part.xml": bytes(_ooxml.RATIO_FLOOR_BYTES + 1)})
    assert len(bomb) < _ooxml.RATIO_FLOOR_BYTES / 500
    with pytest.raises(DocumentLoadError, match=rf"bomb.{kind}: part part.xml inflates [\d,]+ times"):
        _load(cls(), tmp_path / f"bomb.{kind}", bomb)


def test_total_inflated_size_is_capped_but_media_does_not_count(tmp_path, monkeypatch):
    import os

    monkeypatch.setattr(_ooxml, "MAX_UNCOMPRESSED_BYTES", 100_000)
    text = b"<row>" + b"".join(b"<c>%d</c>" % i for i in range(20_000)) + b"</row>"  # compresses ~5x
    with pytest.raises(DocumentLoadError, match="big.xlsx: its parts inflate to [\\d,]+ bytes, more than 100,000"):
        _ooxml.check_package(Path("big.xlsx"), _zip({"sheet.xml": text}), "xlsx")
    # a picture barely compresses: its inflated size is bounded by the file's own, so it is not counted
    _ooxml.check_package(Path("pictures.pptx"), _zip({"ppt/media/image1.png": os.urandom(300_000)}), "pptx")
