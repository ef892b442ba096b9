"""Markdown ATX headings (``#`` .. ``######`` at line start, outside code fences), found once per document."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from ragindex.markup import HEADING_OR_FENCE, atx_title, is_fence_close


@dataclass(frozen=True, slots=True)
class Heading:
    """One heading: its line starts at character ``start``; ``level`` is the number of ``#``."""

    start: int
    level: int
    title: str


class Headings:
    """The headings of one text in document order, with an O(log n) lookup of the heading above an offset.

    Args:
        text: The document text (markdown or plain; plain text usually has no headings).
    """

    __slots__ = ("_paths", "_starts", "items")

    def __init__(self, text: str) -> None:
        self.items: tuple[Heading, ...] = tuple(find_headings(text))
        self._starts = [h.start for h in self.items]
        self._paths: list[list[str]] | None = None

    def __bool__(self) -> bool:
        return bool(self.items)

    def section_at(self, offset: int) -> str | None:
        """Title of the last heading whose line starts at or before ``offset``, else ``None``.

        Args:
            offset: A character offset into the text.

        Returns:
            The heading title without the ``#`` markers, or ``None`` before the first heading.
        """
        i = bisect_right(self._starts, offset) - 1
        return self.items[i].title if i >= 0 else None

    def path_at(self, offset: int) -> list[str]:
        """Titles of the headings enclosing ``offset``, outermost first (``["Report", "Results", "North"]``).

        A heading closes every open heading of its level or deeper, so the path is the chain of the last
        heading of each shallower level above the offset.
        """
        i = bisect_right(self._starts, offset) - 1
        if i < 0:
            return []
        if self._paths is None:
            self._paths = []
            stack: list[Heading] = []
            for heading in self.items:
                while stack and stack[-1].level >= heading.level:
                    stack.pop()
                stack.append(heading)
                self._paths.append([h.title for h in stack])
        return list(self._paths[i])


def find_headings(text: str) -> list[Heading]:
    """Every ATX heading of ``text`` outside fenced code blocks.

    Args:
        text: Markdown source.

    Returns:
        Headings in document order; empty titles (a bare ``#``) are skipped.
    """
    headings: list[Heading] = []
    fence: str | None = None
    for match in HEADING_OR_FENCE.finditer(text):
        marker = match.group("fence")
        if marker is not None:
            if fence is None:
                fence = marker
            elif is_fence_close(marker, fence):
                fence = None
            continue
        if fence is not None:
            continue
        title = atx_title(match.group("rest"))
        if title:
            headings.append(Heading(start=match.start(), level=len(match.group("marks")), title=title))
    return headings
