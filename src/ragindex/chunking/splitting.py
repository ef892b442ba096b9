"""The recursive splitting core shared by the recursive (chars) and structure (tokens) chunkers.

Semantics follow LangChain's ``RecursiveCharacterTextSplitter``: split at the coarsest separator present (markdown
headings, paragraphs, lines, sentences, clauses, whitespace), merge adjacent pieces up to the size, recurse into
pieces that are still too big, and cut hard as the last resort. Unlike LangChain, a heading with no body of its own
(a title right above a subheading) is never left alone in a chunk when the text it heads is too big: it opens
that text's first chunk. And every piece is a ``(start, end)`` span of the original text (separators
stay attached to the piece they end), so chunks are exact substrings and keep their character offsets. Sizes are
measured by a pluggable ``measure(start, end)`` that must be additive over adjacent spans (characters; tokens of a
pre-tokenised text).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

Measure = Callable[[int, int], int]
"""Size of the span ``text[start:end]`` (characters, tokens, ...); additive over adjacent spans."""

HardCut = Callable[[int, int], list[tuple[int, int]]]
"""Last resort: cut ``text[start:end]`` into spans that each fit, without any separator."""

# A cut falls at the end of each match, so separators end the piece before the cut. Each pattern runs in time
# linear in the text: a run of repeatable characters is matched from its first character only (the lookbehinds)
# and never given back (possessive quantifiers), so a line of 1 MB of dots, spaces or '#' costs one scan. Without
# that, '.' * 25,000 + 'x' took 12 s: every dot started a match that scanned the rest of the run and backtracked.
SEPARATORS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\n(?= {0,3}#{1,6}[ \t]++\S)"),  # markdown headings (the cut is before the heading line)
    re.compile(r"\n[ \t\r\f\v]*+\n\s*+"),  # paragraphs (blank line)
    re.compile(r"\n\s*+"),  # lines
    re.compile(  # sentences
        r"(?<![.!?])[.!?]++[\"'\u2019\u201d)\]]*+\s++"
        r"|(?<![\u3002\uff01\uff1f\uff0e])[\u3002\uff01\uff1f\uff0e]++[\u300d\u300f\u201d\u2019\uff09)]*+\s*+"
    ),
    re.compile(r"[,;:]\s++|[\uff0c\uff1b\uff1a\u3001]\s*+"),  # clauses (CJK punctuation needs no space)
    re.compile(r"\s++"),  # words
)

HEADING, PARAGRAPH = 0, 1
"""Levels of :data:`SEPARATORS` to start from (whole documents; sections without headings)."""

HEADINGS_ONLY = re.compile(r"(?:[ \t]*\n)*(?: {0,3}#{1,6}[ \t][^\n]*(?:\n(?:[ \t]*\n)*|\Z))+[ \t]*")
"""Markdown heading lines and blank lines (``# Guide``, a blank line, ``## Setup``): ``fullmatch`` tells a text
that is nothing else, ``match`` finds the headings a text opens with. Each repetition starts at a line start, so a
line with many ``#`` never backtracks."""


class RecursiveSplitter:
    """Splits spans of one text into spans whose measure is at most ``size``.

    Args:
        text: The whole document text (spans index into it).
        size: Maximum measure of an output span.
        overlap: Measure of whole trailing pieces a chunk may repeat from the previous one.
        measure: Size of a span; additive over adjacent spans.
        hard_cut: Cuts a separator-free span that is still too big.
    """

    def __init__(self, text: str, size: int, overlap: int, measure: Measure, hard_cut: HardCut) -> None:
        self.text = text
        self.size = size
        self.overlap = overlap
        self.measure = measure
        self.hard_cut = hard_cut

    def split(self, start: int, end: int, level: int = HEADING) -> list[tuple[int, int]]:
        """Split ``text[start:end]`` (raw spans: not yet stripped of surrounding whitespace).

        Args:
            start: First character of the span.
            end: One past the last character.
            level: Index of the first separator in :data:`SEPARATORS` to try.

        Returns:
            Ordered spans, each measuring at most ``size``; together they cover the input.
        """
        if start >= end:
            return []
        if self.measure(start, end) <= self.size:
            return [(start, end)]
        for depth in range(level, len(SEPARATORS)):
            cuts = [m.end() for m in SEPARATORS[depth].finditer(self.text, start, end) if start < m.end() < end]
            if cuts:
                break
        else:
            return self.hard_cut(start, end)
        bounds = [start, *cuts, end]
        out: list[tuple[int, int]] = []
        fitting: list[tuple[int, int, int]] = []
        for s, e in zip(bounds, bounds[1:], strict=False):
            n = self.measure(s, e)
            if n <= self.size:
                fitting.append((s, e, n))
                continue
            # headings with no body of their own travel with the text they head, into its first chunk
            while fitting and HEADINGS_ONLY.fullmatch(self.text, fitting[-1][0], fitting[-1][1]):
                s = fitting.pop()[0]
            if fitting:
                out.extend(self._merge(fitting))
                fitting = []
            out.extend(self.split(s, e, depth + 1))
        if fitting:
            out.extend(self._merge(fitting))
        return out

    def _merge(self, pieces: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        current: deque[tuple[int, int, int]] = deque()
        total = 0
        for piece in pieces:
            n = piece[2]
            if current and total + n > self.size:
                out.append((current[0][0], current[-1][1]))
                while current and (total > self.overlap or total + n > self.size):
                    total -= current.popleft()[2]
            current.append(piece)
            total += n
        if current:
            out.append((current[0][0], current[-1][1]))
        return out


@dataclass(frozen=True, slots=True)
class CharWindows:
    """A hard cut into windows of ``size`` characters that start every ``size - overlap`` characters.

    A class rather than a closure, so that a chunker holding it pickles (chunking runs in the parse child).

    Args:
        size: Window length in characters.
        overlap: Characters shared by consecutive windows (smaller than ``size``).
    """

    size: int
    overlap: int

    def __call__(self, start: int, end: int) -> list[tuple[int, int]]:
        """The windows of ``text[start:end]``."""
        step = self.size - self.overlap
        spans: list[tuple[int, int]] = []
        pos = start
        while True:
            stop = min(pos + self.size, end)
            spans.append((pos, stop))
            if stop >= end:
                return spans
            pos += step


def char_windows(size: int, overlap: int) -> HardCut:
    """A hard cut into windows of ``size`` characters that start every ``size - overlap`` characters.

    Args:
        size: Window length in characters.
        overlap: Characters shared by consecutive windows (smaller than ``size``).

    Returns:
        The cutting function (a :class:`CharWindows`).
    """
    return CharWindows(size, overlap)


def strip_spans(text: str, spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Trim surrounding whitespace off each span; drop blank spans and spans inside the previous one.

    Args:
        text: The text the spans index into.
        spans: Ordered raw spans.

    Returns:
        Ordered, trimmed, non-blank spans.
    """
    out: list[tuple[int, int]] = []
    for start, end in spans:
        s, e = start, end
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s >= e:
            continue
        if out and out[-1][0] <= s and e <= out[-1][1]:
            continue
        out.append((s, e))
    return out
