"""OCR that reads like a person (issue 26): columns in order, low-resolution scans upscaled, Chinese at 96 ppi.

The scans are drawn here with Pillow and Debian's fonts (fonts-dejavu-core, fonts-noto-cjk: scripts/system-packages.sh)
so their text is known; the real Tesseract reads them.
"""

from __future__ import annotations

import io
import re
import subprocess
from pathlib import Path
from typing import Any

from ragindex.loaders.image import ImageLoader
from ragindex.loaders.ocr import TesseractOcr
from ragindex.loaders.ocr_layout import Word, order_by_columns
from ragindex.types import BBox, Document

TITLE = "Harbour Survey of the Northern Depots"
HEADING = "Part Two: What the Inspectors Found Across Every Depot"
FIRST_RUN = [
    "The survey covered eleven depots along the northern coast between March and September. Each depot was "
    "visited twice, once in the quiet season and once at the peak of the shipping year.",
    "The second visit always began at the gate, where the inspectors counted the lorries waiting to enter and "
    "timed how long each one stood before the barrier lifted. At the busiest depots the queue reached the road.",
]
SECOND_RUN = [
    "Cranes were the main concern. Four of the eleven depots ran cranes that had missed their yearly test, and "
    "two of those cranes were lifting loads close to their limit every day of the week.",
    "Floor space was short at the three largest depots, where containers were stacked five high in lanes meant "
    "for three, so that forklifts had to reverse out.",
]


def _font(pattern: str, points: float, ppi: int) -> Any:
    from PIL import ImageFont

    path = subprocess.run(["fc-match", "-f", "%{file}", pattern], capture_output=True, text=True, check=True).stdout
    return ImageFont.truetype(path, size=round(points * ppi / 72))


def _wrap(text: str, font: Any, width: float) -> list[str]:
    lines = [""]
    for word in text.split():
        candidate = f"{lines[-1]} {word}".strip()
        if lines[-1] and font.getlength(candidate) > width:
            lines.append(word)
        else:
            lines[-1] = candidate
    return lines


def _two_columns(ppi: int) -> Any:
    """A letter page: a title, two short columns (the second paragraph runs from the bottom of the left column to
    the top of the right one), a full-width heading, two more short columns."""
    from PIL import Image, ImageDraw

    image = Image.new("L", (round(8.5 * ppi), round(11 * ppi)), 255)
    draw = ImageDraw.Draw(image)
    body, line_h = _font("DejaVu Serif", 10.5, ppi), 10.5 * 1.35 * ppi / 72
    margin, gutter = 0.8 * ppi, 0.2 * ppi
    column_w = (image.width - 2 * margin - gutter) / 2

    def centred(text: str, font: Any, y: float) -> None:
        draw.text(((image.width - font.getlength(text)) / 2, y), text, font=font, fill=0)

    def columns(paragraphs: list[str], y: float) -> float:
        laid: list[str | None] = []
        for paragraph in paragraphs:
            laid += [None] if laid else []
            laid += _wrap(paragraph, body, column_w)
        split = (len(laid) + 1) // 2
        while laid[split - 1] is None or laid[split] is None:  # break inside a paragraph
            split += 1
        for column, lines in enumerate((laid[:split], laid[split:])):
            top = y
            for line in lines:
                if line is not None:
                    draw.text((margin + column * (column_w + gutter), top), line, font=body, fill=0)
                top += line_h if line is not None else 0.6 * line_h
        return y + line_h * (split + 0.6)

    centred(TITLE, _font("DejaVu Serif:bold", 18, ppi), 0.9 * ppi)
    y = columns(FIRST_RUN, 1.45 * ppi)
    centred(HEADING, _font("DejaVu Sans:bold", 13, ppi), y)
    columns(SECOND_RUN, y + 13 * 2.2 * ppi / 72)
    return image


def _png(image: Any, ppi: int | None) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", **({"dpi": (ppi, ppi)} if ppi else {}))
    return out.getvalue()


def _flat(text: str) -> str:
    return " ".join(text.split())


def _blocks(doc: Document) -> list[str]:
    return [_flat(doc.text[b.start : b.end]) for b in doc.blocks]


def test_two_columns_read_column_by_column_with_the_heading_between_the_runs(tmp_path: Path) -> None:
    doc = ImageLoader(ocr=lambda: TesseractOcr(("en",))).load(tmp_path / "page.png", _png(_two_columns(200), 200))[0]
    blocks = _blocks(doc)
    # every paragraph is one block, the one crossing the columns included, and the blocks are in reading order
    assert blocks == [TITLE, *FIRST_RUN, HEADING, *SECOND_RUN]


def _word(text: str, x0: float, top: float, width: float, key: tuple[int, int, int]) -> Word:
    return Word(text, BBox(x0, top, x0 + width, top + 20), 0.9, key)


def test_lines_tesseract_joined_across_the_gutter_are_split_into_their_columns() -> None:
    # Tesseract's line i holds the left column's line i and the right column's line i (short runs)
    lines = [[_word("Title spanning both columns of the page", 400, 0, 900, (1, 1, 0))]]
    for i in range(4):
        left = [_word(f"left{i}", 100 + 160 * k, 60 + 30 * i, 150, (2, 1, i)) for k in range(4)]
        right = [_word(f"right{i}", 800 + 160 * k, 60 + 30 * i, 150, (2, 1, i)) for k in range(4)]
        lines.append(left + right)
    lines.append([_word("Heading", 500, 200, 200, (3, 1, 0)), _word("across", 710, 200, 160, (3, 1, 0))])
    for i in range(4):
        lines.append([_word(f"low{i}", 100 + 160 * k, 260 + 30 * i, 150, (4, 1, i)) for k in range(4)])
        lines.append([_word(f"high{i}", 800 + 160 * k, 260 + 30 * i, 150, (5, 1, i)) for k in range(4)])
    blocks = order_by_columns(lines)
    assert blocks is not None
    texts = [b.text.split("\n") for b in blocks]
    assert texts[0] == ["Title spanning both columns of the page"]
    # the left column runs on into the right one (no sentence stop): one paragraph of eight lines
    assert [line.split()[0] for line in texts[1]] == [f"left{i}" for i in range(4)] + [f"right{i}" for i in range(4)]
    assert texts[2] == ["Heading across"]
    assert [line.split()[0] for line in texts[3]] == [f"low{i}" for i in range(4)] + [f"high{i}" for i in range(4)]
    assert len(blocks) == 4


def test_a_page_without_columns_keeps_tesseracts_order() -> None:
    lines = [[_word(f"w{i}{k}", 100 + 160 * k, 30 * i, 150, (1, 1, i)) for k in range(8)] for i in range(6)]
    assert order_by_columns(lines) is None


def cer(truth: str, got: str) -> float:
    """Levenshtein distance / length of the truth, whitespace removed."""
    a, b = re.sub(r"\s+", "", truth), re.sub(r"\s+", "", got)
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1] / len(a)
