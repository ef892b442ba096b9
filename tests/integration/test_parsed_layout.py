"""Parsed layouts through the real engine: a ruled table cell found with its labels, a scanned page searchable,
headings as sections, page / bbox / chunk_type on every hit, and the layout surviving change, repair and reindex."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ragindex.engine import Engine

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from test_pdf_layout import _report_pdf, _scan


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    report = _report_pdf()
    (folder / "report.pdf").write_bytes(report)
    (folder / "scanned.pdf").write_bytes(_scan(report))
    return folder


def _hit(engine: Engine, query: str, filename: str, containing: str = "", top: int = 10) -> dict[str, object]:
    """The best hit of ``query`` from ``filename`` whose text contains ``containing``, among the first ``top``."""
    result = engine.search(query, user_id=1, set_id=1, top_k=top, group_by="none")
    hits = [h.to_dict() for h in result.hits]
    found = [h for h in hits if h["filename"] == filename and containing in str(h["text"])]
    assert found, f"{filename} not among {[h['filename'] for h in hits]}"
    return found[0]


def test_table_cells_scans_headings_and_citations(make_engine: Callable[..., Engine], corpus: Path) -> None:
    with make_engine() as engine:
        report = engine.ingest([corpus])
        assert report.documents["added"] == 2 and report.documents["failed"] == 0

        table = _hit(engine, "West region Q2 volume", "report.pdf", containing="| West |", top=3)
        assert table["chunk_type"] == "table"
        assert "| Region | Q1 | Q2 |" in str(table["text"]) and "| West | 3,743 | 3,802 |" in str(table["text"])
        assert table["page"] == 1 and table["section"] == "Regional Results"
        box = table["bbox"]
        assert isinstance(box, list) and len(box) == 4 and box[0] < box[2] and box[1] < box[3]

        notes = _hit(engine, "right note gate short delays", "report.pdf", containing="Right note")
        assert notes["page"] == 2 and notes["section"] == "Field Notes" and notes["chunk_type"] == "text"

        scanned = _hit(engine, "volumes grow in the fourth quarter", "scanned.pdf", containing="fourth", top=3)
        assert scanned["chunk_type"] == "ocr_text" and scanned["page"] == 1
        assert "fourth quarter" in " ".join(str(scanned["text"]).split())
        hit = next(h for h in engine.search("volumes grow in the fourth quarter", user_id=1, set_id=1, top_k=10).hits)
        assert hit.bbox is not None

        assert engine.verify().ok


def test_same_text_in_new_bytes_embeds_nothing_and_layout_survives_reindex(
    make_engine: Callable[..., Engine], corpus: Path
) -> None:
    with make_engine() as engine:
        engine.ingest([corpus])
        path = corpus / "report.pdf"
        original = path.read_bytes()
        rewritten = original.replace(b"/CreationDate", b"/CreationDat_")  # new bytes, a new file hash, same text
        assert rewritten != original
        path.write_bytes(rewritten)
        again = engine.ingest([corpus])
        assert again.documents["failed"] == 0, again.documents
        assert again.chunks["embedded"] == 0
        engine.reindex_into("layout_copy", drop_old=True)
        table = _hit(engine, "West region Q2 volume", "report.pdf", containing="| West |", top=3)
        assert table["chunk_type"] == "table" and table["bbox"] is not None
        assert engine.verify().ok


def test_a_scanned_chinese_page_is_searchable(make_engine: Callable[..., Engine], tmp_path: Path) -> None:
    """The Chinese fixture (a LibreOffice page in Noto CJK, rasterised by pdftoppm) through OCR, BM25 and hybrid."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "parsing" / "scan-zh.png"
    folder = tmp_path / "scans"
    folder.mkdir()
    (folder / "季度报告.png").write_bytes(fixture.read_bytes())
    with make_engine() as engine:
        assert engine.ingest([folder]).documents["added"] == 1
        for mode in ("bm25", "hybrid"):
            (hit,) = engine.search("北方仓储网络的运营情况", user_id=1, set_id=1, mode=mode, top_k=1).hits
            assert hit.filename == "季度报告.png" and hit.chunk_type == "ocr_text" and hit.page == 1
            assert "北方仓储网络" in hit.text and hit.metadata["ocr"] is True
