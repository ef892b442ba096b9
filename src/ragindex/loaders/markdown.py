"""Markdown files, kept as markdown so that the structure-aware chunker can see the headings."""

from __future__ import annotations

import re

from ragindex.loaders.text import TextLoader
from ragindex.markup import ATX_HEADING, FENCE, atx_title, is_fence_close

_SETEXT_H1 = re.compile(r" {0,3}=++[ \t]*+$")


def first_h1(text: str) -> str | None:
    """The text of the first level-1 heading (``# Title`` or ``Title`` over ``===``) outside code fences.

    Args:
        text: Markdown source.

    Returns:
        The heading text without the ``#`` markers, or ``None``.
    """
    fence: str | None = None
    previous = ""
    for line in text.split("\n"):
        opening = FENCE.match(line)
        if opening:
            marker = opening.group(1)
            if fence is None:
                fence = marker
            elif is_fence_close(marker, fence):
                fence = None
            previous = ""
            continue
        if fence is None:
            heading = ATX_HEADING.match(line)
            if heading and len(heading.group(1)) == 1 and (title := atx_title(heading.group(2))):
                return title
            if previous.strip() and _SETEXT_H1.match(line):
                return previous.strip()
        previous = line
    return None


class MarkdownLoader(TextLoader):
    """Loads ``.md``/``.markdown`` files verbatim (decoded like text); the title is the first ``# `` heading."""

    name: str = "markdown"
    suffixes: tuple[str, ...] = (".md", ".markdown")

    def title(self, text: str) -> str | None:
        """The first level-1 heading outside code fences (see :func:`first_h1`)."""
        return first_h1(text)
