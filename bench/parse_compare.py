"""Compare PDF, office and OCR parsers on the set that ``bench/parsing_set.py`` builds (issue 12).

``python bench/parse_compare.py [--set /tmp/ragindex-parsing-set] [--only NAME,...] [--out results.json]``
(``--pipeline`` adds parse + ragindex's default chunker on ``long-300.pdf``); ``python bench/parse_compare.py
--table results.json`` prints the results as markdown tables.

Every (candidate, file) pair runs in a fresh child process (``--child``); the parent reads the child's
peak RSS from ``os.wait4`` and the child reports its import and parse times and the text it produced
(markdown-ish: ``#`` headings, ``|`` table rows, one text line per line). The parent scores that text
against ``truth.json``:

* ``headings``: share of the expected headings found as a heading line (``#``) of the output;
* ``cells_row``: share of table cells whose row label and value are on one output line;
* ``cells_col``: share of those whose value also sits under its column label (same cell index in the
  nearest header line above; cells are split on ``|``, tabs, or runs of two or more spaces);
* ``order``: share of consecutive reading-order snippets found in the right order (a missing one counts
  as out of order); ``two_col`` is the same for the two-column section only;
* ``ocr_cer``: character error rate (Levenshtein / length of truth, whitespace removed) for scans;
  ``ocr_bag``: share of the truth's characters (as a multiset) found in the output, order ignored.

Run it with a Python where the candidates are installed (see docs/parsing.md); nothing is downloaded:
``HF_HUB_OFFLINE=1`` is set for every child, and a candidate that needs weights it cannot find fails
and is reported as such.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

PDF_CANDIDATES = [
    "pypdf",
    "pypdf-layout",
    "pypdfium2",
    "pypdfium2-struct",
    "pdfplumber",
    "pdfplumber-struct",
    "docling-parse",
    "pymupdf4llm",
    "pymupdf4llm-nolayout",
    "docling-pdf",
]
OCR_CANDIDATES = ["tesseract", "tesseract-x2", "tesseract-eng+chi", "rapidocr-onnxruntime", "rapidocr3"]
ROOT = Path(__file__).resolve().parents[1]
INIT: dict[str, float] = {}  # seconds an OCR engine took to load its models (inside parse_s)
OFFICE_CANDIDATES = ["docling-simple", "baseline-office"]


# ================================================================================================ children
def heading_lines(lines: list[tuple[float, str]]) -> list[str]:
    """Markdown from (font size, text) lines: lines clearly larger than the body size become ``#`` headings."""
    sizes: Counter[float] = Counter()
    for size, text in lines:
        sizes[round(size, 1)] += len(text)
    if not sizes:
        return []
    body = sizes.most_common(1)[0][0]
    bigger = sorted({round(s, 1) for s, t in lines if s >= body * 1.15}, reverse=True)
    out = []
    for size, text in lines:
        s = round(size, 1)
        if s in bigger and len(text) <= 120 and not text.startswith("|") and re.search(r"[^\W\d_]", text):
            out.append("#" * min(bigger.index(s) + 1, 6) + " " + text.strip())
        else:
            out.append(text)
    return out


def table_md(rows: list[list[Any]]) -> list[str]:
    return ["| " + " | ".join("" if c is None else str(c).replace("\n", " ") for c in row) + " |" for row in rows]


def run_pypdf(path: Path, layout: bool = False) -> tuple[str, int]:
    from pypdf import PdfReader

    reader = PdfReader(path)
    mode = "layout" if layout else "plain"
    texts = [page.extract_text(extraction_mode=mode) for page in reader.pages]
    return "\n\n".join(texts), len(reader.pages)


def run_pypdfium2(path: Path, struct: bool = False) -> tuple[str, int]:
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    pdf = pdfium.PdfDocument(path)
    pages = len(pdf)
    out: list[str] = []
    lines: list[tuple[float, str]] = []
    for i in range(pages):
        page = pdf[i]
        tp = page.get_textpage()
        if not struct:
            out.append(tp.get_text_bounded())
        else:
            n = tp.count_chars()
            buf: list[str] = []
            size = 0.0
            box = raw.FS_RECTF()
            for k in range(n):
                ch = chr(raw.FPDFText_GetUnicode(tp.raw, k))
                if ch in "\r\n":
                    if buf:
                        lines.append((size, "".join(buf)))
                    buf, size = [], 0.0
                    continue
                buf.append(ch)
                # the glyph's loose box (font ascent to descent, text matrix applied), not FPDFText_GetFontSize:
                # that is the nominal size, 1.0 for every char of a pdf that scales text by its matrix (Quartz)
                if raw.FPDFText_GetLooseCharBox(tp.raw, k, box):
                    size = max(size, round(abs(box.top - box.bottom), 1))
            if buf:
                lines.append((size, "".join(buf)))
            lines.append((0.0, ""))
        tp.close()
        page.close()
    pdf.close()
    if struct:
        return "\n".join(heading_lines(lines)), pages
    return "\n\n".join(out), pages


