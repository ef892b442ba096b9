"""OCR quality (issue 26): character error rate and speed on scans with a known transcript.

``run()`` returns one row per scan x engine: ``scan``, ``language``, ``ppi``, ``engine``, ``cer`` (Levenshtein
distance over the transcript's length, whitespace removed), ``pages_per_s``, ``paragraphs_whole`` (share of the
transcript's paragraphs that come out as one block, within 5% CER; None for engines without blocks), ``seconds`` and
``note``. An engine that cannot run gives a row with ``cer`` None and the reason in ``note``.

Engines:

* ``ragindex``: the real loaders (``ImageLoader`` / ``PdfLoader``) with the default OCR languages (``en,zh``):
  column order, low-resolution scans enlarged;
* ``tesseract-plain``: Tesseract as ragindex ran it before issue 26 (pdf pages rendered at 200 dpi, images as
  they are, Tesseract's own block order), one language (``eng`` or ``chi_sim``);
* on the Chinese scans, ragindex's pipeline with each Chinese model Debian ships: ``chi_sim``,
  ``chi_sim_vert`` (tesseract-ocr-chi-sim-vert), ``HanS`` (the script model, tesseract-ocr-script-hans);
  Debian has no ``tessdata_best`` package;
* ``rapidocr`` (rapidocr-onnxruntime 1.4.4, PP-OCRv4 models in its wheel) in its own venv (``bench/ocr_venv.sh``,
  ``OCR_BENCH_VENV``, default /work/venvs/ocr), on the page image as it is and enlarged as ragindex enlarges it.
  Skipped with a note when the venv cannot be made.

Timing: one page per scan, seconds of the load (or the engine call) after the engine is built; on a shared
2-core machine, so note the load average. ``python -m bench.run ocr-quality`` stores and renders the section;
``python -m bench.ocr_quality`` prints the table, ``python -m bench.ocr_quality sweep`` the CER with and without
enlarging at 60-96 ppi.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR, ROOT, mark_start, save_section
from bench.ocr_scans import Scan, scans

OCR_DIR = BENCH_DIR / "ocr"
VENV = Path(os.environ.get("OCR_BENCH_VENV", "/work/venvs/ocr"))
CHINESE_MODELS = ("chi_sim", "chi_sim_vert", "HanS")


def levenshtein(a: str, b: str) -> int:
    """Edit distance, one numpy row at a time (insertions as a running minimum)."""
    import numpy as np

    if not a or not b:
        return max(len(a), len(b))
    codes_b = np.array([ord(c) for c in b])
    steps = np.arange(len(b) + 1)
    previous = steps.copy()
    for i, char in enumerate(a, 1):
        current = np.empty_like(previous)
        current[0] = i
        current[1:] = np.minimum(previous[1:] + 1, previous[:-1] + (codes_b != ord(char)))
        current = np.minimum.accumulate(current - steps) + steps  # d[j] = min(d[j], d[j-1] + 1)
        previous = current
    return int(previous[-1])


def _bare(text: str) -> str:
    return re.sub(r"\s+", "", text)


def cer(truth: str, got: str) -> float:
    """Character error rate, whitespace removed."""
    t = _bare(truth)
    return levenshtein(t, _bare(got)) / len(t)


def paragraphs_whole(truth: list[str], blocks: list[str]) -> float:
    """Share of ``truth``'s paragraphs that one block holds alone (within 5% CER)."""
    found = 0
    for paragraph in truth:
        bare = _bare(paragraph)
        if any(levenshtein(bare, _bare(b)) <= 0.05 * len(bare) for b in blocks):
            found += 1
    return found / len(truth)


def _skipped(scan: Scan | None, engine: str, note: str) -> dict:
    """A row without figures (the engine could not run), with every key of a row."""
    return {
        "scan": scan.name if scan else None,
        "language": scan.language if scan else None,
        "ppi": scan.ppi if scan else None,
        "engine": engine,
        "cer": None,
        "pages_per_s": None,
        "seconds": None,
        "paragraphs_whole": None,
        "note": note,
    }


