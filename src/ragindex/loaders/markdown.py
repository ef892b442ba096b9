"""Markdown files, kept as markdown so that the structure-aware chunker can see the headings."""

from __future__ import annotations

import re
from pathlib import Path

from ragindex.loaders._decode import decode_text
from ragindex.types import Document

_H1 = re.compile(r"^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT_H1 = re.compile(r"^ {0,3}=+[ \t]*$")


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
        opening = _FENCE.match(line)
        if opening:
            marker = opening.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            previous = ""
            continue
        if fence is None:
            heading = _H1.match(line)
            if heading and heading.group(1).strip():
                return heading.group(1).strip()
            if previous.strip() and _SETEXT_H1.match(line):
                return previous.strip()
        previous = line
    return None


class MarkdownLoader:
    """Loads ``.md``/``.markdown`` files verbatim (decoded like text); the title is the first ``# `` heading."""

    name: str = "markdown"
    suffixes: tuple[str, ...] = (".md", ".markdown")

    def load(self, path: Path, data: bytes) -> list[Document]:
        """Decode ``data`` into one markdown document whose ``source_uri`` is ``str(path)``.

        Args:
            path: The (absolute, resolved) path of the file.
            data: The bytes of the file.

        Returns:
            A single document; its text is empty when the file holds only whitespace.
        """
        text, warnings = decode_text(data)
        return [Document(source_uri=str(path), text=text, parser=self.name, title=first_h1(text), warnings=warnings)]