def run_pdfplumber(path: Path, struct: bool = False) -> tuple[str, int]:
    import pdfplumber

    with pdfplumber.open(path) as pdf:
        pages = len(pdf.pages)
        if not struct:
            texts = []
            for page in pdf.pages:
                texts.append(page.extract_text() or "")
                page.close()  # frees the page's cached objects: without it RSS grows with the page count
            return "\n\n".join(texts), pages
        items: list[tuple[float, str]] = []
        for page in pdf.pages:
            tables = page.find_tables()
            boxes = [t.bbox for t in tables]

            def outside(obj: dict[str, Any], boxes: list[Any] = boxes) -> bool:
                if obj.get("object_type") != "char":
                    return True
                cx, cy = (obj["x0"] + obj["x1"]) / 2, (obj["top"] + obj["bottom"]) / 2
                return not any(b[0] <= cx <= b[2] and b[1] <= cy <= b[3] for b in boxes)

            placed: list[tuple[float, list[tuple[float, str]]]] = []
            placed.extend(
                (line["top"], [(max(c["size"] for c in line["chars"]), line["text"])])
                for line in page.filter(outside).extract_text_lines(return_chars=True)
            )
            placed.extend((t.bbox[1], [(-1.0, row) for row in table_md(t.extract())]) for t in tables)
            for _, group in sorted(placed, key=lambda p: p[0]):
                items.extend(group)
            items.append((0.0, ""))
            page.close()
        body = [(s, t) for s, t in items if s > 0]
        marked = iter(heading_lines(body))
        out = [next(marked) if s > 0 else t for s, t in items]
        return "\n".join(out), pages


def run_docling_parse(path: Path) -> tuple[str, int]:
    from docling_core.types.doc.page import TextCellUnit
    from docling_parse.pdf_parser import DoclingPdfParser

    doc = DoclingPdfParser(loglevel="fatal").load(path)
    pages = doc.number_of_pages()
    lines: list[tuple[float, str]] = []
    for number in range(1, pages + 1):
        page = doc.get_page(number)
        lines.extend(
            (round(cell.rect.to_bounding_box().height, 0), cell.text)
            for cell in page.iterate_cells(unit_type=TextCellUnit.LINE)
        )
        lines.append((0.0, ""))
        doc.unload_pages((number, number + 1))  # else every decoded page stays cached (2 GB for 300 pages)
    return "\n".join(heading_lines(lines)), pages


def run_pymupdf4llm(path: Path, layout: bool = True) -> tuple[str, int]:
    import pymupdf
    import pymupdf4llm

    pymupdf4llm.use_layout(layout)
    pages = len(pymupdf.open(path))
    return pymupdf4llm.to_markdown(str(path)), pages


def run_docling(path: Path) -> tuple[str, int]:
    from docling.document_converter import DocumentConverter

    result = DocumentConverter().convert(str(path))
    doc = result.document
    pages = len(doc.pages) or 1
    return doc.export_to_markdown(), pages


def run_baseline_office(path: Path) -> tuple[str, int]:
    suffix = path.suffix.lower()
    if suffix in (".docx", ".html"):
        from ragindex.loaders.registry import LoaderRegistry  # the loaders ragindex ships today

        docs = LoaderRegistry().for_path(path).load(path, path.read_bytes())
        return "\n\n".join(d.text for d in docs), 1
    if suffix == ".pptx":
        from pptx import Presentation

        prs = Presentation(str(path))
        out = []
        for slide in prs.slides:
            title = slide.shapes.title.text if slide.shapes.title is not None else ""
            out.append(f"# {title}")
            for shape in slide.shapes:
                if shape.has_text_frame and shape != slide.shapes.title:
                    out.extend(p.text for p in shape.text_frame.paragraphs if p.text)
                if shape.has_table:
                    out.extend(table_md([[c.text for c in row.cells] for row in shape.table.rows]))
            if slide.has_notes_slide:
                out.append("Notes: " + slide.notes_slide.notes_text_frame.text)
        return "\n".join(out), len(prs.slides)
    if suffix == ".xlsx":
        from openpyxl import load_workbook

        wb = load_workbook(path, read_only=True, data_only=True)
        out = []
        for ws in wb.worksheets:
            out.append(f"# {ws.title}")
            out.extend(table_md([list(r) for r in ws.iter_rows(values_only=True)]))
        return "\n".join(out), len(wb.worksheets)
    raise ValueError(suffix)


