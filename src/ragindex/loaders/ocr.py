"""OCR of page images with Tesseract (Debian ``tesseract-ocr``), driven through its command line.

Tesseract was chosen on the parsing test set (docs/parsing.md): on this 2-core machine it reads an English or a
Chinese page at 200 dpi in about a second on one thread, keeps the spaces of English text, and needs no model
download (the language packs are Debian packages). It runs with ``OMP_THREAD_LIMIT=1``: its OpenMP threads only
contend with each other and with the ingest (7.7 s for a page with the default threads on a busy 2-core machine,
0.8 s with one).

The TSV output gives every word with its box, confidence and block / paragraph / line numbers; words become
lines and lines paragraphs as Tesseract grouped them, and Chinese text loses the spaces Tesseract puts between
its characters.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragindex.errors import ConfigurationError, DocumentLoadError
from ragindex.loaders.ocr_layout import Word, order_by_columns
from ragindex.loaders.pdf_layout import join_words
from ragindex.types import BBox

if TYPE_CHECKING:
    from PIL.Image import Image

LANGUAGE_PACKS: dict[str, tuple[str, str]] = {
    "en": ("eng", "tesseract-ocr-eng"),
    "zh": ("chi_sim", "tesseract-ocr-chi-sim"),
    "zh-tw": ("chi_tra", "tesseract-ocr-chi-tra"),
    "ja": ("jpn", "tesseract-ocr-jpn"),
    "ko": ("kor", "tesseract-ocr-kor"),
    "de": ("deu", "tesseract-ocr-deu"),
    "fr": ("fra", "tesseract-ocr-fra"),
    "es": ("spa", "tesseract-ocr-spa"),
}
"""Language codes of ``RAGINDEX_OCR_LANGUAGES`` -> (Tesseract's name, the Debian package that ships it).
Any other value is passed to Tesseract as it is (e.g. ``por``)."""

OCR_DPI = 200
"""Resolution pages are rendered at for OCR: body text of 9-12 pt is then 25-33 px high, where Tesseract reads
well; 300 dpi costs twice the time for no gain on the test set."""

UPSCALE_BELOW_PPI = 200
"""Scans under this resolution are enlarged before OCR (issue 26): at 96 ppi 10 pt text is 13 px high, and Tesseract
misread 3% of a Chinese page's characters (30% at 72 ppi) that it reads after enlarging (docs/parsing.md)."""
UPSCALE_TO_PPI = 200
"""The resolution a low-resolution scan is enlarged to (Lanczos), at most :data:`_MAX_UPSCALE` times: the pdf pages'
OCR resolution. 300 ppi read the self-made Chinese scans no better (72 ppi: CER 0.048 against 0.032), cost 2.25x the
pixels, and lost a ruled table on the 150 ppi fixture scan that 200 ppi reads."""
_MAX_UPSCALE = 4.0
_PPI_SLACK = 5.0
"""A scan this close under :data:`UPSCALE_BELOW_PPI` is left alone (a 200 ppi scan placed in a pdf or a png's pixels
per metre read back as 199.x)."""
_MAX_UPSCALED_PIXELS = 60_000_000
_BODY_LINE_POINTS = 10.0
"""The height of a line of body text (10-11 pt type; its rows with ink) for :func:`glyph_ppi`: a line under 28 px
high is enlarged."""

_TIMEOUT_SECONDS = 120
RETRY_CONFIDENCE = 0.8
"""Below this confidence the first language's reading of a page is retried with all the languages."""


@dataclass(frozen=True, slots=True)
class OcrParagraph:
    """A paragraph Tesseract found: its lines, its box in image pixels and its mean word confidence (0..1)."""

    text: str
    box: BBox
    confidence: float


class TesseractOcr:
    """Reads images with the ``tesseract`` command.

    Args:
        languages: Language codes (``en``, ``zh``, ... see :data:`LANGUAGE_PACKS`, or Tesseract's own names).
        command: The Tesseract executable.

    Raises:
        ConfigurationError: Tesseract is not installed, or a language pack is missing (the message names the
            Debian package to install).
    """

    name = "tesseract"

    def __init__(self, languages: Sequence[str] = ("en", "zh"), command: str = "tesseract") -> None:
        found = shutil.which(command)
        if found is None:
            raise ConfigurationError(
                f"OCR needs Tesseract, and {command!r} is not on PATH: install the Debian package tesseract-ocr "
                "(apt-get install tesseract-ocr tesseract-ocr-chi-sim), or set RAGINDEX_OCR=off",
                field="ocr",
            )
        self.command = found
        self.languages = tuple(languages)
        wanted = [LANGUAGE_PACKS.get(code, (code, f"tesseract-ocr-{code}")) for code in self.languages]
        installed = _installed_languages(found)
        missing = [package for name, package in wanted if name not in installed]
        if missing:
            raise ConfigurationError(
                f"OCR language pack(s) not installed: {', '.join(missing)}; install them "
                f"(apt-get install {' '.join(missing)}) or change RAGINDEX_OCR_LANGUAGES "
                f"(installed: {', '.join(sorted(installed)) or 'none'})",
                field="ocr_languages",
            )
        self._lang = "+".join(name for name, _ in wanted)
        self._first = wanted[0][0]

    def recognize(self, image: Image, ppi: float | None = None) -> list[OcrParagraph]:
        """The paragraphs of text on ``image``, in reading order, with boxes in ``image``'s pixels.

        ``ppi`` is the scan's resolution (from the pdf or the image file); None: estimated from the height of its
        lines of text (:func:`glyph_ppi`). A scan under :data:`UPSCALE_BELOW_PPI` is enlarged first.

        The first configured language reads the page alone; only when that reading is unsure (a confidence
        under :data:`RETRY_CONFIDENCE`, as English gives on a Chinese page: 0.35 against 0.95 on English pages of
        the test set) are all the languages run together, and the surer reading is kept. Running ``eng+chi_sim``
        on every page cost 2.3x the time of ``eng`` on dense English pages (docs/parsing.md).

        Raises:
            DocumentLoadError: Tesseract failed or timed out on the image.
        """
        enlarged, factor = upscale(image, ppi if ppi is not None else glyph_ppi(image))
        png = io.BytesIO()
        enlarged.save(png, format="PNG")
        data = png.getvalue()
        first = self._run(data, self._first)
        if self._first != self._lang and confidence(first) < RETRY_CONFIDENCE:
            combined = self._run(data, self._lang)
            first = combined if confidence(combined) > confidence(first) else first
        return first if factor == 1 else [_scaled(p, 1 / factor) for p in first]

    def _run(self, png: bytes, lang: str) -> list[OcrParagraph]:
        env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
        try:
            done = subprocess.run(
                [self.command, "-", "stdout", "-l", lang, "--psm", "3", "tsv"],
                input=png,
                capture_output=True,
                timeout=_TIMEOUT_SECONDS,
                env=env,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise DocumentLoadError(f"OCR took longer than {_TIMEOUT_SECONDS} s on one page") from exc
        if done.returncode != 0:
            detail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
            raise DocumentLoadError(f"OCR failed (tesseract exit {done.returncode}: {detail[0]})")
        return parse_tsv(done.stdout.decode("utf-8", "replace"))


def upscale(image: Image, ppi: float | None) -> tuple[Image, float]:
    """``image`` enlarged when it is a low-resolution scan, and the factor.

    Enlarged to :data:`UPSCALE_TO_PPI` when ``ppi`` is under :data:`UPSCALE_BELOW_PPI`; factor 1: unchanged (also
    when ``ppi`` is unknown).
    """
    if ppi is None or ppi <= 0 or ppi >= UPSCALE_BELOW_PPI - _PPI_SLACK:
        return image, 1.0
    factor = min(UPSCALE_TO_PPI / ppi, _MAX_UPSCALE, (_MAX_UPSCALED_PIXELS / max(image.width * image.height, 1)) ** 0.5)
    if factor <= 1.05:
        return image, 1.0
    from PIL import Image as PILImage

    size = (round(image.width * factor), round(image.height * factor))
    return image.resize(size, PILImage.Resampling.LANCZOS), factor


def glyph_ppi(image: Image) -> float | None:
    """The resolution of a scan guessed from its lines of text.

    Their median height (rows with ink, a horizontal projection) is taken as :data:`_BODY_LINE_POINTS`; None
    without at least three lines.
    """
    import numpy as np

    gray = np.asarray(image.convert("L"))
    if gray.size == 0:
        return None
    rows = (gray < 128).sum(axis=1) > max(2, gray.shape[1] // 500)
    edges = np.flatnonzero(np.diff(np.concatenate(([0], rows.astype(np.int8), [0]))))
    heights = [int(h) for h in edges[1::2] - edges[0::2] if h >= 4]
    if len(heights) < 3:
        return None
    return float(np.median(heights)) / (_BODY_LINE_POINTS / 72)


def _scaled(paragraph: OcrParagraph, by: float) -> OcrParagraph:
    box = paragraph.box
    scaled = BBox(box.x0 * by, box.top * by, box.x1 * by, box.bottom * by)
    return OcrParagraph(text=paragraph.text, box=scaled, confidence=paragraph.confidence)


def confidence(paragraphs: Sequence[OcrParagraph]) -> float:
    """The mean confidence of ``paragraphs``, weighted by their length (0 for none)."""
    chars = sum(len(p.text) for p in paragraphs)
    return sum(p.confidence * len(p.text) for p in paragraphs) / chars if chars else 0.0


def parse_tsv(tsv: str) -> list[OcrParagraph]:
    """Tesseract's TSV output -> paragraphs in reading order (words with confidence < 0 are layout rows, skipped).

    A page with columns is read column by column (:mod:`ragindex.loaders.ocr_layout`); any other page keeps
    Tesseract's blocks, paragraphs and lines as it found them.
    """
    lines: dict[tuple[int, int, int], list[Word]] = {}
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5":
            continue
        text = cells[11].strip()
        confidence = float(cells[10])
        if not text or confidence < 0:
            continue
        left, top, width, height = (float(c) for c in cells[6:10])
        key = (int(cells[2]), int(cells[3]), int(cells[4]))
        lines.setdefault(key, []).append(Word(text, BBox(left, top, left + width, top + height), confidence / 100, key))
    blocks = order_by_columns(list(lines.values()))
    if blocks is not None:
        return [_paragraph(block.text, block.words) for block in blocks]
    paragraphs: dict[tuple[int, int], list[list[Word]]] = {}
    for (block, paragraph, _), words in lines.items():
        paragraphs.setdefault((block, paragraph), []).append(words)
    return [
        _paragraph(
            "\n".join(join_words(w.text for w in line) for line in paragraph_lines),
            [w for line in paragraph_lines for w in line],
        )
        for paragraph_lines in paragraphs.values()
    ]


def _paragraph(text: str, words: Sequence[Word]) -> OcrParagraph:
    box = words[0].box
    for word in words[1:]:
        box = box.union(word.box)
    return OcrParagraph(text=text, box=box, confidence=sum(w.confidence for w in words) / len(words))


def _installed_languages(command: str) -> set[str]:
    try:
        done = subprocess.run([command, "--list-langs"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    listing = (done.stdout or done.stderr).decode("utf-8", "replace").splitlines()
    return {line.strip() for line in listing[1:] if line.strip()}
