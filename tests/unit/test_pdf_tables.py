"""Tables from the geometry of the text (issue 26), on pdfs drawn by reportlab (tests/tablekit.py): a results
table without vertical rules that stacks two logical rows per grid row beside a row-spanning label, a cost table
with dot leaders and wrapped labels continued on the next page of a three-column notice, and a ruled grid whose
cells stack two rows."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ragindex.chunking import build_chunker
from ragindex.chunking.layout import TABLE_CAPTION
from ragindex.chunking.sections import with_sections
from ragindex.loaders.pdf import PdfLoader
from ragindex.loaders.pdf_tables import bands_of, is_numeric, segments_of
from ragindex.types import BlockKind, Document
from tablekit import (
    COST_HEADER,
    COST_ROWS,
    continued_table_pdf,
    grid_around_values_pdf,
    header_ruled_table_pdf,
    lists_and_chart_pdf,
    long_row_labels_pdf,
    sectioned_table_pdf,
    simple_rows,
    spanning_group_labels_pdf,
    stacked_table_pdf,
    table_above_prose_with_figures_pdf,
    tall_header_table_pdf,
    unit_column_table_pdf,
)


def _load(data: bytes, name: str = "t.pdf") -> Document:
    return PdfLoader().load(Path(name), data)[0]


def _tables(doc: Document) -> list[list[list[str]]]:
    """The document's markdown tables (a continued table is one), as rows of cells."""
    tables: list[list[list[str]]] = []
    previous_end = -10
    for block in doc.blocks:
        if block.kind != BlockKind.TABLE:
            continue
        lines = doc.text[block.start : block.end].split("\n")
        rows = [[c.strip() for c in line.strip()[1:-1].split(" | ")] for line in lines if not line.startswith("|-")]
        rows = [r for r in rows if r != ["---"] * len(r) and not all(c.strip("- ") == "" for c in r)]
        if block.start == previous_end + 1 and tables:
            tables[-1].extend(rows)
        else:
            tables.append(rows)
        previous_end = block.end
    return tables


@pytest.mark.parametrize("rules", [True, False], ids=["booktabs-rules", "no-rules"])
def test_stacked_rows_split_and_the_spanning_label_goes_to_each(rules: bool) -> None:
    data, expected = stacked_table_pdf(rules=rules)
    doc = _load(data)
    assert _tables(doc) == expected
    assert "| 6 | OTSL | 0.965 | 0.934 | 0.955 | 0.88 | 2.73 |" in doc.text
    assert "| 6 | HTML | 0.969 | 0.927 | 0.955 | 0.857 | 5.39 |" in doc.text
    assert "\n\n6\n\n" not in doc.text and "OTSL HTML" not in doc.text  # no loose label, no merged cells
    caption = next(b for b in doc.blocks if b.kind == BlockKind.CAPTION)
    assert doc.text[caption.start : caption.end].startswith("Table 1. HPO on PubTabNet")
    # the paragraphs around the table stay text, in order
    assert doc.text.index("commenters supplied") < caption.start
    assert doc.text.rindex("| 2 | HTML |") < doc.text.index("Deeper encoders gain little")


def test_dot_leaders_wrapped_labels_and_a_table_continued_on_the_next_page() -> None:
    data, expected = continued_table_pdf()
    doc = _load(data)
    assert _tables(doc) == expected  # one table: the header once, every row with its values
    assert "...." not in doc.text and "Continued" not in doc.text  # leaders stripped, the second caption dropped
    assert "| Labor cost | $766,865 | $781,200 |" in doc.text
    assert "| Legal review of the permits issued by the states | $64,000 | $65,920 |" in doc.text
    blocks = [b for b in doc.blocks if b.kind == BlockKind.TABLE]
    assert [b.page for b in blocks] == [1, 2] and blocks[1].start == blocks[0].end + 1
    assert "| The agency" not in doc.text and "| adjusted" not in doc.text  # three columns of prose stay prose
    assert doc.text.count("Table 2—Estimated Annual Costs of the Program") == 1


def test_every_chunk_of_a_continued_table_has_its_page_header_and_caption_indexed() -> None:
    data, _ = continued_table_pdf()
    doc = _load(data)
    drafts = with_sections(doc, build_chunker("recursive").chunk(doc), max_chars=3000, contextual=True)
    tables = [d for d in drafts if d.chunk_type == "table" and d.unit == "chunk"]
    assert [d.page for d in tables] == [1, 2]  # cut at the page break, each piece on its own page
    header = "| " + " | ".join(COST_HEADER) + " |"
    caption = "Table 2—Estimated Annual Costs of the Program"
    for draft in tables:
        assert header in draft.text and draft.metadata[TABLE_CAPTION] == caption
        indexed = f"{draft.context or ''}\n{draft.text}"
        assert caption in indexed
    assert "| Audit | $31,500 | $32,440 |" in tables[1].text and tables[1].text.startswith(header)
    assert tables[1].context == caption  # not repeated where the text opens with it (the first piece)