# ----------------------------------------------------------------------------------------------- OCR
def page_images(path: Path, dpi: int = 200) -> list[Any]:
    from PIL import Image

    if path.suffix.lower() != ".pdf":
        return [Image.open(path).convert("L")]
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(path)
    images = [pdf[i].render(scale=dpi / 72, grayscale=True).to_pil() for i in range(len(pdf))]
    pdf.close()
    return images


def boxes_to_lines(boxes: list[tuple[list[list[float]], str]]) -> str:
    """OCR boxes (4 corner points, text) to lines: boxes whose vertical centres are close join, left to right."""
    items = []
    for pts, text in boxes:
        ys = [p[1] for p in pts]
        xs = [p[0] for p in pts]
        items.append(((min(ys) + max(ys)) / 2, max(ys) - min(ys), min(xs), text))
    items.sort()
    lines: list[list[tuple[float, float, float, str]]] = []
    for item in items:
        if lines and abs(item[0] - lines[-1][0][0]) < 0.5 * max(item[1], lines[-1][0][1]):
            lines[-1].append(item)
        else:
            lines.append([item])
    return "\n".join("   ".join(t for *_, t in sorted(line, key=lambda i: i[2])) for line in lines)


def run_ocr(path: Path, engine: str, lang: str) -> tuple[str, int]:
    images = page_images(path)
    texts = []
    if engine.startswith("tesseract"):
        from concurrent.futures import ThreadPoolExecutor

        tess_lang = "eng+chi_sim" if engine == "tesseract-eng+chi" else ("chi_sim" if lang == "zh" else "eng")
        # tesseract-x2: two single-threaded tesseract processes at once instead of one using OpenMP threads
        env = {**os.environ, "OMP_THREAD_LIMIT": "1"} if engine == "tesseract-x2" else None
        with tempfile.TemporaryDirectory() as tmp:

            def ocr_page(i: int) -> str:
                png = Path(tmp) / f"p{i}.png"
                images[i].save(png)
                done = subprocess.run(
                    ["tesseract", str(png), "stdout", "-l", tess_lang],
                    capture_output=True,
                    text=True,
                    check=True,
                    env=env,
                )
                return done.stdout

            with ThreadPoolExecutor(2 if engine == "tesseract-x2" else 1) as pool:
                texts = list(pool.map(ocr_page, range(len(images))))
    elif engine == "rapidocr-onnxruntime":
        import numpy as np
        from rapidocr_onnxruntime import RapidOCR

        t0 = time.perf_counter()
        ocr = RapidOCR()
        INIT["init_s"] = time.perf_counter() - t0
        for image in images:
            result, _ = ocr(np.array(image.convert("RGB")))
            texts.append(boxes_to_lines([(r[0], r[1]) for r in result or []]))
    elif engine == "rapidocr3":
        import numpy as np
        from rapidocr import RapidOCR

        t0 = time.perf_counter()
        ocr = RapidOCR()
        INIT["init_s"] = time.perf_counter() - t0
        for image in images:
            out = ocr(np.array(image.convert("RGB")))
            boxes = [] if out.boxes is None else [(b.tolist(), t) for b, t in zip(out.boxes, out.txts, strict=True)]
            texts.append(boxes_to_lines(boxes))
    return "\n\n".join(texts), len(images)


