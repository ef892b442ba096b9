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

    def recognize(self, image: Image) -> list[OcrParagraph]:
        """The paragraphs of text on ``image``, in Tesseract's reading order.

        The first configured language reads the page alone; only when that reading is unsure (a confidence
        under :data:`RETRY_CONFIDENCE`, as English gives on a Chinese page: 0.35 against 0.95 on English pages of
        the test set) are all the languages run together, and the surer reading is kept. Running ``eng+chi_sim``
        on every page cost 2.3x the time of ``eng`` on dense English pages (docs/parsing.md).

        Raises:
            DocumentLoadError: Tesseract failed or timed out on the image.
        """
        png = io.BytesIO()
        image.save(png, format="PNG")
        data = png.getvalue()
        first = self._run(data, self._first)
        if self._first == self._lang or confidence(first) >= RETRY_CONFIDENCE:
            return first
        combined = self._run(data, self._lang)
        return combined if confidence(combined) > confidence(first) else first

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
