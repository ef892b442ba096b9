"""Images (png, jpg, tiff): OCR'd text, one page per image frame (a multi-page tiff is a multi-page document)."""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import Any

from ragindex.errors import DocumentLoadError, RagindexError
from ragindex.loaders.layout import LayoutBuilder
from ragindex.loaders.pdf import OcrLoader, add_ocr_paragraphs
from ragindex.types import Document

MAX_PIXELS = 60_000_000
"""Largest image read (a 300 dpi A0 scan is ~140 M pixels; A3 at 400 dpi ~31 M): a decompression bomb, e.g. a
small png that inflates to 100,000 x 100,000 pixels, fails alone before it is decoded."""


class ImageLoader(OcrLoader):
    """Loads ``.png``, ``.jpg``/``.jpeg`` and ``.tif``/``.tiff`` by OCR; boxes are in the image's pixels.

    Args:
        ocr: Builds the OCR engine, on the first image; None: images fail with a message saying OCR is off.
        max_pages: Most frames of a multi-page tiff.
    """

    name: str = "image"
    suffixes: tuple[str, ...] = (".png", ".jpg", ".jpeg", ".tif", ".tiff")

    def load(self, path: Path, data: bytes) -> list[Document]:
        """OCR every frame of the image in ``data`` into one document whose ``source_uri`` is ``str(path)``.

        Raises:
            DocumentLoadError: Not a readable image, too many pixels or frames, or OCR is off.
            ConfigurationError: Tesseract or a language pack is missing (the message names the Debian package).
        """
        if self.ocr is None:
            raise DocumentLoadError(f"{path.name}: images are read by OCR, and OCR is off (RAGINDEX_OCR=false)")
        image = _open(path, data)
        frames = int(getattr(image, "n_frames", 1))
        if frames > self.max_pages:
            raise DocumentLoadError(f"{path.name}: {frames} frames, more than RAGINDEX_MAX_PDF_PAGES={self.max_pages}")
        engine = self.engine()
        assert engine is not None  # OCR is on (checked above)
        builder = LayoutBuilder(str(path), self.name)
        confidences: dict[str, float] = {}
        for number in range(1, frames + 1):
            try:
                image.seek(number - 1)
                frame = image.convert("L")
                paragraphs = engine.recognize(frame, ppi=declared_ppi(image.info))
            except RagindexError as exc:
                builder.warnings.append(f"page {number}: {exc.message}")
                continue
            except (OSError, ValueError, EOFError) as exc:
                builder.warnings.append(f"page {number}: unreadable frame ({type(exc).__name__}: {exc})")
                continue
            builder.start_page(number)
            add_ocr_paragraphs(builder, paragraphs, 1.0)
            if paragraphs:
                confidences[str(number)] = round(sum(p.confidence for p in paragraphs) / len(paragraphs), 3)
        if builder.empty:
            builder.warnings.append("OCR found no text in the image")
        metadata = {"page_count": frames, "ocr_pages": confidences, "image_size": list(image.size), "bbox_unit": "px"}
        return [builder.build(metadata=metadata)]


def declared_ppi(info: dict[str, Any]) -> float | None:
    """The resolution an image file declares (png pHYs, jpeg JFIF, tiff), or None when it declares none or 72.

    72 is the default many writers put in every file (screenshots, converters), so it says nothing: the OCR then
    estimates the resolution from the height of the text lines.
    """
    dpi = info.get("dpi")
    try:
        value = float(min(dpi)) if isinstance(dpi, tuple) and dpi else None
    except (TypeError, ValueError):
        return None
    if value is None or value < 30 or round(value) == 72:
        return None
    return float(round(value))  # a png stores pixels per metre: 200 dpi reads back as 199.9996


def _open(path: Path, data: bytes) -> Any:
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            width, height = image.size
            if width * height > MAX_PIXELS:
                raise DocumentLoadError(
                    f"{path.name}: {width} x {height} pixels, more than {MAX_PIXELS:,} (a decompression bomb, or a "
                    "scan at a needlessly high resolution: downsample it to 300 dpi)",
                    path=str(path),
                )
            image.load()
    except DocumentLoadError:
        raise
    # Pillow signals a file that is not an image (or a damaged one) with UnidentifiedImageError, OSError,
    # SyntaxError, ValueError or a DecompressionBomb error
    except Exception as exc:
        raise DocumentLoadError(
            f"{path.name}: not a readable image ({type(exc).__name__}: {exc})", path=str(path)
        ) from exc
    return image
