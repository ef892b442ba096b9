"""A pptx deck, an xlsx workbook and a broken xlsx through the real engine (SQLite, Qdrant Edge, the shipped model).

A table cell is found by search as a ``table`` hit citing its slide or sheet tab (``page``) and the slide title or
sheet name (``section``), with its row and column labels in the same hit.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ragindex.engine import Engine

pytestmark = pytest.mark.integration


def _deck(path: Path) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    cover = deck.slides.add_slide(deck.slide_layouts[0])
    cover.shapes.title.text = "Lighthouse maintenance"
    cover.placeholders[1].text = "Coastal service, spring round"
    lamps = deck.slides.add_slide(deck.slide_layouts[5])
    lamps.shapes.title.text = "Lamp replacement schedule"
    table = lamps.shapes.add_table(3, 3, Inches(1), Inches(2), Inches(6), Inches(1.5)).table
    rows = [
        ("Lighthouse", "Lamp", "Replaced"),
        ("Skerryvore", "xenon 1000 W", "April"),
        ("Fastnet", "LED array", "May"),
    ]
    for r, values in enumerate(rows):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    lamps.notes_slide.notes_text_frame.text = "The Fastnet crew asked for spare lenses."
    deck.save(str(path))


def _workbook(path: Path) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    book.active.title = "Summary"
    book.active.append(["Year", "Visitors"])
    book.active.append([2023, 18250])
    stock = book.create_sheet("Spare parts")
    stock.append(["Part", "Quantity", "Depot"])
    stock.append(["Fresnel lens", 4, "Oban"])
    stock.append(["Foghorn diaphragm", 11, "Stromness"])
    book.save(str(path))


def test_office_tables_are_found_as_table_hits_on_their_page_and_section(
    make_engine: Callable[..., Engine], tmp_path: Path
) -> None:
    corpus = tmp_path / "office"
    corpus.mkdir()
    _deck(corpus / "lighthouses.pptx")
    _workbook(corpus / "depots.xlsx")
    (corpus / "broken.xlsx").write_bytes(b"PK\x03\x04 truncated")
    with make_engine() as engine:
        report = engine.ingest([corpus])
        assert report.documents["added"] == 2 and report.documents["failed"] == 1
        (failure,) = report.failures
        assert "broken.xlsx: not a readable xlsx file" in failure["error"]
        assert engine.verify().ok

        hits = engine.search("which depot stores the foghorn diaphragm", user_id=1, set_id=1, mode="bm25").hits
        top = hits[0]
        assert (top.filename, top.chunk_type, top.page, top.section) == ("depots.xlsx", "table", 2, "Spare parts")
        assert "| Part | Quantity | Depot |" in top.text and "| Foghorn diaphragm | 11 | Stromness |" in top.text

        # hybrid, each chunk its own hit (by default the notes and the table, one section, are grouped into one)
        hits = engine.search("when was the Skerryvore lamp replaced", user_id=1, set_id=1, group_by="none").hits
        table = next(h for h in hits if h.filename == "lighthouses.pptx" and h.chunk_type == "table")
        assert (table.page, table.section) == (2, "Lamp replacement schedule")
        assert "| Lighthouse | Lamp | Replaced |" in table.text
        assert "| Skerryvore | xenon 1000 W | April |" in table.text
        assert table.bbox is not None

        notes = engine.search("spare lenses for the Fastnet crew", user_id=1, set_id=1, mode="bm25").hits[0]
        assert notes.filename == "lighthouses.pptx" and notes.page == 2
        assert "Notes: The Fastnet crew asked for spare lenses." in notes.text
