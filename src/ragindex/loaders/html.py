"""HTML files via BeautifulSoup and the builtin ``html.parser`` (imported when a page is loaded)."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ragindex._optional import require_for_file
from ragindex.loaders._decode import normalise_newlines, refuse_binary
from ragindex.types import Document

if TYPE_CHECKING:
    from bs4 import BeautifulSoup
    from bs4.element import PageElement, Tag

# "head" itself is walked: html.parser does not close an unclosed <head>, which would then swallow the body.
_DROPPED = frozenset(
    {"script", "style", "noscript", "template", "title", "meta", "link", "base", "svg", "canvas", "iframe", "object"}
)
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "dialog", "div", "dl",
        "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hgroup", "hr", "html", "main",
        "nav", "ol", "p", "section", "summary", "ul",
    }
)  # fmt: skip
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class _Close:
    """A stack entry: the end of a block element."""

    paragraph: bool


class _Writer:
    """Accumulates lines; inline text is collected until a block boundary flushes it."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._inline: list[str] = []
        self._prefix = ""

    def text(self, value: str) -> None:
        self._inline.append(value)

    def start_line(self, prefix: str) -> None:
        """Begin a line that gets ``prefix`` if it ends up with any text."""
        self.line_break()
        self._prefix = prefix

    def line_break(self) -> None:
        line = _SPACES.sub(" ", "".join(self._inline)).strip()
        self._inline.clear()
        if line:
            self.lines.append(self._prefix + line)
            self._prefix = ""

    def end_line(self) -> None:
        """Flush the line and drop a prefix that found no text (an empty list item)."""
        self.line_break()
        self._prefix = ""

    def paragraph_break(self) -> None:
        self.line_break()
        if self.lines and self.lines[-1]:
            self.lines.append("")

    def verbatim(self, block: str) -> None:
        self.paragraph_break()
        self.lines.extend(line.rstrip() for line in block.strip("\n").split("\n"))
        self.paragraph_break()

    def result(self) -> str:
        self.paragraph_break()
        return "\n".join(self.lines).strip()


class HtmlLoader:
    """Loads ``.html``/``.htm`` pages as plain text with one line per block and ``#`` markdown headings.

    ``script``, ``style``, ``noscript``, ``template`` (and other non-text elements) are dropped;
    list items become ``- `` lines and table rows ``cell | cell`` lines; the title is ``<title>``,
    else the first ``<h1>``.
    """

    name: str = "html"
    suffixes: tuple[str, ...] = (".html", ".htm")

    def load(self, path: Path, data: bytes) -> list[Document]:
        """Parse ``data`` into one document whose ``source_uri`` is ``str(path)``.

        The encoding is taken from a byte-order mark or ``<meta charset>``, else guessed.

        Returns:
            A single document; its text is empty when the page has no visible text.

        Raises:
            DocumentLoadError: The bytes are binary (a known magic number or NUL bytes).
        """
        require_for_file(path, "parsing", "reading .html files", "bs4")
        from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, XMLParsedAsHTMLWarning

        refuse_binary(path, data, utf8=False)

        with warnings.catch_warnings():
            # Both only say "this may not be what you meant"; a file named .html is parsed as html regardless.
            warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
            warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
            soup = BeautifulSoup(data, "html.parser")
        notes: tuple[str, ...] = ()
        if soup.contains_replacement_characters:
            notes = (f"undecodable bytes replaced with U+FFFD (decoded as {soup.original_encoding})",)
        return [
            Document(
                source_uri=str(path),
                text=_render(soup),
                parser=self.name,
                metadata={"encoding": soup.original_encoding} if soup.original_encoding else {},
                title=_title(soup),
                warnings=notes,
            )
        ]


def _render(soup: BeautifulSoup) -> str:
    from bs4.element import Comment, Declaration, Doctype, NavigableString, ProcessingInstruction, Tag

    writer = _Writer()
    # Iterative depth-first walk: deeply nested pages must not hit the recursion limit.
    stack: list[PageElement | _Close] = [soup]
    while stack:
        node = stack.pop()
        if isinstance(node, _Close):
            if node.paragraph:
                writer.paragraph_break()
            else:
                writer.end_line()
        elif isinstance(node, NavigableString):
            if not isinstance(node, (Comment, Declaration, Doctype, ProcessingInstruction)):
                writer.text(str(node))
        elif isinstance(node, Tag):
            _open(node, writer, stack)
    return normalise_newlines(writer.result())


def _open(tag: Tag, writer: _Writer, stack: list[PageElement | _Close]) -> None:
    name = tag.name.lower()
    if name in _DROPPED:
        return
    if name in _HEADINGS:
        writer.paragraph_break()
        heading = _SPACES.sub(" ", tag.get_text(" ")).strip()
        if heading:
            writer.text("#" * _HEADINGS[name] + " " + heading)
        writer.paragraph_break()
    elif name == "pre":
        writer.verbatim(tag.get_text())
    elif name == "br":
        writer.line_break()
    elif name == "tr":
        writer.line_break()
        cells = [_SPACES.sub(" ", cell.get_text(" ")).strip() for cell in tag.find_all(["td", "th"], recursive=False)]
        writer.text(" | ".join(cells))
        writer.line_break()
    elif name == "table":
        writer.paragraph_break()
        if tag.caption is not None:
            writer.text(tag.caption.get_text(" "))
            writer.line_break()
        stack.append(_Close(paragraph=True))
        stack.extend(reversed([row for row in tag.find_all("tr") if row.find_parent("table") is tag]))
    elif name == "li":
        writer.start_line("- ")
        stack.append(_Close(paragraph=False))
        stack.extend(reversed(tag.contents))
    else:
        block = name in _BLOCKS
        if block:
            writer.paragraph_break()
            stack.append(_Close(paragraph=True))
        stack.extend(reversed(tag.contents))


def _title(soup: BeautifulSoup) -> str | None:
    for candidate in (soup.title, soup.find("h1")):
        if candidate is not None:
            text = _SPACES.sub(" ", candidate.get_text(" ")).strip()
            if text:
                return text
    return None
