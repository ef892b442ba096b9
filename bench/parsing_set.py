"""Build the parsing test set of issue 12 with real tools, and write its ground truth.

``python bench/parsing_set.py [--out /tmp/ragindex-parsing-set]`` writes into ``--out``:

* ``report-en.docx`` / ``.pdf`` / ``.html``: headings, a bordered table with row and column labels, a table
  without borders, and a page whose second half is a two-column section (LibreOffice converts the docx
  to pdf, ``soffice --headless --convert-to pdf``);
* ``report-zh.docx`` / ``.pdf``: the same report in Chinese, set in Noto Sans CJK SC (Debian ``fonts-noto-cjk``);
* ``slides.pptx`` (python-pptx, titles, bullets, a table and speaker notes) and ``slides.pdf`` (LibreOffice);
* ``book.xlsx`` (openpyxl, two sheets);
* ``long-300.pdf``: a 300-page text document (one heading per page, a bordered table every 10th page), from a
  docx through LibreOffice, for speed and peak memory;
* ``scanned-long.pdf``: the first 6 pages of ``long-300.pdf`` rasterised the same way, for OCR speed;
* ``scanned-en.pdf`` / ``scanned-zh.pdf``: the report pages rasterised by ``pdftoppm`` (200 dpi, grey) and
  wrapped again as image-only pdfs by ``img2pdf``; ``scan-en.tiff``, ``scan-en-skewed.jpg`` (1 degree, JPEG
  quality 70) and ``scan-zh.png``: page 1 of each report as a standalone image;
* ``real/``: public pdfs from ``bench/real_pdfs`` (see its SOURCES.md): a US FBI statistics table, a
  three-column Federal Register notice and a Supreme Court transcript page;
* with ``--fixtures DIR``, also the small test fixtures of ``tests/fixtures/parsing`` (its README.md);
* ``truth.json``: for every file, its kind, language, page count, expected headings, table cells as
  (row label, column label, value), text snippets in reading order, and for scans the page text.

Needs ``soffice`` (libreoffice-writer, -impress, -calc), ``pdftoppm`` (poppler-utils), ``img2pdf``, ``qpdf``
and fonts-noto-cjk from Debian, and python-docx, python-pptx, openpyxl and Pillow. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REAL = HERE / "real_pdfs"

# --------------------------------------------------------------------------------------------- the content
EN_TITLE = "Quarterly Operations Report"
EN_INTRO = (
    "This report summarises the operations of the northern depot network for the third quarter. "
    "All figures are in tonnes unless stated otherwise."
)
EN_H_RESULTS = "Regional Results"
EN_RESULTS_INTRO = "The table below lists the shipped volume per region and quarter."
EN_TABLE = [
    ["Region", "Q1", "Q2", "Q3"],
    ["North", "1,204", "1,317", "1,422"],
    ["South", "2,088", "2,151", "2,209"],
    ["East", "1,536", "1,490", "1,612"],
    ["West", "3,743", "3,802", "3,866"],
]
EN_H_STAFF = "Staffing Summary"
EN_STAFF_INTRO = "Staff on the payroll at the end of the quarter, per site."
EN_STAFF = [  # a table WITHOUT borders (python-docx's default table style draws none)
    ["Site", "Drivers", "Loaders"],
    ["Aberdeen", "41", "17"],
    ["Dundee", "36", "23"],
    ["Perth", "28", "19"],
]
EN_H_OUTLOOK = "Outlook"
EN_OUTLOOK = (
    "Volumes are expected to keep growing in the fourth quarter, mainly because the new Inverness depot "
    "opens in October. The fleet renewal continues as planned."
)
EN_H_FIELD = "Field Notes"
EN_FIELD_INTRO = "Notes collected by the depot managers during their site visits."
_FILLER = (
    "The loading bays were inspected in the morning and the results were written into the shared log. "
    "Pallets waiting longer than two hours were counted separately, and the drivers were asked about "
    "delays at the gate. Most of the delays came from paperwork rather than from the handling itself."
)
LEFT_NOTES = [
    f"{opener} {_FILLER}"
    for opener in (
        "Amber note one: the Aberdeen yard reopened after resurfacing.",
        "Amber note two: the Dundee forklifts passed their annual check.",
        "Amber note three: the Perth night shift asked for better lighting.",
    )
]
RIGHT_NOTES = [
    f"{opener} {_FILLER}"
    for opener in (
        "Birch note one: the Inverness site survey is complete.",
        "Birch note two: the cold store in Dundee needs a new compressor.",
        "Birch note three: the rail siding at Perth is back in service.",
    )
]

ZH_TITLE = "季度运营报告"
ZH_INTRO = "本报告总结了北方仓储网络第三季度的运营情况。除非另有说明，所有数字均以吨为单位。"
ZH_H_RESULTS = "区域结果"
ZH_RESULTS_INTRO = "下表列出了各地区每个季度的发货量。"
ZH_TABLE = [
    ["地区", "第一季度", "第二季度", "第三季度"],
    ["北部", "1,204", "1,317", "1,422"],
    ["南部", "2,088", "2,151", "2,209"],
    ["东部", "1,536", "1,490", "1,612"],
    ["西部", "3,743", "3,802", "3,866"],
]
ZH_H_OUTLOOK = "展望"
ZH_OUTLOOK = (
    "预计第四季度的运输量将继续增长，主要得益于因弗内斯新仓库在十月投入使用。车队更新计划按期进行。"
    "各仓库经理在现场检查中发现，大部分延误来自文件手续，而不是装卸作业本身。"
)

SLIDES = [
    (
        "Depot Network Review",
        ["Third quarter results", "Prepared for the operations board"],
        None,
        "Speaker note: welcome the board and introduce the depot managers.",
    ),
    ("Volumes by Region", [], EN_TABLE, "Speaker note: East dipped in Q2 because of the bridge closure."),
    (
        "Next Steps",
        ["Open the Inverness depot in October", "Renew twelve tractor units"],
        None,
        "Speaker note: remind the audience about the Q3 freight surcharge.",
    ),
]
XLSX_SHEETS = {
    "Volumes": EN_TABLE,
    "Staff": EN_STAFF,
}

# ------------------------------------------------------------------------------------------------- helpers


def run(*cmd: str, cwd: Path | None = None) -> None:
    subprocess.run(cmd, check=True, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def soffice_to_pdf(src: Path, out_dir: Path) -> Path:
    """LibreOffice converts ``src`` to pdf in ``out_dir`` (own profile dir, so parallel runs do not clash)."""
    profile = Path(tempfile.mkdtemp(prefix="lo-profile-"))
    try:
        run(
            "soffice",
            f"-env:UserInstallation=file://{profile}",
            "--headless",
            "--convert-to",
            "pdf",
            "--outdir",
            str(out_dir),
            str(src),
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return out_dir / (src.stem + ".pdf")


def cells(table: list[list[str]]) -> list[list[str]]:
    """(row label, column label, value) for every body cell of a table whose first row and column are labels."""
    header = table[0]
    return [[row[0], header[j], row[j]] for row in table[1:] for j in range(1, len(row))]


def table_text(table: list[list[str]]) -> list[str]:
    return [" ".join(row) for row in table]


# -------------------------------------------------------------------------------------------------- docx


def _set_cjk_font(document: Any, font: str) -> None:
    from docx.oxml.ns import qn

    for style_name in ("Normal", "Heading 1", "Heading 2", "Title"):
        style = document.styles[style_name]
        rpr = style.element.get_or_add_rPr()
        fonts = rpr.find(qn("w:rFonts"))
        if fonts is None:
            fonts = rpr.makeelement(qn("w:rFonts"), {})
            rpr.append(fonts)
        fonts.set(qn("w:eastAsia"), font)
        fonts.set(qn("w:ascii"), font)
        fonts.set(qn("w:hAnsi"), font)


def _add_table(document: Any, table: list[list[str]], bordered: bool) -> None:
    t = document.add_table(rows=len(table), cols=len(table[0]))
    if bordered:
        t.style = "Table Grid"
    for i, row in enumerate(table):
        for j, value in enumerate(row):
            t.cell(i, j).text = value
            if i == 0:
                for run_ in t.cell(i, j).paragraphs[0].runs:
                    run_.bold = True


def _two_columns(section: Any) -> None:
    from docx.oxml.ns import qn

    sect_pr = section._sectPr
    cols = sect_pr.find(qn("w:cols"))
    if cols is None:
        cols = sect_pr.makeelement(qn("w:cols"), {})
        sect_pr.append(cols)
    cols.set(qn("w:num"), "2")
    cols.set(qn("w:space"), "720")


def write_report_en(path: Path) -> None:
    from docx import Document
    from docx.enum.section import WD_SECTION
    from docx.enum.text import WD_BREAK

    d = Document()
    d.core_properties.title = EN_TITLE
    d.add_heading(EN_TITLE, level=1)
    d.add_paragraph(EN_INTRO)
    d.add_heading(EN_H_RESULTS, level=2)
    d.add_paragraph(EN_RESULTS_INTRO)
    _add_table(d, EN_TABLE, bordered=True)
    d.add_heading(EN_H_STAFF, level=2)
    d.add_paragraph(EN_STAFF_INTRO)
    _add_table(d, EN_STAFF, bordered=False)
    d.add_heading(EN_H_OUTLOOK, level=2)
    d.add_paragraph(EN_OUTLOOK)
    d.add_section(WD_SECTION.NEW_PAGE)
    d.add_heading(EN_H_FIELD, level=1)
    d.add_paragraph(EN_FIELD_INTRO)
    two = d.add_section(WD_SECTION.CONTINUOUS)
    _two_columns(two)
    for note in LEFT_NOTES:
        d.add_paragraph(note)
    d.paragraphs[-1].add_run().add_break(WD_BREAK.COLUMN)
    for note in RIGHT_NOTES:
        d.add_paragraph(note)
    d.save(str(path))


def write_report_zh(path: Path) -> None:
    from docx import Document

    d = Document()
    _set_cjk_font(d, "Noto Sans CJK SC")
    d.core_properties.title = ZH_TITLE
    d.add_heading(ZH_TITLE, level=1)
    d.add_paragraph(ZH_INTRO)
    d.add_heading(ZH_H_RESULTS, level=2)
    d.add_paragraph(ZH_RESULTS_INTRO)
    _add_table(d, ZH_TABLE, bordered=True)
    d.add_heading(ZH_H_OUTLOOK, level=2)
    d.add_paragraph(ZH_OUTLOOK)
    d.save(str(path))


def write_report_html(path: Path) -> None:
    def table_html(table: list[list[str]]) -> str:
        head = "".join(f"<th>{c}</th>" for c in table[0])
        body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in table[1:])
        return f"<table border='1'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    notes = "".join(f"<p>{n}</p>" for n in LEFT_NOTES + RIGHT_NOTES)
    path.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>{EN_TITLE}</title></head><body>"
        f"<h1>{EN_TITLE}</h1><p>{EN_INTRO}</p><h2>{EN_H_RESULTS}</h2><p>{EN_RESULTS_INTRO}</p>{table_html(EN_TABLE)}"
        f"<h2>{EN_H_STAFF}</h2><p>{EN_STAFF_INTRO}</p>{table_html(EN_STAFF)}<h2>{EN_H_OUTLOOK}</h2><p>{EN_OUTLOOK}</p>"
        f"<h1>{EN_H_FIELD}</h1><p>{EN_FIELD_INTRO}</p><div style='column-count:2'>{notes}</div></body></html>",
        encoding="utf-8",
    )


LONG_PAGES = 300
_WORDS_TEXT = (
    "depot freight pallet driver schedule invoice route cargo warehouse manifest loading bay customs tariff "
    "container shipment carrier dispatch inventory forklift trailer consignment delivery logistics weight "
    "volume quarter region network capacity terminal transfer handling storage rail siding yard gate"
)
_WORDS = _WORDS_TEXT.split()


def long_page_text(page: int) -> list[str]:
    """Three paragraphs of deterministic pseudo-prose for page ``page`` (fits one A4/Letter page with a heading)."""
    rng = random.Random(page)
    paragraphs = []
    for _ in range(3):
        sentences = []
        for _ in range(6):
            words = [rng.choice(_WORDS) for _ in range(rng.randint(8, 14))]
            sentences.append(" ".join(words).capitalize() + ".")
        paragraphs.append(" ".join(sentences))
    return paragraphs


def long_heading(page: int) -> str:
    return f"Section {page}: Depot Log {page * 7 % 1000:03d}"


def write_long(path: Path) -> None:
    from docx import Document
    from docx.enum.text import WD_BREAK

    d = Document()
    for page in range(1, LONG_PAGES + 1):
        d.add_heading(long_heading(page), level=1)
        for text in long_page_text(page):
            d.add_paragraph(text)
        if page % 10 == 0:
            _add_table(
                d,
                [
                    ["Item", "Count", "Weight"],
                    [f"Crates {page}", str(page * 3), f"{page * 11} kg"],
                    [f"Drums {page}", str(page * 2 + 1), f"{page * 13} kg"],
                ],
                bordered=True,
            )
        if page < LONG_PAGES:
            d.paragraphs[-1].add_run().add_break(WD_BREAK.PAGE)
    d.save(str(path))


# -------------------------------------------------------------------------------------------- pptx / xlsx


def write_pptx(path: Path) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    for title, bullets, table, note in SLIDES:
        layout = prs.slide_layouts[5] if table else prs.slide_layouts[1]
        slide = prs.slides.add_slide(layout)
        slide.shapes.title.text = title
        if bullets:
            body = slide.placeholders[1].text_frame
            body.text = bullets[0]
            for b in bullets[1:]:
                body.add_paragraph().text = b
        if table:
            shape = slide.shapes.add_table(len(table), len(table[0]), Inches(1), Inches(2), Inches(8), Inches(3))
            for i, row in enumerate(table):
                for j, value in enumerate(row):
                    shape.table.cell(i, j).text = value
        slide.notes_slide.notes_text_frame.text = note
    prs.save(str(path))


def write_xlsx(path: Path) -> None:
    from openpyxl import Workbook

    wb = Workbook()
    wb.remove(wb.active)
    for name, table in XLSX_SHEETS.items():
        ws = wb.create_sheet(name)
        for row in table:
            ws.append([_number(v) if i else v for i, v in enumerate(row)])
    wb.save(str(path))


def _number(value: str) -> int | str:
    try:
        return int(value.replace(",", ""))
    except ValueError:
        return value


# ------------------------------------------------------------------------------------------------- scans


def rasterise(pdf: Path, prefix: Path, dpi: int = 200) -> list[Path]:
    run("pdftoppm", "-r", str(dpi), "-gray", "-png", str(pdf), str(prefix))
    return sorted(prefix.parent.glob(prefix.name + "-*.png"))


def image_pdf(images: list[Path], out: Path) -> None:
    run("img2pdf", "--output", str(out), *map(str, images))


def make_scans(out: Path, work: Path) -> None:
    from PIL import Image

    en_pages = rasterise(out / "report-en.pdf", work / "en")
    zh_pages = rasterise(out / "report-zh.pdf", work / "zh")
    image_pdf(en_pages, out / "scanned-en.pdf")
    image_pdf(zh_pages[:1], out / "scanned-zh.pdf")
    run(
        "pdftoppm", "-r", "200", "-gray", "-png", "-l", str(SCANNED_LONG), str(out / "long-300.pdf"), str(work / "long")
    )
    image_pdf(sorted(work.glob("long-*.png")), out / "scanned-long.pdf")
    Image.open(en_pages[0]).save(out / "scan-en.tiff", compression="tiff_deflate")
    shutil.copy(zh_pages[0], out / "scan-zh.png")
    skewed = Image.open(en_pages[0]).convert("L").rotate(1.0, expand=True, fillcolor=255)
    skewed.save(out / "scan-en-skewed.jpg", quality=70)


# ------------------------------------------------------------------------------------------------- truth


SCANNED_LONG = 6  # pages of long-300.pdf rasterised into scanned-long.pdf, for OCR speed


def long_page_truth(page: int) -> str:
    return "\n".join([long_heading(page), *long_page_text(page)])


def page1_text_en() -> str:
    return "\n".join(
        [
            EN_TITLE,
            EN_INTRO,
            EN_H_RESULTS,
            EN_RESULTS_INTRO,
            *table_text(EN_TABLE),
            EN_H_STAFF,
            EN_STAFF_INTRO,
            *table_text(EN_STAFF),
            EN_H_OUTLOOK,
            EN_OUTLOOK,
        ]
    )


def page2_text_en() -> str:
    return "\n".join([EN_H_FIELD, EN_FIELD_INTRO, *LEFT_NOTES, *RIGHT_NOTES])


def page1_text_zh() -> str:
    return "\n".join(
        [ZH_TITLE, ZH_INTRO, ZH_H_RESULTS, ZH_RESULTS_INTRO, *table_text(ZH_TABLE), ZH_H_OUTLOOK, ZH_OUTLOOK]
    )


EN_HEADINGS = [EN_TITLE, EN_H_RESULTS, EN_H_STAFF, EN_H_OUTLOOK, EN_H_FIELD]
ZH_HEADINGS = [ZH_TITLE, ZH_H_RESULTS, ZH_H_OUTLOOK]
# whole first sentences: in the narrow columns each spans two or three lines, so an extractor that reads
# across both columns line by line splits them and they are not found
TWO_COLUMN_ORDER = [n.split(" The loading bays")[0] for n in LEFT_NOTES + RIGHT_NOTES]
EN_ORDER = [EN_TITLE, EN_H_RESULTS, EN_H_STAFF, EN_H_OUTLOOK, EN_H_FIELD, *TWO_COLUMN_ORDER]


def truth() -> dict[str, dict[str, Any]]:
    report_en = {
        "lang": "en",
        "pages": 2,
        "headings": EN_HEADINGS,
        "table_cells": cells(EN_TABLE),
        "borderless_cells": cells(EN_STAFF),
        "order": EN_ORDER,
        "two_column_order": TWO_COLUMN_ORDER,
    }
    report_zh = {
        "lang": "zh",
        "pages": 1,
        "headings": ZH_HEADINGS,
        "table_cells": cells(ZH_TABLE),
        "order": [ZH_TITLE, ZH_H_RESULTS, "北部", "西部", ZH_H_OUTLOOK],
    }
    slides = {
        "lang": "en",
        "pages": 3,
        "headings": [s[0] for s in SLIDES],
        "table_cells": cells(EN_TABLE),
        "order": [s[0] for s in SLIDES],
        "notes": [s[3] for s in SLIDES],
    }
    t: dict[str, dict[str, Any]] = {
        "report-en.pdf": {"kind": "text-pdf", **report_en},
        "report-en.docx": {"kind": "docx", **report_en},
        "report-en.html": {"kind": "html", **report_en},
        "report-zh.pdf": {"kind": "text-pdf", **report_zh},
        "report-zh.docx": {"kind": "docx", **report_zh},
        "slides.pptx": {"kind": "pptx", **slides},
        "slides.pdf": {"kind": "text-pdf", **{k: v for k, v in slides.items() if k != "notes"}},
        "book.xlsx": {
            "kind": "xlsx",
            "lang": "en",
            "pages": 2,
            "headings": list(XLSX_SHEETS),  # numbers, unformatted
            "table_cells": [[r, c, v.replace(",", "")] for r, c, v in cells(EN_TABLE) + cells(EN_STAFF)],
            "order": ["North", "West", "Aberdeen"],
        },
        "long-300.pdf": {
            "kind": "text-pdf",
            "lang": "en",
            "pages": LONG_PAGES,
            "headings": [long_heading(p) for p in (1, 2, 150, 299, 300)],
            "table_cells": [[f"Crates {p}", "Count", str(p * 3)] for p in (10, 150, 300)],
            "order": [long_heading(p) for p in (1, 50, 100, 200, 300)],
        },
        "scanned-en.pdf": {
            "kind": "scan",
            "lang": "en",
            "pages": 2,
            "page_text": [page1_text_en(), page2_text_en()],
            "headings": EN_HEADINGS,
            "table_cells": cells(EN_TABLE),
            "order": EN_ORDER,
            "two_column_order": TWO_COLUMN_ORDER,
        },
        "scanned-zh.pdf": {
            "kind": "scan",
            "lang": "zh",
            "pages": 1,
            "page_text": [page1_text_zh()],
            "headings": ZH_HEADINGS,
            "table_cells": cells(ZH_TABLE),
            "order": report_zh["order"],
        },
        "scan-en.tiff": {
            "kind": "image",
            "lang": "en",
            "pages": 1,
            "page_text": [page1_text_en()],
            "table_cells": cells(EN_TABLE),
        },
        "scan-en-skewed.jpg": {
            "kind": "image",
            "lang": "en",
            "pages": 1,
            "page_text": [page1_text_en()],
            "table_cells": cells(EN_TABLE),
        },
        "scanned-long.pdf": {
            "kind": "scan",
            "lang": "en",
            "pages": SCANNED_LONG,
            "page_text": [long_page_truth(p) for p in range(1, SCANNED_LONG + 1)],
            "headings": [long_heading(p) for p in range(1, SCANNED_LONG + 1)],
            "order": [long_heading(p) for p in range(1, SCANNED_LONG + 1)],
        },
        "scan-zh.png": {
            "kind": "image",
            "lang": "zh",
            "pages": 1,
            "page_text": [page1_text_zh()],
            "table_cells": cells(ZH_TABLE),
        },
    }
    sources = json.loads((REAL / "truth.json").read_text(encoding="utf-8")) if (REAL / "truth.json").exists() else {}
    for name, entry in sources.items():
        t[f"real/{name}"] = entry
    return t


# -------------------------------------------------------------------------------------------------- main


def build(out: Path) -> dict[str, dict[str, Any]]:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="parsing-set-"))
    try:
        write_report_en(out / "report-en.docx")
        write_report_zh(out / "report-zh.docx")
        write_report_html(out / "report-en.html")
        write_long(work / "long-300.docx")
        write_pptx(out / "slides.pptx")
        write_xlsx(out / "book.xlsx")
        for src in (out / "report-en.docx", out / "report-zh.docx", out / "slides.pptx"):
            soffice_to_pdf(src, out)
        soffice_to_pdf(work / "long-300.docx", out)
        make_scans(out, work)
        real = out / "real"
        real.mkdir(exist_ok=True)
        for pdf in sorted(REAL.glob("*.pdf")):
            shutil.copy(pdf, real / pdf.name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    t = truth()
    missing = [name for name in t if not (out / name).exists()]
    if missing:
        sys.exit(f"not built: {missing}")
    (out / "truth.json").write_text(json.dumps(t, ensure_ascii=False, indent=1), encoding="utf-8")
    return t


def make_fixtures(built: Path, dest: Path) -> None:
    """The small files of ``tests/fixtures/parsing`` (see its README.md), from a built set."""
    dest.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="parsing-fixtures-"))
    try:
        shutil.copy(built / "report-en.pdf", dest / "report.pdf")
        shutil.copy(built / "report-zh.pdf", dest / "report-zh.pdf")
        shutil.copy(built / "slides.pptx", dest / "slides.pptx")
        shutil.copy(built / "book.xlsx", dest / "book.xlsx")
        run(
            "pdftoppm",
            "-r",
            "150",
            "-gray",
            "-png",
            "-f",
            "1",
            "-l",
            "1",
            str(built / "report-en.pdf"),
            str(work / "en"),
        )
        image_pdf(sorted(work.glob("en-*.png")), dest / "scanned-en.pdf")
        run(
            "pdftoppm",
            "-r",
            "150",
            "-gray",
            "-png",
            "-f",
            "1",
            "-l",
            "1",
            "-singlefile",
            str(built / "report-zh.pdf"),
            str(dest / "scan-zh"),
        )
        (dest / "encrypted.pdf").unlink(missing_ok=True)
        run(
            "qpdf",
            "--encrypt",
            "ragindex-user",
            "ragindex-owner",
            "256",
            "--",
            str(built / "report-en.pdf"),
            str(dest / "encrypted.pdf"),
        )
        data = (built / "report-en.pdf").read_bytes()
        (dest / "truncated.pdf").write_bytes(data[: len(data) // 2])
        (dest / "zero-pages.pdf").unlink(missing_ok=True)
        run("qpdf", "--empty", str(dest / "zero-pages.pdf"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/ragindex-parsing-set"))
    parser.add_argument("--fixtures", type=Path, help="also write the test fixtures into this folder")
    args = parser.parse_args()
    t = build(args.out)
    if args.fixtures:
        make_fixtures(args.out, args.fixtures)
    print(json.dumps({"out": str(args.out), "files": len(t)}))


if __name__ == "__main__":
    main()