IMPORTS = {
    "pypdf": ["pypdf"],
    "pypdf-layout": ["pypdf"],
    "pypdfium2": ["pypdfium2"],
    "pypdfium2-struct": ["pypdfium2"],
    "pdfplumber": ["pdfplumber"],
    "pdfplumber-struct": ["pdfplumber"],
    "docling-parse": ["docling_parse.pdf_parser", "docling_core.types.doc.page"],
    "pymupdf4llm": ["pymupdf", "pymupdf4llm"],
    "pymupdf4llm-nolayout": ["pymupdf", "pymupdf4llm"],
    "docling-pdf": ["docling.document_converter"],
    "docling-simple": ["docling.document_converter"],
    "baseline-office": ["ragindex.loaders.registry", "pptx", "openpyxl"],
    "tesseract": ["pypdfium2", "PIL.Image"],
    "tesseract-x2": ["pypdfium2", "PIL.Image"],
    "tesseract-eng+chi": ["pypdfium2", "PIL.Image"],
    "rapidocr-onnxruntime": ["pypdfium2", "rapidocr_onnxruntime"],
    "rapidocr3": ["pypdfium2", "rapidocr"],
}


def child(candidate: str, path: Path, lang: str, out: Path) -> None:
    import importlib

    sys.path.append(str(ROOT / "src"))  # ragindex itself, where the running Python does not have it installed
    started = time.perf_counter()
    for module in IMPORTS.get(candidate, []):
        with contextlib.suppress(Exception):  # a failing import is reported by the run itself
            importlib.import_module(module)
    imported = time.perf_counter()
    import_s = imported - started
    started = imported
    runners = {
        "pypdf": lambda: run_pypdf(path),
        "pypdf-layout": lambda: run_pypdf(path, layout=True),
        "pypdfium2": lambda: run_pypdfium2(path),
        "pypdfium2-struct": lambda: run_pypdfium2(path, struct=True),
        "pdfplumber": lambda: run_pdfplumber(path),
        "pdfplumber-struct": lambda: run_pdfplumber(path, struct=True),
        "docling-parse": lambda: run_docling_parse(path),
        "pymupdf4llm": lambda: run_pymupdf4llm(path),
        "pymupdf4llm-nolayout": lambda: run_pymupdf4llm(path, layout=False),
        "docling-pdf": lambda: run_docling(path),
        "docling-simple": lambda: run_docling(path),
        "baseline-office": lambda: run_baseline_office(path),
    }
    result: dict[str, Any] = {}
    try:
        if candidate in runners:
            text, pages = runners[candidate]()
        else:
            text, pages = run_ocr(path, candidate, lang)
        result = {"ok": True, "text": text, "pages": pages}
    except BaseException as exc:  # report any failure, including SystemExit from a library
        result = {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:600]}"}
    result["seconds"] = time.perf_counter() - started
    result["import_s"] = import_s
    result.update(INIT)
    out.write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")


def chunk_child(candidate: str, path: Path, out: Path) -> None:
    """Parse with ``candidate`` and chunk with ragindex's default chunker: the pipeline up to chunks."""
    sys.path.append(str(ROOT / "src"))
    from ragindex.chunking.factory import chunker_from_settings
    from ragindex.config.settings import Settings
    from ragindex.types import Document

    started = time.perf_counter()
    text, pages = {
        "pypdf": lambda: run_pypdf(path),
        "pypdfium2-struct": lambda: run_pypdfium2(path, True),
        "pdfplumber-struct": lambda: run_pdfplumber(path, True),
    }[candidate]()
    settings = Settings()
    chunker = chunker_from_settings(settings.chunking, tokenizer_model=settings.dense_model)
    chunks = chunker.chunk(Document(source_uri=str(path), text=text, parser=candidate))
    out.write_text(
        json.dumps({"ok": True, "pages": pages, "chunks": len(chunks), "seconds": time.perf_counter() - started}),
        encoding="utf-8",
    )


# ================================================================================================ scoring
def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\u00ad", "")).strip().lower()


def split_cells(line: str) -> list[str]:
    line = line.strip()
    if "|" in line:
        parts = line.strip("|").split("|")
    elif "\t" in line:
        parts = line.split("\t")
    else:
        parts = re.split(r"\s{2,}", line)
        if len(parts) == 1:
            parts = line.split()
    return [p.strip().strip("*_").strip() for p in parts]


def score_headings(text: str, headings: list[str]) -> float | None:
    if not headings:
        return None
    marked = [
        norm(re.sub(r"[*_]", "", line.lstrip("#"))) for line in text.splitlines() if line.lstrip().startswith("#")
    ]
    found = sum(any(norm(h) in m for m in marked) for h in headings)
    return found / len(headings)


