"""Scans with a known transcript for ``bench/ocr_quality.py``: Pillow draws the text with Debian's fonts.

* ``two-column``: an English letter page at 200 ppi: a full-width title, two columns whose second paragraph runs
  from the bottom of the left column to the top of the right one, a full-width bold heading under both columns,
  then two more columns;
* the same page at 96 ppi (a low-resolution scan, as an image with its DPI and as an image-only pdf);
* ``zh-72.png``: the Chinese page at 72 ppi (its png declares 72, which counts as unknown: judged by line height);
* ``zh-strips``: a Chinese page (Noto Sans CJK, fonts-noto-cjk) at 96 ppi, cut into horizontal image strips inside a
  pdf (as some scanners and converters write a page), with digits and measure words (三十七个, 2026年, 15.8%).

Each scan comes with its transcript (paragraphs in reading order); fonts are found with ``fc-match``.
"""

from __future__ import annotations

import io
import subprocess
from dataclasses import dataclass
from functools import cache
from typing import Any

TITLE = "Harbour Survey of the Northern Depots"
HEADING = "Part Two: What the Inspectors Found Across Every Depot"
FIRST_RUN = [
    "The survey covered eleven depots along the northern coast between March and September. Each depot was "
    "visited twice, once in the quiet season and once at the peak of the shipping year.",
    "The second visit always began at the gate, where the inspectors counted the lorries waiting to enter and "
    "timed how long each one stood before the barrier lifted. At the busiest depots the queue reached the road.",
]
SHORT_SECOND_RUN = [
    "Cranes were the main concern. Four of the eleven depots ran cranes that had missed their yearly test, and "
    "two of those cranes were lifting loads close to their limit every day of the week.",
    "Floor space was short at the three largest depots, where containers were stacked five high in lanes meant "
    "for three, so that forklifts had to reverse out.",
]
SECOND_RUN = [
    "Cranes were the main concern. Four of the eleven depots ran cranes that had missed their yearly test, and "
    "two of those cranes were lifting loads close to their limit every day.",
    "At the busiest depots the queue of lorries reached the main road before noon, and drivers reported waits of "
    "more than an hour on most mornings. The inspectors then walked the yard, measured the free floor space in "
    "every shed, and checked the cranes against the maintenance log kept by the harbour master, noting every entry "
    "that was missing or late.",
    "Smaller depots kept their logs on paper, and several books had gaps of a month or more. The larger ones used "
    "a shared register that the inspectors could read from the office.",
    "Floor space was short at the three largest depots, where containers were stacked five high in lanes meant "
    "for three, so that forklifts had to reverse out of the narrow rows.",
    "The report recommends a shared booking system for lorries, a second crane at the western depot, and a "
    "monthly check of every log by the regional office, starting in the new year.",
]

ZH_PARAGRAPHS = [
    "北方港口仓库调查报告",
    "今年三月到九月，调查组走访了沿海的十一个仓库，共记录三十七个问题，其中十二个与起重机有关。",
    "每个仓库检查两次，第一次在淡季，第二次在旺季。旺季时最大的仓库每天进出四百二十辆卡车，排队时间超过一小时。",
    "二〇二六年的吞吐量比去年增长了15.8%，达到二百六十万吨，但仓库面积只增加了八千平方米。",
    "调查组建议在西部仓库增加一台起重机，并由地区办公室每月检查一次全部台账。",
]


@dataclass(frozen=True)
class Scan:
    """A scan and its transcript: ``data`` is a png/tiff image or an image-only pdf."""

    name: str
    language: str
    ppi: int
    suffix: str
    data: bytes
    paragraphs: list[str]

    @property
    def transcript(self) -> str:
        return "\n\n".join(self.paragraphs)


@cache
def font_file(pattern: str) -> str:
    """The font file ``fc-match`` picks for ``pattern`` (e.g. ``DejaVu Serif:bold``, ``Noto Sans CJK SC``)."""
    path = subprocess.run(["fc-match", "-f", "%{file}", pattern], capture_output=True, text=True, check=True).stdout
    if "CJK" in pattern and "CJK" not in path:
        raise RuntimeError(f"no CJK font for {pattern!r} (got {path}): apt-get install fonts-noto-cjk")
    return path


def _font(pattern: str, points: float, ppi: int) -> Any:
    from PIL import ImageFont

    return ImageFont.truetype(font_file(pattern), size=max(1, round(points * ppi / 72)))


def _wrap(text: str, font: Any, width: float, *, cjk: bool = False) -> list[str]:
    """Greedy line breaking at ``width`` pixels (at spaces, or between any two characters for Chinese)."""
    tokens = list(text) if cjk else text.split()
    glue = "" if cjk else " "
    lines: list[str] = []
    current = ""
    for token in tokens:
        candidate = f"{current}{glue}{token}" if current else token
        if current and font.getlength(candidate) > width:
            lines.append(current)
            current = token
        else:
            current = candidate
    if current:
        lines.append(current)
    return lines


