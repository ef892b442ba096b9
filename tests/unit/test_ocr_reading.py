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

from ragindex.loaders.image import ImageLoader, declared_ppi
from ragindex.loaders.ocr import TesseractOcr, glyph_ppi
from ragindex.loaders.ocr_layout import Word, order_by_columns
from ragindex.loaders.pdf import PdfLoader, scan_ppi
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


ZH_TITLE = "北方港口仓库调查报告"
ZH_TEXT = [
    "今年三月到九月，调查组走访了沿海的十一个仓库，共记录三十七个问题，其中十二个与起重机有关。",
    "每个仓库检查两次，第一次在淡季，第二次在旺季。旺季时最大的仓库每天进出四百二十辆卡车，排队时间超过一小时。",
    "今年的吞吐量比去年增长了15.8%，达到二百六十万吨，但仓库面积只增加了八千平方米。",
]


def _chinese(ppi: int) -> Any:
    """A Chinese page (Noto Sans CJK SC, 11 pt) drawn at 4x ``ppi`` and scanned at ``ppi`` (each pixel the mean of
    the page under it, as a scanner's sensor sees it)."""
    from PIL import Image, ImageDraw

    drawn = 4 * ppi
    image = Image.new("L", (round(8.27 * drawn), round(4.5 * drawn)), 255)
    draw = ImageDraw.Draw(image)
    margin, y = 0.9 * drawn, 0.6 * drawn
    draw.text((margin, y), ZH_TITLE, font=_font("Noto Sans CJK SC:bold", 16, drawn), fill=0)
    y += 32 * drawn / 72
    body = _font("Noto Sans CJK SC", 11, drawn)
    for paragraph in ZH_TEXT:
        line = ""
        for char in paragraph + "\n":
            if char == "\n" or body.getlength(line + char) > image.width - 2 * margin:
                draw.text((margin, y), line, font=body, fill=0)
                y += 11 * 1.6 * drawn / 72
                line = ""
            line += char.strip()
        y += 11 * 0.6 * drawn / 72
    return image.resize((image.width // 4, image.height // 4), Image.Resampling.BOX)


def _strips_pdf(image: Any, ppi: int, strips: int) -> bytes:
    """An image-only pdf page showing ``image`` at ``ppi`` as ``strips`` horizontal image strips."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    page_w, page_h = image.width * 72 / ppi, image.height * 72 / ppi
    pdf = canvas.Canvas(out, pagesize=(page_w, page_h), invariant=1)
    bounds = [round(image.height * i / strips) for i in range(strips + 1)]
    for top, bottom in zip(bounds, bounds[1:], strict=False):
        strip = ImageReader(image.crop((0, top, image.width, bottom)))
        pdf.drawImage(strip, 0, page_h - bottom * 72 / ppi, width=page_w, height=(bottom - top) * 72 / ppi)
    pdf.showPage()
    pdf.save()
    return out.getvalue()


def _unspaced(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_a_low_resolution_scan_is_enlarged_before_ocr(tmp_path: Path) -> None:
    scan = _chinese(72)  # 11 pt characters 11 px high; the png declares no resolution: judged by its line height
    truth = ZH_TITLE + "".join(ZH_TEXT)
    doc = ImageLoader(ocr=lambda: TesseractOcr(("zh",))).load(tmp_path / "scan.png", _png(scan, None))[0]
    as_is = TesseractOcr(("zh",)).recognize(scan, ppi=300)  # told it is sharp: read without enlarging
    assert cer(truth, doc.text) <= 0.05 < cer(truth, "".join(p.text for p in as_is))
    assert "共记录三十七个问题" in _unspaced(doc.text)
    box = doc.blocks[0].bbox  # boxes stay in the image's own pixels
    assert box is not None and box.x1 <= scan.width and box.bottom <= scan.height


def test_a_chinese_scan_of_image_strips_at_96_ppi_is_read(tmp_path: Path) -> None:
    scan = _chinese(96)
    doc = PdfLoader(ocr=TesseractOcr).load(tmp_path / "strips.pdf", _strips_pdf(scan, 96, strips=5))[0]
    text = _unspaced(doc.text)
    for phrase in ("共记录三十七个问题", "四百二十辆卡车", "15.8%", "八千平方米"):
        assert phrase in text
    assert cer(ZH_TITLE + "".join(ZH_TEXT), doc.text) <= 0.05
    box = doc.blocks[0].bbox  # in pdf points (the page is 595 x 324 pt)
    assert box is not None and box.x1 < 600 and box.bottom < 330


def test_a_borderless_table_of_terms_and_definitions_is_not_read_as_two_columns() -> None:
    # short terms (under 12 word heights) beside long definitions: rows, not columns
    lines = [
        [_word(f"term{i}", 100, 40 * i, 180, (1, 1, i))]
        + [_word(f"def{i}", 400 + 120 * k, 40 * i, 110, (1, 1, i)) for k in range(6)]
        for i in range(8)
    ]
    assert order_by_columns(lines) is None


def test_the_resolution_of_a_scan_comes_from_the_pdf_the_file_or_its_lines() -> None:
    import pypdfium2
    from PIL import Image

    scan = _chinese(96)
    pdf = pypdfium2.PdfDocument(_strips_pdf(scan, 96, strips=5))
    assert round(scan_ppi(pdf[0]) or 0) == 96  # the strips' pixels over their placed size
    pdf.close()
    assert declared_ppi(Image.open(io.BytesIO(_png(scan, 200))).info) == 200  # pHYs: 7874 px/m, 199.9996 dpi
    assert declared_ppi(Image.open(io.BytesIO(_png(scan, 72))).info) is None  # the writers' default says nothing
    assert declared_ppi(Image.open(io.BytesIO(_png(scan, None))).info) is None
    assert 85 < (glyph_ppi(_two_columns(96)) or 0) < 110 and 180 < (glyph_ppi(_two_columns(200)) or 0) < 225


def test_a_skewed_page_is_read_by_columns_too() -> None:
    import math

    turn = math.radians(2)  # a column's left edge drifts 31 px over its 900 px

    def word(text: str, x: float, y: float, key: tuple[int, int, int]) -> Word:
        cx, cy = x + 75, y + 10
        rx, ry = cx * math.cos(turn) - cy * math.sin(turn), cx * math.sin(turn) + cy * math.cos(turn)
        return Word(text, BBox(rx - 75, ry - 10, rx + 75, ry + 10), 0.9, key)

    lines = [
        [word(f"{side}{i}", x0 + 160 * k, 100 + 30 * i, (b, 1, i)) for k in range(4)]
        for b, (side, x0) in enumerate((("left", 100), ("right", 800)))
        for i in range(30)
    ]
    blocks = order_by_columns(lines)
    assert blocks is not None and len(blocks) == 1  # one paragraph running on from the left column to the right
    firsts = [line.split()[0] for line in blocks[0].text.split("\n")]
    assert firsts == [f"left{i}" for i in range(30)] + [f"right{i}" for i in range(30)]
    assert blocks[0].words[0] is lines[0][0]  # the words as Tesseract boxed them, not turned


def test_a_heading_at_the_foot_of_a_column_does_not_run_on_into_the_next() -> None:
    lines = [[_word(f"left{i}", 100 + 160 * k, 30 * i, 150, (1, 1, i)) for k in range(4)] for i in range(5)]
    lines.append([_word("Methods", 100, 180, 150, (1, 2, 0))])  # short, no sentence stop, after a gap
    lines += [[_word(f"right{i}", 800 + 160 * k, 30 * i, 150, (2, 1, i)) for k in range(4)] for i in range(6)]
    blocks = order_by_columns(lines)
    assert blocks is not None
    assert [b.text.split()[0] for b in blocks] == ["left0", "Methods", "right0"]