def score_cells(text: str, cells: list[list[str]]) -> tuple[float | None, float | None]:
    if not cells:
        return None, None
    lines = text.splitlines()
    row_labels = {c[0] for c in cells}
    row_ok = col_ok = 0
    for row_label, col_label, value in cells:
        others = row_labels - {row_label}
        hits = [
            i
            for i, line in enumerate(lines)
            if row_label in line and value in line and not any(o in line for o in others)
        ]
        if not hits:
            continue
        row_ok += 1
        for i in hits:
            row = split_cells(lines[i])
            vidx = next((k for k, c in enumerate(row) if c == value), None)
            ridx = next((k for k, c in enumerate(row) if row_label in c), None)
            if vidx is None or ridx is None:
                continue
            for j in range(i - 1, max(-1, i - 40), -1):
                header = split_cells(lines[j])
                cidx = next((k for k, c in enumerate(header) if c == col_label), None)
                if cidx is not None:
                    # the header may leave the corner cell out: then it has one cell fewer than the row
                    if cidx == vidx or (len(header) == len(row) - 1 and cidx == vidx - 1):
                        col_ok += 1
                    break
            else:
                continue
            break
    return row_ok / len(cells), col_ok / len(cells)


def score_order(text: str, snippets: list[str]) -> float | None:
    if len(snippets) < 2:
        return None
    flat = norm(text.replace("#", " ").replace("|", " ").replace("*", ""))
    flat = re.sub(r"-\s+(?=[a-z])", "", flat)
    pos = [flat.find(norm(s)) for s in snippets]
    good = sum(1 for a, b in zip(pos, pos[1:], strict=False) if a >= 0 and b > a)
    return good / (len(snippets) - 1)


def levenshtein(a: str, b: str) -> int:
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def score_ocr(text: str, page_text: list[str]) -> tuple[float, float]:
    truth = re.sub(r"\s+", "", "".join(page_text))
    got = re.sub(r"\s+", "", text)
    cer = levenshtein(truth, got) / len(truth)
    want, have = Counter(truth), Counter(got)
    bag = sum(min(n, have[c]) for c, n in want.items()) / len(truth)
    return cer, bag


def score(text: str, truth: dict[str, Any]) -> dict[str, Any]:
    s: dict[str, Any] = {}
    s["headings"] = score_headings(text, truth.get("headings", []))
    s["cells_row"], s["cells_col"] = score_cells(text, truth.get("table_cells", []))
    if truth.get("borderless_cells"):
        s["borderless_row"], s["borderless_col"] = score_cells(text, truth["borderless_cells"])
    s["order"] = score_order(text, truth.get("order", []))
    if truth.get("two_column_order"):
        s["two_col"] = score_order(text, truth["two_column_order"])
    if truth.get("notes"):
        s["notes"] = sum(norm(n) in norm(text) for n in truth["notes"]) / len(truth["notes"])
    if truth.get("page_text"):
        s["ocr_cer"], s["ocr_bag"] = score_ocr(text, truth["page_text"])
    return s