def _row(scan: Scan, engine: str, text: str, seconds: float, blocks: list[str] | None, note: str = "") -> dict:
    return {
        "scan": scan.name,
        "language": scan.language,
        "ppi": scan.ppi,
        "engine": engine,
        "cer": round(cer(scan.transcript, text), 4),
        "pages_per_s": round(1 / seconds, 3) if seconds > 0 else None,
        "seconds": round(seconds, 2),
        "paragraphs_whole": None if blocks is None else round(paragraphs_whole(scan.paragraphs, blocks), 3),
        "note": note,
    }


def _ragindex(scan: Scan, languages: tuple[str, ...], engine: str) -> dict:
    from ragindex.loaders.image import ImageLoader
    from ragindex.loaders.ocr import TesseractOcr
    from ragindex.loaders.pdf import PdfLoader

    loader_type = PdfLoader if scan.suffix == ".pdf" else ImageLoader
    loader = loader_type(ocr=lambda: TesseractOcr(languages))
    loader.engine()  # built before the clock starts (it lists the installed languages)
    started = time.perf_counter()
    (doc,) = loader.load(Path(scan.name), scan.data)
    seconds = time.perf_counter() - started
    blocks = [doc.text[b.start : b.end] for b in doc.blocks]
    return _row(scan, engine, doc.text, seconds, blocks, note="+".join(languages))


def _model(scan: Scan, model: str) -> dict:
    from ragindex.errors import ConfigurationError

    try:
        return _ragindex(scan, (model,), f"ragindex, tesseract {model}")
    except ConfigurationError as exc:  # a language pack not installed: scripts/system-packages.sh installs them
        return _skipped(scan, f"ragindex, tesseract {model}", f"skipped: {exc.message}")


def page_image(scan: Scan, dpi: float | None = None) -> Any:
    """The scan's page as an image: an image file as it is; a pdf page rendered at ``dpi`` (None: its scan's ppi)."""
    from PIL import Image

    if scan.suffix != ".pdf":
        return Image.open(io.BytesIO(scan.data)).convert("L")
    import pypdfium2

    pdf = pypdfium2.PdfDocument(scan.data)
    try:
        return pdf[0].render(scale=(dpi or scan.ppi) / 72, grayscale=True).to_pil()
    finally:
        pdf.close()


def _plain(scan: Scan) -> dict:
    """Tesseract before issue 26: the page at 200 dpi (pdf) or as it is (image), Tesseract's block order."""
    from ragindex.loaders.pdf_layout import join_words

    lang = "eng" if scan.language == "en" else "chi_sim"
    image = page_image(scan, 200)
    png = io.BytesIO()
    image.save(png, format="PNG")
    started = time.perf_counter()
    done = subprocess.run(
        ["tesseract", "-", "stdout", "-l", lang, "--psm", "3", "tsv"],
        input=png.getvalue(),
        capture_output=True,
        check=True,
        env={**os.environ, "OMP_THREAD_LIMIT": "1"},
    )
    seconds = time.perf_counter() - started
    paragraphs: dict[tuple[str, str], dict[str, list[str]]] = {}
    for line in done.stdout.decode().splitlines()[1:]:
        cells = line.split("\t")
        if len(cells) >= 12 and cells[0] == "5" and cells[11].strip() and float(cells[10]) >= 0:
            paragraphs.setdefault((cells[2], cells[3]), {}).setdefault(cells[4], []).append(cells[11].strip())
    blocks = ["\n".join(join_words(words) for words in lines.values()) for lines in paragraphs.values()]
    return _row(scan, "tesseract-plain", "\n\n".join(blocks), seconds, blocks, note=f"{lang}, as before issue 26")


