"""The structured document model (LayoutBuilder) and the chunking of documents with layout blocks."""

from __future__ import annotations

import pytest

from ragindex.chunking import HfTokenizer, build_chunker, resolve_model_dir
from ragindex.chunking.layout import LayoutChunker
from ragindex.chunking.recursive import RecursiveChunker
from ragindex.loaders.layout import LayoutBuilder, markdown_table
from ragindex.types import BBox, BlockKind, Document

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
REGIONS = [["Region", "Q1", "Q2"], ["North", "1,204", "1,317"], ["South", "2,088", "2,151"]]


def test_markdown_table_pads_escapes_and_keeps_a_lone_row_as_data() -> None:
    assert markdown_table([["a", "b|c"], ["1"]]) == "| a | b\\|c |\n| --- | --- |\n| 1 |  |"
    assert markdown_table([["only", "row"]]) == "|  |  |\n| --- | --- |\n| only | row |"
    assert markdown_table([[None, ""], []]) == ""
    assert markdown_table([["multi\nline   cell", "x"], ["y", "z"]]).startswith("| multi line cell | x |")


def test_builder_renders_markdown_with_a_block_per_element_and_page_spans() -> None:
    builder = LayoutBuilder("/tmp/r.pdf", "pdf")
    builder.start_page(1)
    builder.heading("Quarterly   Report", 1, bbox=BBox(10, 10, 200, 30))
    builder.paragraph("First line\nsecond line", bbox=BBox(10, 40, 300, 60))
    builder.start_page(2)
    builder.table(REGIONS, bbox=BBox(10, 10, 300, 90))
    builder.paragraph("   ")  # nothing: no block
    builder.paragraph("read by OCR", kind=BlockKind.OCR_TEXT, confidence=0.91)
    doc = builder.build(title="Report", metadata={"page_count": 2})

    assert doc.text.startswith("# Quarterly Report\n\nFirst line\nsecond line\n\n| Region | Q1 | Q2 |")
    assert [b.kind for b in doc.blocks] == [BlockKind.HEADING, BlockKind.TEXT, BlockKind.TABLE, BlockKind.OCR_TEXT]
    for block in doc.blocks:  # every block's span is its rendered text, nothing else
        assert doc.text[block.start : block.end].strip() == doc.text[block.start : block.end]
    assert doc.text[doc.blocks[3].start : doc.blocks[3].end] == "read by OCR"
    assert [(p.page, doc.text[p.start : p.start + 7]) for p in doc.pages] == [(1, "# Quart"), (2, "| Regio")]
    assert doc.blocks[3].confidence == 0.91 and doc.blocks[2].page == 2
    assert doc.title == "Report" and doc.metadata == {"page_count": 2}


def _table_document(rows: int) -> Document:
    builder = LayoutBuilder("/tmp/t.pdf", "pdf")
    builder.start_page(1)
    builder.heading("Volumes", 2, bbox=BBox(50, 50, 150, 70))
    builder.paragraph("The table lists the shipped volume per depot.", bbox=BBox(50, 80, 400, 95))
    builder.start_page(2)
    table = [["Depot", "Tonnes", "Trucks"], *[[f"Depot {i:03d}", f"{1000 + i}", f"{i % 7}"] for i in range(rows)]]
    builder.table(table, bbox=BBox(50, 100, 500, 700))
    builder.paragraph("Volumes grow in the fourth quarter.", bbox=BBox(50, 710, 400, 725))
    return builder.build(title="Depots")


def test_a_table_that_fits_is_one_chunk_of_type_table_with_its_page_and_box() -> None:
    doc = _table_document(rows=5)
    drafts = build_chunker("recursive", chunk_size=512, chunk_overlap=64).chunk(doc)
    tables = [d for d in drafts if d.chunk_type == "table"]
    assert len(tables) == 1
    (table,) = tables
    assert table.text == doc.text[table.start_char : table.end_char]
    assert table.text.startswith("| Depot | Tonnes | Trucks |") and "| Depot 004 | 1004 | 4 |" in table.text
    assert table.page == 2 and table.section == "Volumes"
    assert table.metadata["bbox"] == [50.0, 100.0, 500.0, 700.0]
    assert table.metadata["element_types"] == ["table"]
    text = [d for d in drafts if d.chunk_type == "text"]
    assert text and all("| Depot" not in d.text for d in text)
    assert [d.index for d in drafts] == list(range(len(drafts)))


@pytest.mark.parametrize("size", [200, 512])
def test_a_large_table_is_split_by_rows_with_the_header_in_every_piece(size: int) -> None:
    doc = _table_document(rows=60)
    drafts = build_chunker("recursive", chunk_size=size, chunk_overlap=16).chunk(doc)
    pieces = [d for d in drafts if d.chunk_type == "table"]
    assert len(pieces) > 2
    header = "| Depot | Tonnes | Trucks |\n| --- | --- | --- |\n"
    rows_seen: list[str] = []
    for piece in pieces:
        assert piece.text.startswith(header), piece.text[:80]
        assert len(piece.text) <= size
        body = piece.text[len(header) :].split("\n")
        assert all(line.startswith("| Depot ") for line in body)  # whole rows only
        rows_seen.extend(body)
        assert piece.page == 2 and piece.section == "Volumes"
    assert rows_seen == [f"| Depot {i:03d} | {1000 + i} | {i % 7} |" for i in range(60)]  # each row once, in order
    assert pieces[0].text == doc.text[pieces[0].start_char : pieces[0].end_char]
    for piece in pieces[1:]:  # later pieces: the header again, then an exact slice of the document's rows
        assert doc.text[piece.start_char : piece.end_char] == piece.text[len(header) :]