# ================================================================================================ parent
def run_child(args: list[str], timeout: float) -> tuple[dict[str, Any], float, float]:
    """Run a child; return its JSON result, its peak RSS in MiB (wait4) and its wall seconds."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = Path(f.name)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    err = tempfile.TemporaryFile()  # noqa: SIM115 -- a file, not a pipe: a chatty child must never block on a full pipe
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, *args, str(out)], env=env, stdout=subprocess.DEVNULL, stderr=err)
    deadline = started + timeout
    status = rusage = None
    while True:
        pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            _, status, rusage = os.wait4(proc.pid, 0)
            out.unlink(missing_ok=True)
            return {"ok": False, "error": f"timed out after {timeout:.0f} s"}, rusage.ru_maxrss / 1024, timeout
        time.sleep(0.02)
    wall = time.perf_counter() - started
    err.seek(0)
    stderr = err.read().decode(errors="replace")
    err.close()
    try:
        result = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        result = {"ok": False, "error": f"child died (status {status}): {stderr[-600:]}"}
    out.unlink(missing_ok=True)
    return result, rusage.ru_maxrss / 1024, wall


def plan(truth: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    pairs = []
    for name, entry in truth.items():
        kind = entry["kind"]
        if kind == "text-pdf":
            pairs += [(c, name) for c in PDF_CANDIDATES]
        elif kind in ("scan", "image"):
            pairs += [(c, name) for c in OCR_CANDIDATES]
            if kind == "scan":
                pairs += [(c, name) for c in ("pypdfium2", "docling-pdf")]
        elif kind in ("docx", "pptx", "xlsx", "html"):
            pairs += [(c, name) for c in OFFICE_CANDIDATES]
    return pairs


def fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def table(results: list[dict[str, Any]]) -> str:
    """The results as one markdown table per kind of file (what docs/parsing.md quotes)."""
    columns = [
        "candidate",
        "file",
        "pages_per_s",
        "parse_s",
        "import_s",
        "rss_mib",
        "headings",
        "cells_row",
        "cells_col",
        "borderless_row",
        "borderless_col",
        "order",
        "two_col",
        "notes",
        "ocr_cer",
        "ocr_bag",
    ]
    out = []
    for kind in ("text-pdf", "pipeline", "scan", "image", "docx", "html", "pptx", "xlsx"):
        rows = [r for r in results if r["kind"] == kind]
        if not rows:
            continue
        used = [c for c in columns if any(c in r for r in rows)]
        out += [f"\n### {kind}\n", "| " + " | ".join(used) + " | error |", "|" + " --- |" * (len(used) + 1)]
        for r in rows:
            err = (r.get("error") or "")[:90].replace("|", "/")
            out.append("| " + " | ".join(fmt(r.get(c)) for c in used) + f" | {err} |")
    return "\n".join(out)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--table":
        print(table(json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, candidate, path, lang, out = sys.argv
        child(candidate, Path(path), lang, Path(out))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--chunk-child":
        _, _, candidate, path, out = sys.argv
        chunk_child(candidate, Path(path), Path(out))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", type=Path, default=Path("/tmp/ragindex-parsing-set"))
    parser.add_argument("--only", default="", help="comma-separated candidates")
    parser.add_argument("--files", default="", help="comma-separated file names")
    parser.add_argument("--out", type=Path, default=Path("/tmp/ragindex-parsing-results.json"))
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--pipeline", action="store_true", help="also time parse + chunk on long-300.pdf")
    args = parser.parse_args()
    truth = json.loads((args.set / "truth.json").read_text(encoding="utf-8"))
    only = set(filter(None, args.only.split(",")))
    files = set(filter(None, args.files.split(",")))
    results = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else []
    results = [r for r in results if not ((not only or r["candidate"] in only) and (not files or r["file"] in files))]
    for candidate, name in plan(truth):
        if (only and candidate not in only) or (files and name not in files):
            continue
        entry = truth[name]
        res, rss, wall = run_child(["--child", candidate, str(args.set / name), entry["lang"]], args.timeout)
        row: dict[str, Any] = {
            "candidate": candidate,
            "file": name,
            "kind": entry["kind"],
            "rss_mib": round(rss, 1),
            "wall_s": round(wall, 3),
        }
        if res.get("ok"):
            pages = res["pages"] or entry["pages"]
            if "init_s" in res:
                row["init_s"] = round(res["init_s"], 3)
            row.update(
                pages=pages,
                import_s=round(res["import_s"], 3),
                parse_s=round(res["seconds"], 3),
                pages_per_s=round(pages / res["seconds"], 2) if res["seconds"] else None,
                chars=len(res["text"]),
                **score(res["text"], entry),
            )
            (args.out.parent / "parse-outputs").mkdir(exist_ok=True)
            (args.out.parent / "parse-outputs" / f"{candidate}__{name.replace('/', '_')}.txt").write_text(
                res["text"], encoding="utf-8"
            )
        else:
            row["error"] = res.get("error")
        results.append(row)
        print(json.dumps(row, ensure_ascii=False), flush=True)
        args.out.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
    if args.pipeline:
        for candidate in ("pypdf", "pypdfium2-struct", "pdfplumber-struct"):
            if only and candidate not in only:
                continue
            res, rss, wall = run_child(["--chunk-child", candidate, str(args.set / "long-300.pdf")], args.timeout)
            row = {
                "candidate": candidate,
                "file": "long-300.pdf (parse+chunk)",
                "kind": "pipeline",
                "rss_mib": round(rss, 1),
                "wall_s": round(wall, 3),
                **res,
            }
            if res.get("ok"):
                row["pages_per_s"] = round(res["pages"] / res["seconds"], 2)
            results.append(row)
            print(json.dumps(row), flush=True)
            args.out.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
