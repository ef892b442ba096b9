"""(e) PDF parsing: text pages/s and OCR pages/s up to chunks, peak memory of a 300-page pdf, and a re-parse.

The inputs are made here with reportlab (a 300-page report: headings, paragraphs and a ruled table every tenth
page) and, for OCR, its first pages rendered at 200 dpi by pypdfium2 and re-wrapped by Pillow as an image-only
pdf. Each measurement is a child process:

* ``python -m bench.pdf parse FILE``: the configured loader (the registry of the default settings) and the
  default chunker, in one process, timed separately; peak RSS from ``wait4``.
* ``ragindex ingest FILE --json`` cold, then again after the file was rewritten with the same text (new bytes, a
  new creation date): the second run must embed nothing.
"""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR, env_int, python_module, ragindex, save_section

PDF_DIR = BENCH_DIR / "pdf"
WORDS = [
    "depot",
    "volume",
    "region",
    "quarter",
    "fleet",
    "driver",
    "loading",
    "bay",
    "pallet",
    "gate",
    "inspection",
    "schedule",
    "freight",
    "route",
    "warehouse",
    "tonnage",
    "capacity",
    "forecast",
    "shipment",
    "manifest",
    "terminal",
    "dispatch",
]


def make_report(pages: int, *, stamp: str = "", lines: int = 50, size: float = 9.5) -> bytes:
    """A ``pages``-page report: a heading and ``lines`` lines of 17 words per page (50 lines of 9.5 pt: ~900
    words, a dense page), a ruled 12-row table every tenth page."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas
    from reportlab.platypus import Table, TableStyle

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=0 if stamp else 1)
    pdf.setTitle(f"Depot network report {stamp}".strip())
    for page in range(1, pages + 1):
        pdf.setFont("Helvetica-Bold", 15)
        pdf.drawString(60, 790, f"Chapter {page}: depot {page % 37} operations")
        pdf.setFont("Helvetica", size)
        y = 765
        rows = min(22, lines) if page % 10 == 0 else lines
        for line in range(rows):
            words = [WORDS[(page * 7 + line * 3 + k) % len(WORDS)] for k in range(13)]
            pdf.drawString(60, y, f"Line {line} of page {page}: " + " ".join(words) + ".")
            y -= size * 1.5
        if page % 10 == 0:
            data = [["Depot", "Tonnes", "Trucks", "Delay (h)"]]
            data += [[f"Depot {page}-{r}", f"{1000 + r * page}", f"{r % 9}", f"{r / 4:.2f}"] for r in range(12)]
            table = Table(data)
            table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black)]))
            table.wrapOn(pdf, 460, 300)
            table.drawOn(pdf, 60, y - 260)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def make_scan(pdf: bytes, pages: int, dpi: int = 200) -> bytes:
    """An image-only pdf of the first ``pages`` pages of ``pdf``."""
    import pypdfium2

    document = pypdfium2.PdfDocument(pdf)
    images = [document[i].render(scale=dpi / 72, grayscale=True).to_pil() for i in range(pages)]
    document.close()
    out = io.BytesIO()
    images[0].save(out, format="PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return out.getvalue()


def parse(path: Path) -> dict[str, Any]:
    """Load and chunk ``path`` as an ingest does (default settings), timing each step (run in a child)."""
    from ragindex.chunking.factory import chunker_from_settings
    from ragindex.config import Settings
    from ragindex.loaders.registry import build_registry

    settings = Settings()
    loader = build_registry(settings.loading).for_path(path)
    chunker = chunker_from_settings(settings.chunking, tokenizer_model=settings.dense_model)
    data = path.read_bytes()
    started = time.perf_counter()
    documents = loader.load(path, data)
    loaded = time.perf_counter()
    chunks = [d for doc in documents for d in chunker.chunk(doc)]
    chunked = time.perf_counter()
    (doc,) = documents
    return {
        "pages": doc.metadata["page_count"],
        "ocr_pages": len(doc.metadata.get("ocr_pages", {})),
        "chunks": len(chunks),
        "tables": sum(1 for c in chunks if c.chunk_type == "table"),
        "load_s": loaded - started,
        "chunk_s": chunked - loaded,
    }


def bench_pdf() -> dict[str, Any]:
    """Text and OCR pages/s up to chunks, peak RSS of a 300-page pdf, a cold ingest and a same-text re-ingest."""
    PDF_DIR.mkdir(parents=True, exist_ok=True)
    pages = env_int("BENCH_PDF_PAGES", 300)
    scanned_pages = env_int("BENCH_OCR_PAGES", 10)
    text_pdf, scan_pdf = PDF_DIR / f"report-{pages}.pdf", PDF_DIR / f"scanned-{scanned_pages}.pdf"
    typical_pdf = PDF_DIR / f"scanned-typical-{scanned_pages}.pdf"
    original = make_report(pages)
    text_pdf.write_bytes(original)
    scan_pdf.write_bytes(make_scan(original, scanned_pages))
    # a book-like page: 28 lines of 11 pt, ~510 words (the dense page has ~900)
    typical_pdf.write_bytes(make_scan(make_report(scanned_pages, lines=28, size=11), scanned_pages))
    result: dict[str, Any] = {}
    for name, path in (("text", text_pdf), ("ocr", scan_pdf), ("ocr_typical", typical_pdf)):
        proc = python_module("bench.pdf", "parse", str(path))
        figures = proc.json()
        seconds = figures["load_s"] + figures["chunk_s"]
        result[name] = {
            **figures,
            "pages_per_s": figures["pages"] / seconds,
            "wall_s": proc.wall_s,
            "peak_rss_mb": proc.peak_rss_mb,
            "command": f"python -m bench.pdf parse {path}",
        }
    data_dir = PDF_DIR / "data"
    if data_dir.exists():
        import shutil

        shutil.rmtree(data_dir)
    corpus = PDF_DIR / "corpus"
    corpus.mkdir(exist_ok=True)
    target = corpus / text_pdf.name
    target.write_bytes(original)
    cold = ragindex(data_dir, "ingest", str(corpus), "--json")
    cold_report = cold.json()
    restamped = make_report(pages, stamp="v2")
    assert restamped != original
    target.write_bytes(restamped)
    again = ragindex(data_dir, "ingest", str(corpus), "--json")
    again_report = again.json()
    result["ingest"] = {
        "cold_wall_s": cold.wall_s,
        "cold_chunking_ms": cold_report["stage_ms"]["chunking"],
        "cold_pages_per_s_chunking_stage": pages / (cold_report["stage_ms"]["chunking"] / 1000),
        "cold_peak_rss_mb": cold.peak_rss_mb,
        "cold_chunks": cold_report["chunks"]["total"],
        "reparse_wall_s": again.wall_s,
        "reparse_documents": again_report["documents"],
        "reparse_embedded": again_report["chunks"]["embedded"],
        "command": f"ragindex --data-dir {data_dir} ingest {corpus} --json (cold; then the pdf rewritten, same text)",
    }
    result["targets"] = {"text_pages_per_s": 20, "ocr_pages_per_s": 1, "peak_rss_mb_300_pages": 1024}
    save_section("pdf", result)
    return result


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "parse":
        print(json.dumps(parse(Path(sys.argv[2]))))
    else:
        print(json.dumps(bench_pdf(), default=str, indent=2))