def two_column_page(ppi: int = 200, *, short: bool = False) -> tuple[Any, list[str]]:
    """The English two-column page at ``ppi`` and its paragraphs in reading order.

    ``short``: the second run of columns is short too (about five lines a column), which Tesseract's own layout
    analysis reads across the columns."""
    from PIL import Image, ImageDraw

    def px(inches: float) -> int:
        return round(inches * ppi)

    width, height = px(8.5), px(11)
    image = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(image)
    body = _font("DejaVu Serif", 10.5, ppi)
    line_h = round(10.5 * 1.35 * ppi / 72)
    margin, gutter = px(0.8), px(0.2)
    column_w = (width - 2 * margin - gutter) / 2
    y = px(0.9)
    title = _font("DejaVu Serif:bold", 18, ppi)
    draw.text(((width - title.getlength(TITLE)) / 2, y), TITLE, font=title, fill=0)
    y += round(18 * 2.2 * ppi / 72)
    y = _column_run(draw, FIRST_RUN, body, line_h, margin, column_w, gutter, y)
    heading = _font("DejaVu Sans:bold", 13, ppi)
    draw.text(((width - heading.getlength(HEADING)) / 2, y + line_h * 0.6), HEADING, font=heading, fill=0)
    y += round(line_h * 0.6 + 13 * 2.2 * ppi / 72)
    second = SHORT_SECOND_RUN if short else SECOND_RUN
    _column_run(draw, second, body, line_h, margin, column_w, gutter, y)
    return image, [TITLE, *FIRST_RUN, HEADING, *second]


def _column_run(
    draw: Any, paragraphs: list[str], font: Any, line_h: int, margin: int, column_w: float, gutter: int, top: int
) -> int:
    """Flow ``paragraphs`` down the left column, then the right one; a paragraph breaks across them mid-text.

    Returns the y below the run."""
    laid: list[str | None] = []  # lines; None: the gap between paragraphs
    for paragraph in paragraphs:
        if laid:
            laid.append(None)
        laid.extend(_wrap(paragraph, font, column_w))
    split = (len(laid) + 1) // 2
    while laid[split - 1] is None or laid[split] is None:  # break inside a paragraph, never between two
        split += 1
    for column, lines in enumerate((laid[:split], laid[split:])):
        x = margin + column * (column_w + gutter)
        y = float(top)
        for line in lines:
            if line is None:
                y += line_h * 0.6
                continue
            draw.text((x, y), line, font=font, fill=0)
            y += line_h
    return top + round(line_h * (split + 0.5))


def chinese_page(ppi: int = 96) -> tuple[Any, list[str]]:
    """The Chinese page (A4-ish width) at ``ppi``: a title and four paragraphs of 11 pt Noto Sans CJK."""
    from PIL import Image, ImageDraw

    width, height = round(8.27 * ppi), round(6.0 * ppi)
    image = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(image)
    margin = round(0.9 * ppi)
    y = float(round(0.6 * ppi))
    title = _font("Noto Sans CJK SC:bold", 16, ppi)
    draw.text((margin, y), ZH_PARAGRAPHS[0], font=title, fill=0)
    y += 16 * 2.0 * ppi / 72
    body = _font("Noto Sans CJK SC", 11, ppi)
    for paragraph in ZH_PARAGRAPHS[1:]:
        for line in _wrap(paragraph, body, width - 2 * margin, cjk=True):
            draw.text((margin, y), line, font=body, fill=0)
            y += 11 * 1.6 * ppi / 72
        y += 11 * 0.6 * ppi / 72
    return image, list(ZH_PARAGRAPHS)


def scanned(image: Any, ppi: int, drawn_ppi: int) -> Any:
    """``image`` (drawn at ``drawn_ppi``) as a scanner at ``ppi`` sees it: each pixel the mean of the page under it."""
    from PIL import Image

    size = (round(image.width * ppi / drawn_ppi), round(image.height * ppi / drawn_ppi))
    return image.resize(size, Image.Resampling.BOX)


def image_bytes(image: Any, ppi: int, fmt: str = "PNG") -> bytes:
    """The image encoded as ``fmt``, its resolution recorded in the file (png pHYs / tiff resolution)."""
    out = io.BytesIO()
    image.save(out, format=fmt, dpi=(ppi, ppi))
    return out.getvalue()


def pdf_of_strips(image: Any, ppi: int, strips: int = 1) -> bytes:
    """An image-only pdf page of ``image`` at ``ppi``, drawn as ``strips`` horizontal image strips (reportlab)."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    width, height = image.size
    page_w, page_h = width * 72 / ppi, height * 72 / ppi
    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=(page_w, page_h), invariant=1)
    bounds = [round(height * i / strips) for i in range(strips + 1)]
    for top, bottom in zip(bounds, bounds[1:], strict=False):
        strip = image.crop((0, top, width, bottom))
        pdf.drawImage(ImageReader(strip), 0, page_h - bottom * 72 / ppi, width=page_w, height=(bottom - top) * 72 / ppi)
    pdf.showPage()
    pdf.save()
    return out.getvalue()


def scans() -> list[Scan]:
    """Every scan of the benchmark, with its transcript."""
    two_200, english = two_column_page(200)
    two_96 = scanned(two_column_page(384)[0], 96, 384)
    short_200, short_text = two_column_page(200, short=True)
    zh_384, chinese = chinese_page(384)
    zh_96 = scanned(zh_384, 96, 384)
    return [
        Scan("two-column-200.png", "en", 200, ".png", image_bytes(two_200, 200), english),
        Scan("two-column-short-200.png", "en", 200, ".png", image_bytes(short_200, 200), short_text),
        Scan("two-column-96.png", "en", 96, ".png", image_bytes(two_96, 96), english),
        Scan("two-column-96.pdf", "en", 96, ".pdf", pdf_of_strips(two_96, 96), english),
        Scan("zh-strips-96.pdf", "zh", 96, ".pdf", pdf_of_strips(zh_96, 96, strips=6), chinese),
        Scan("zh-96.png", "zh", 96, ".png", image_bytes(zh_96, 96), chinese),
        Scan("zh-72.png", "zh", 72, ".png", image_bytes(scanned(zh_384, 72, 384), 72), chinese),
    ]
