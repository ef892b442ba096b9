"""PowerPoint ``.pptx`` decks via python-pptx (imported when a file is loaded, never at package import).

Each slide is a page. Its title is a level-2 heading, so every chunk of the slide has it as its ``section``
(an untitled slide is headed "Slide N", so its content does not fall under the previous slide's title). The
slide's shapes follow in reading order (top, then left; a group's shapes in their own order where the group
stands): text frames as paragraphs, bulleted paragraphs as ``list`` blocks, tables as markdown tables.

Speaker notes are kept, as one paragraph after the slide's content starting with ``Notes:``. They often hold
the sentences the slide only hints at (the talk track), which is what a question is phrased like, so dropping
them loses the best-matching text of a deck. They stay inside the slide's page and section (a hit on a note
cites the slide it belongs to), and the prefix tells a reader of the hit that the text was said, not shown;
a heading of their own would instead make "Notes" the section of every note chunk.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ragindex._optional import require_for_file
from ragindex.errors import DocumentLoadError
from ragindex.loaders._ooxml import check_package, load_error
from ragindex.loaders.layout import LayoutBuilder
from ragindex.types import BBox, BlockKind, Document

_EMU_PER_POINT = 12700
_UNTITLED = {"", "powerpoint presentation"}
_BULLET_TAGS = ("buChar", "buAutoNum", "buBlip")


class PptxLoader:
    """Loads ``.pptx`` (and macro-enabled ``.pptm``) decks into one markdown document, a page per slide.

    The document's title is the deck's core-properties title, else the first slide's title. Boxes are in points
    from the slide's top left corner; a shape inside a group gets the group's box.
    """

    name: str = "pptx"
    suffixes: tuple[str, ...] = (".pptx", ".pptm")

    def load(self, path: Path, data: bytes) -> list[Document]:
        """Read ``data`` into one document whose ``source_uri`` is ``str(path)``.

        Returns:
            A single document; a deck without slides or without text gives an empty one with a warning.

        Raises:
            DocumentLoadError: Not a readable pptx (not a zip, truncated, damaged, encrypted) or a zip bomb.
        """
        check_package(path, data, "pptx")
        require_for_file(path, "parsing", "reading .pptx files", "pptx")
        from pptx import Presentation

        builder = LayoutBuilder(str(path), self.name)
        try:
            deck = Presentation(io.BytesIO(data))
            slide_count = len(deck.slides)
            first_title: str | None = None
            for number, slide in enumerate(deck.slides, 1):
                title = _add_slide(builder, number, slide)
                first_title = first_title or title
            core_title = (deck.core_properties.title or "").strip()
        except DocumentLoadError:
            raise
        # python-pptx reports a damaged package as KeyError, ValueError, lxml errors, ...
        except Exception as exc:
            raise load_error(path, "pptx", exc) from exc
        if slide_count == 0:
            builder.warnings.append("the deck has no slides")
        elif builder.empty:
            builder.warnings.append("no text in the deck")
        title = core_title if core_title.lower() not in _UNTITLED else first_title
        return [builder.build(title=title, metadata={"page_count": slide_count})]


def _add_slide(builder: LayoutBuilder, number: int, slide: Any) -> str | None:
    """Add one slide as page ``number``; its title, if it has one."""
    builder.start_page(number)
    title_shape = slide.shapes.title
    title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
    builder.heading(title or f"Slide {number}", 2, bbox=_box(title_shape) if title else None)
    skip = title_shape.shape_id if title_shape is not None else None
    for shape, box in _in_reading_order(slide.shapes, None):
        if shape.shape_id != skip:
            _add_shape(builder, shape, box)
    notes = _notes(slide)
    if notes:
        builder.paragraph("Notes: " + notes)
    return title or None


def _in_reading_order(shapes: Iterable[Any], group_box: BBox | None) -> Iterator[tuple[Any, BBox | None]]:
    """The shapes top to bottom, then left to right, groups opened; each with its box (a group's for its shapes)."""
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    for shape in sorted(shapes, key=lambda s: (s.top or 0, s.left or 0)):
        box = group_box or _box(shape)
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            yield from _in_reading_order(shape.shapes, box)
        else:
            yield shape, box


def _add_shape(builder: LayoutBuilder, shape: Any, box: BBox | None) -> None:
    from pptx.enum.shapes import PP_PLACEHOLDER

    if shape.is_placeholder and shape.placeholder_format.type in (
        PP_PLACEHOLDER.DATE,
        PP_PLACEHOLDER.FOOTER,
        PP_PLACEHOLDER.SLIDE_NUMBER,
    ):
        return
    if shape.has_table:
        rows = [["" if cell.is_spanned else cell.text for cell in row.cells] for row in shape.table.rows]
        builder.table(rows, bbox=box)
    elif shape.has_text_frame:
        bulleted = shape.is_placeholder and shape.placeholder_format.type in (
            PP_PLACEHOLDER.BODY,
            PP_PLACEHOLDER.OBJECT,
        )
        for kind, lines in _runs_of_kind(shape.text_frame.paragraphs, bulleted):
            builder.paragraph("\n".join(lines), kind=kind, bbox=box)


def _runs_of_kind(paragraphs: Iterable[Any], bulleted: bool) -> Iterator[tuple[BlockKind, list[str]]]:
    """Consecutive paragraphs of one kind: bullets (``- item``) as one ``list`` block, the others as one text."""
    kind: BlockKind | None = None
    lines: list[str] = []
    for paragraph in paragraphs:
        text = " ".join(paragraph.text.split())
        if not text:
            continue
        this = BlockKind.LIST if _is_bullet(paragraph, bulleted) else BlockKind.TEXT
        if this != kind and lines:
            yield kind or BlockKind.TEXT, lines
            lines = []
        kind = this
        lines.append("- " + text if this == BlockKind.LIST else text)
    if lines:
        yield kind or BlockKind.TEXT, lines


def _is_bullet(paragraph: Any, bulleted: bool) -> bool:
    """Whether the paragraph shows a bullet: set on it, or inherited from a body placeholder unless turned off."""
    properties = paragraph._p.pPr  # the bullet settings are not in python-pptx's API
    if properties is not None:
        tags = {child.tag.rsplit("}", 1)[-1] for child in properties}
        if "buNone" in tags:
            return False
        if tags.intersection(_BULLET_TAGS):
            return True
    return bulleted


def _notes(slide: Any) -> str:
    if not slide.has_notes_slide:
        return ""
    frame = slide.notes_slide.notes_text_frame
    if frame is None:
        return ""
    return "\n".join(line for line in (" ".join(p.text.split()) for p in frame.paragraphs) if line)


def _box(shape: Any) -> BBox | None:
    if shape is None or None in (shape.left, shape.top, shape.width, shape.height):
        return None
    left, top = shape.left / _EMU_PER_POINT, shape.top / _EMU_PER_POINT
    return BBox(left, top, left + shape.width / _EMU_PER_POINT, top + shape.height / _EMU_PER_POINT)