def test_a_ruled_grid_stacking_two_rows_per_cell_is_split_with_its_spanning_label() -> None:
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas
    from reportlab.platypus import Table, TableStyle

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=letter, invariant=1)
    rows = [
        ["# layers", "Language", "TEDS", "mAP"],
        ["6", "OTSL\nHTML", "0.965\n0.969", "0.88\n0.857"],
        ["4", "OTSL\nHTML", "0.938\n0.952", "0.853\n0.843"],
    ]
    table = Table(rows)
    table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black), ("VALIGN", (0, 0), (-1, -1), "MIDDLE")]))
    table.wrapOn(pdf, 400, 200)
    table.drawOn(pdf, 72, 600)
    pdf.showPage()
    pdf.save()
    doc = _load(buffer.getvalue())
    assert _tables(doc) == [
        [
            ["# layers", "Language", "TEDS", "mAP"],
            ["6", "OTSL", "0.965", "0.88"],
            ["6", "HTML", "0.969", "0.857"],
            ["4", "OTSL", "0.938", "0.853"],
            ["4", "HTML", "0.952", "0.843"],
        ]
    ]


def test_body_rows_ruled_across_the_width_are_split_into_the_header_columns() -> None:
    data, expected = header_ruled_table_pdf()
    doc = _load(data)
    assert _tables(doc) == expected
    assert "| Czech Republic | 98.6 | 1.4 | 0 | 17,655 |" in doc.text
    # the note across the whole width is word-spaced: it stays one cell
    assert "| Source: national reports to the agency, as received by the end of March |" in doc.text


def test_section_labels_set_off_by_space_stay_rows_of_one_table() -> None:
    data, expected = sectioned_table_pdf()
    doc = _load(data)
    assert _tables(doc) == expected  # one table, "Female" a row of it (not a paragraph, not glued to a value)
    assert "| Female |  |  |  |\n| 0 | 23 | 5.4 |  |" in doc.text


def test_bulleted_and_numbered_lists_and_chart_axes_are_not_tables() -> None:
    doc = _load(lists_and_chart_pdf())
    assert not [b for b in doc.blocks if b.kind == BlockKind.TABLE]
    assert "polytechnic teachers" in doc.text and "Set the rate to 3 mph/s." in doc.text
    assert "450" in doc.text and "Jan-08" in doc.text  # the chart's labels stay text


def test_a_grid_around_the_values_only_gives_way_to_the_whole_table_of_aligned_text() -> None:
    data, expected = grid_around_values_pdf()
    doc = _load(data)
    tables = _tables(doc)
    assert len(tables) == 1 and tables[0][1:] == expected[0]  # labels and totals in the rows of the values
    assert "| 1-2 | 2,586,688 | 2,568,738 | 647,701 | 639,327 | 8,002,463 |" in doc.text
    assert "2,586,688 2,568,738" not in doc.text  # a group's two columns are not one grid cell
    assert tables[0][0][0] == "Age (years)" and tables[0][0][-1] == "Total population"


def test_a_unit_column_without_a_header_joins_the_label_on_its_left() -> None:
    data, expected = unit_column_table_pdf()
    doc = _load(data)
    assert _tables(doc) == expected
    assert "| 14 years | 3,782,784 |" in doc.text


def test_running_text_that_quotes_figures_neither_joins_a_table_nor_bridges_its_gutters() -> None:
    data, expected = table_above_prose_with_figures_pdf()
    doc = _load(data)
    assert _tables(doc) == expected
    assert "| 45-54 | 47 | 21.8 | (16.0-29.0) | 91 | 8.7 | (7.0-10.6) |" in doc.text
    assert "| Rates ranged" not in doc.text and "with a median of" in doc.text  # the prose stays text


def test_a_header_of_six_lines_is_joined_per_column() -> None:
    data, expected = tall_header_table_pdf()
    doc = _load(data)
    assert _tables(doc) == expected
    assert "| Dose (ppm) | Body weight at the end of the study (g) |" in doc.text


def test_a_group_label_across_the_value_columns_does_not_merge_them() -> None:
    data, expected = spanning_group_labels_pdf()
    doc = _load(data)
    assert _tables(doc) == expected
    assert "| Actual | 49,293 | 49,266 | 49,373 | 49,484 |" in doc.text


def test_long_row_labels_wrapped_around_their_values_are_a_label_column_not_prose() -> None:
    data, expected = long_row_labels_pdf()
    doc = _load(data)
    assert _tables(doc) == expected  # every label whole, its last line included (not a section row, not text)
    assert "| Between-state inequality in premature mortality by the Gini index | 0.0868 |" in doc.text


def test_dot_leaders_are_cut_and_numbers_recognised() -> None:
    word = {"text": "Labor cost ........ $766,865", "x0": 0.0, "x1": 280.0, "top": 0.0, "bottom": 10.0, "size": 10.0}
    segments = segments_of([word])
    assert [s.text for s in segments] == ["Labor cost", "$766,865"] and segments[0].leader
    assert segments[0].x1 < segments[1].x0
    assert [len(b.segments) for b in bands_of(segments)] == [2]  # the leader keeps them apart
    for text in ("0.965", "$1,980,150", "12.5%", "(3,400)", "—", "12 ± 3", "-0.5"):
        assert is_numeric(text), text
    for text in ("OTSL", "Labor cost", "Table 2", "2020s growth"):
        assert not is_numeric(text), text


def test_expected_rows_match_the_fixture_data() -> None:
    """The fixtures' ground truth is what the bench scores too: every cost row is in it once."""
    _, expected = continued_table_pdf()
    assert simple_rows(expected[0])[1:] == [list(r) for r in COST_ROWS]