def test_a_large_table_is_split_by_tokens_for_the_structure_chunker() -> None:
    directory = resolve_model_dir(MODEL)
    assert directory is not None, "the bundled all-MiniLM-L6-v2 model must be installed"
    tokenizer = HfTokenizer.from_model_dir(directory)  # the real MiniLM tokenizer
    doc = _table_document(rows=80)
    chunker = build_chunker("structure", chunk_tokens=64, tokenizer_factory=lambda: tokenizer)
    assert isinstance(chunker, LayoutChunker)
    pieces = [d for d in chunker.chunk(doc) if d.chunk_type == "table"]
    assert len(pieces) > 3
    for piece in pieces:
        assert piece.token_count == tokenizer.count(piece.text) <= 64
        assert piece.text.startswith("| Depot | Tonnes | Trucks |")


def test_chunks_of_ocr_text_carry_the_ocr_flag_and_the_lowest_confidence() -> None:
    builder = LayoutBuilder("/tmp/s.png", "image")
    builder.start_page(1)
    builder.paragraph("Scanned words one.", kind=BlockKind.OCR_TEXT, bbox=BBox(10, 10, 90, 20), confidence=0.95)
    builder.paragraph("Scanned words two.", kind=BlockKind.OCR_TEXT, bbox=BBox(10, 30, 120, 40), confidence=0.81)
    (draft,) = build_chunker("recursive").chunk(builder.build())
    assert draft.chunk_type == "ocr_text"
    assert draft.metadata == {
        "element_types": ["ocr_text"],
        "bbox": [10.0, 10.0, 120.0, 40.0],
        "ocr": True,
        "ocr_confidence": 0.81,
    }


def test_a_chunk_over_two_pages_lists_them_and_boxes_only_its_first_page() -> None:
    builder = LayoutBuilder("/tmp/p.pdf", "pdf")
    builder.start_page(1)
    builder.paragraph("End of the first page.", bbox=BBox(10, 700, 300, 720))
    builder.start_page(2)
    builder.paragraph("Start of the second page.", bbox=BBox(10, 50, 300, 70))
    (draft,) = build_chunker("recursive").chunk(builder.build())
    assert draft.page == 1
    assert draft.metadata["pages"] == [1, 2]
    assert draft.metadata["bbox"] == [10.0, 700.0, 300.0, 720.0]


def test_documents_without_blocks_are_chunked_exactly_as_before() -> None:
    doc = Document(source_uri="/tmp/a.md", text="# Title\n\n" + "Some words here. " * 80, parser="markdown")
    wrapped = build_chunker("recursive", chunk_size=200, chunk_overlap=20).chunk(doc)
    plain = RecursiveChunker(200, 20).chunk(doc)
    assert wrapped == plain
    assert all(d.chunk_type == "text" and not d.metadata for d in wrapped)


def test_a_heading_right_above_a_table_travels_with_it_and_text_is_cut_before_headings() -> None:
    builder = LayoutBuilder("/tmp/h.pdf", "pdf")
    builder.start_page(1)
    builder.paragraph("Intro text of the first slide.")
    builder.heading("Largest moons", 2)
    builder.table([["Moon", "Planet"], ["Ganymede", "Jupiter"], ["Titan", "Saturn"]])
    builder.heading("Next slide", 2)
    builder.paragraph("Closing words.")
    drafts = build_chunker("recursive").chunk(builder.build())
    assert [d.text.split("\n")[0] for d in drafts] == [
        "Intro text of the first slide.",
        "## Largest moons",
        "## Next slide",
    ]
    assert drafts[1].chunk_type == "table" and "| Titan | Saturn |" in drafts[1].text
    assert drafts[1].section == "Largest moons"
    assert all(d.chunk_type != "heading" for d in drafts)


def test_chunks_of_nested_headings_carry_their_heading_path() -> None:
    from ragindex.chunking.headings import Headings

    text = "# Report\n\n## Results\n\n### North\n\nup\n\n## Outlook\n\nflat\n\n# Annex\n\nx"
    headings = Headings(text)
    assert headings.path_at(text.index("up")) == ["Report", "Results", "North"]
    assert headings.path_at(text.index("flat")) == ["Report", "Outlook"]
    assert headings.path_at(text.index("x")) == ["Annex"] and headings.path_at(0) == ["Report"]
    builder = LayoutBuilder("/tmp/n.pdf", "pdf")
    builder.start_page(1)
    builder.heading("Report", 1)
    builder.paragraph("The report covers the third quarter.")
    builder.heading("Results", 2)
    builder.paragraph("Volumes went up in the north.")
    drafts = build_chunker("recursive").chunk(builder.build())
    assert drafts[-1].metadata["heading_path"] == ["Report", "Results"]
    assert drafts[-1].section == "Results"