def _rapidocr(targets: list[tuple[Scan, str, Any]]) -> list[dict]:
    """RapidOCR in its own venv on each (scan, engine name, image); rows, or one row with the reason it was skipped."""
    setup = subprocess.run(["bash", str(ROOT / "bench" / "ocr_venv.sh")], capture_output=True, text=True, check=False)
    if setup.returncode != 0:
        return [_skipped(None, "rapidocr", f"skipped: {setup.stderr.strip()[-300:]}")]
    OCR_DIR.mkdir(parents=True, exist_ok=True)
    paths = []
    for number, (_, _, image) in enumerate(targets):
        path = OCR_DIR / f"rapid-{number}.png"
        image.save(path)
        paths.append(str(path))
    done = subprocess.run(
        # -P: bench/ is not put on sys.path, where bench/collections.py would shadow the standard library
        [str(VENV / "bin" / "python"), "-P", str(ROOT / "bench" / "ocr_rapid.py"), *paths],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return [_skipped(None, "rapidocr", f"failed: {done.stderr.strip()[-300:]}")]
    answer = json.loads(done.stdout)
    return [
        _row(scan, name, page["text"], page["seconds"], None, note=f"model load {answer['load_s']:.1f} s not counted")
        for (scan, name, _), page in zip(targets, answer["pages"], strict=True)
    ]


def run(*, rapidocr: bool = True) -> list[dict]:
    """Every scan through every engine (see the module); rows as the module describes them."""
    from ragindex.loaders.ocr import upscale

    rows: list[dict] = []
    rapid_targets: list[tuple[Scan, str, Any]] = []
    for scan in scans():
        rows.append(_ragindex(scan, ("en", "zh"), "ragindex"))
        rows.append(_plain(scan))
        if scan.language == "zh":
            rows += [_model(scan, model) for model in CHINESE_MODELS]
            image = page_image(scan)
            rapid_targets.append((scan, "rapidocr", image))
            rapid_targets.append((scan, "rapidocr, enlarged", upscale(image, scan.ppi)[0]))
    if rapidocr and rapid_targets:
        rows += _rapidocr(rapid_targets)
    return rows


def bench_ocr_quality() -> dict[str, Any]:
    """The ``ocr-quality`` section of ``python -m bench.run``."""
    rows = run()
    result = {
        "rows": rows,
        "targets": {"cer_en_two_column": 0.03, "cer_zh_low_res": 0.05},
        "command": "python -m bench.run ocr-quality",
    }
    save_section("ocr-quality", result)
    return result


def table(rows: list[dict]) -> list[str]:
    """The rows as a markdown table."""
    lines = [
        "| scan | language | ppi | engine | CER | paragraphs whole | pages/s | note |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        if r["cer"] is None:
            lines.append(
                f"| {r['scan'] or ''} | {r['language'] or ''} | {r['ppi'] or ''} | {r['engine']} | | | | {r['note']} |"
            )
            continue
        whole = "–" if r["paragraphs_whole"] is None else f"{r['paragraphs_whole']:.2f}"
        speed = "–" if r["pages_per_s"] is None else f"{r['pages_per_s']:.2f}"
        lines.append(
            f"| {r['scan']} | {r['language']} | {r['ppi']} | {r['engine']} | {r['cer']:.4f} | {whole} | {speed} "
            f"| {r['note']} |"
        )
    return lines


def render(section: dict[str, Any]) -> list[str]:
    """The section of docs/benchmarks.md."""
    return [
        "Self-made scans with known transcripts (`bench/ocr_scans.py`); CER without whitespace. Targets (issue 26): "
        "CER <= 0.03 on the English two-column scan, <= 0.05 on the Chinese low-resolution scan.",
        "",
        *table(section["rows"]),
        "",
        f"Command: `{section['command']}`.",
    ]


def sweep() -> list[dict]:
    """CER with and without enlarging, the Chinese page (``chi_sim``) and the English one (``eng``) at low ppi."""
    from bench.ocr_scans import chinese_page, scanned, two_column_page
    from ragindex.loaders.ocr import TesseractOcr

    rows = []
    pages = [("zh", "zh", chinese_page(384), (60, 72, 96)), ("en", "en", two_column_page(384), (72, 96))]
    for language, code, (page, paragraphs), resolutions in pages:
        engine = TesseractOcr((code,))
        for ppi in resolutions:
            image = scanned(page, ppi, 384)
            row = {"language": language, "ppi": ppi}
            for name, told in (("as_is", 300), ("enlarged", ppi)):  # told 300 ppi: read without enlarging
                text = "\n".join(p.text for p in engine.recognize(image, ppi=told))
                row[f"cer_{name}"] = round(cer("\n".join(paragraphs), text), 4)
            rows.append(row)
    return rows


if __name__ == "__main__":
    mark_start()
    if "sweep" in sys.argv:
        for row in sweep():
            print(row)
    else:
        print("\n".join(table(run(rapidocr="--no-rapidocr" not in sys.argv))))
    print(f"load average {os.getloadavg()}")
