"""Structure-aware, token-based chunking: whole markdown sections packed up to the encoder's limit.

The seed's StructureAwareChunker (480 tokens, overlap 0, sections never split), measured
with the dense model's own tokenizer so that no chunk is truncated by the encoder.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_right
from collections.abc import Sequence

from ragindex.chunking.headings import Headings
from ragindex.chunking.positions import make_drafts
from ragindex.chunking.protocol import BatchTokenizer, Tokenizer
from ragindex.chunking.splitting import PARAGRAPH, SEPARATORS, RecursiveSplitter, strip_spans
from ragindex.errors import ConfigurationError
from ragindex.types import ChunkDraft, Document

logger = logging.getLogger(__name__)

SPECIAL_TOKENS = 2
"""Tokens the encoder adds around every input ([CLS] and [SEP])."""

_BLOCK_CHARS = 100_000
_WHITESPACE = re.compile(r"\s")


class StructureChunker:
    """Packs whole consecutive markdown sections into chunks of at most ``limit`` tokens.

    A section is a heading line (``#`` .. ``######``, outside code fences) and its body up to
    the next heading of any level; text before the first heading is a section of its own,
    and a heading with no body travels with the next section. Documents without headings
    use paragraphs as the units. Sections are packed greedily in document order and never
    split unless one alone exceeds the limit; such a section is split recursively
    (paragraphs, lines, sentences, clauses, words, then token boundaries) with
    ``overlap_tokens`` overlap. ``section`` is the last heading at or before the chunk start,
    so a packed chunk is labelled with its first section. ``token_count`` is set on every
    draft (without special tokens).

    The limit is ``min(max_tokens, tokenizer.max_length - 2)``; when ``max_tokens`` is larger,
    :attr:`truncation_warning` says so (also logged once, at construction).

    Args:
        tokenizer: The dense model's tokenizer.
        max_tokens: Tokens per chunk (the seed uses 480); 0: the encoder's window (``max_length - 2``).
        overlap_tokens: Token overlap between the pieces of a split section.

    Raises:
        ConfigurationError: Invalid sizes, or an overlap not smaller than the effective limit.
    """

    name: str = "structure"

    def __init__(self, tokenizer: Tokenizer, max_tokens: int = 480, overlap_tokens: int = 0) -> None:
        if max_tokens < 0:
            raise ConfigurationError(f"chunk_tokens must be at least 0, got {max_tokens}", field="chunk_tokens")
        capacity = tokenizer.max_length - SPECIAL_TOKENS
        if capacity < 1:
            raise ConfigurationError(f"the tokenizer's max_length ({tokenizer.max_length}) leaves no room for text")
        max_tokens = max_tokens or capacity  # 0: the encoder's whole window
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        self.overlap_tokens = overlap_tokens
        self.limit = min(max_tokens, capacity)
        self.truncation_warning: str | None = None
        self.warnings: list[str] = []
        if max_tokens > capacity:
            self.truncation_warning = (
                f"chunk_tokens={max_tokens} exceeds the encoder's maximum sequence length "
                f"({tokenizer.max_length} tokens incl. {SPECIAL_TOKENS} special tokens); using {self.limit}"
            )
            self.warnings.append(self.truncation_warning)
            logger.warning("%s", self.truncation_warning)
        if not 0 <= overlap_tokens < self.limit:
            raise ConfigurationError(
                f"chunk_token_overlap ({overlap_tokens}) must be >= 0 and smaller than the effective chunk limit "
                f"({self.limit} tokens)",
                field="chunk_token_overlap",
            )

    def config(self) -> dict[str, object]:
        """The settings that shape the output, including the effective limit and the tokenizer."""
        return {
            "name": self.name,
            "max_tokens": self.max_tokens,
            "overlap_tokens": self.overlap_tokens,
            "limit": self.limit,
            "tokenizer": str(getattr(self.tokenizer, "name", type(self.tokenizer).__name__)),
            "tokenizer_max_length": self.tokenizer.max_length,
        }

    def chunk(self, document: Document) -> list[ChunkDraft]:
        """Split ``document`` into section-aligned chunks of at most :attr:`limit` tokens.

        Args:
            document: The document to split.

        Returns:
            Drafts numbered 0..n-1, each with ``token_count``.
        """
        return self._chunk(document, self._token_ends(document.text))

    def chunk_many(self, documents: Sequence[Document]) -> list[list[ChunkDraft]]:
        """Split several documents, tokenizing them in batches when the tokenizer supports it.

        Args:
            documents: Documents to split.

        Returns:
            One list of drafts per document, in order (as :meth:`chunk` would return).
        """
        tokenizer = self.tokenizer
        if not isinstance(tokenizer, BatchTokenizer):
            return [self.chunk(d) for d in documents]
        small = [i for i, d in enumerate(documents) if len(d.text) <= _BLOCK_CHARS]
        batched = tokenizer.offsets_many([documents[i].text for i in small])
        ends: dict[int, list[int]] = {i: _ends(offsets) for i, offsets in zip(small, batched, strict=True)}
        return [self._chunk(d, ends[i] if i in ends else self._token_ends(d.text)) for i, d in enumerate(documents)]

    # -- internals -----------------------------------------------------------------------------

    def _token_ends(self, text: str) -> list[int]:
        """End offset of every token of ``text`` (tokenized in blocks cut at whitespace when long)."""
        if len(text) <= _BLOCK_CHARS:
            return _ends(self.tokenizer.offsets(text))
        blocks: list[tuple[int, int]] = []
        start = 0
        while start < len(text):
            space = _WHITESPACE.search(text, min(start + _BLOCK_CHARS, len(text)))
            stop = space.end() if space else len(text)
            blocks.append((start, stop))
            start = stop
        texts = [text[s:e] for s, e in blocks]
        tokenizer = self.tokenizer
        per_block = (
            tokenizer.offsets_many(texts)
            if isinstance(tokenizer, BatchTokenizer)
            else [tokenizer.offsets(t) for t in texts]
        )
        ends: list[int] = []
        for (s, _), offsets in zip(blocks, per_block, strict=True):
            ends.extend(s + end for _, end in offsets)
        return ends

    def _chunk(self, document: Document, ends: list[int]) -> list[ChunkDraft]:
        text = document.text
        if not text.strip():
            return []
        limit = self.limit

        def measure(start: int, end: int) -> int:
            return bisect_right(ends, end) - bisect_right(ends, start)

        unsafe: set[int] = set()
        splitter = RecursiveSplitter(
            text, limit, self.overlap_tokens, measure, lambda s, e: self._hard_cut(text, ends, s, e, unsafe)
        )
        headings = Headings(text)
        raw: list[tuple[int, int]] = []
        first = last = -1
        total = 0
        for start, end in _units(text, headings):
            n = measure(start, end)
            if n > limit:
                if first >= 0:
                    raw.append((first, last))
                    first = -1
                raw.extend(splitter.split(start, end, PARAGRAPH))
                continue
            if first >= 0 and total + n > limit:
                raw.append((first, last))
                first = -1
            if first < 0:
                first, total = start, 0
            last = end
            total += n
        if first >= 0:
            raw.append((first, last))
        spans = strip_spans(text, raw)
        counts = [self.tokenizer.count(text[s:e]) if s in unsafe or e in unsafe else measure(s, e) for s, e in spans]
        return make_drafts(document, [(s, e, headings.section_at(s)) for s, e in spans], counts)

    def _hard_cut(self, text: str, ends: list[int], start: int, end: int, unsafe: set[int]) -> list[tuple[int, int]]:
        """Windows of at most ``limit`` tokens cut at token boundaries, each verified by re-tokenizing."""
        first = bisect_right(ends, start)
        stop = bisect_right(ends, end)
        limit, step_back = self.limit, self.overlap_tokens
        spans: list[tuple[int, int]] = []
        j, a = first, start
        while True:
            size = limit
            while True:
                k = j + size
                b = end if k >= stop else ends[k - 1]
                excess = self.tokenizer.count(text[a:b]) - limit
                if excess <= 0 or size == 1:
                    break
                size = max(1, size - excess)
            spans.append((a, b))
            if k >= stop:
                return spans
            unsafe.add(b)
            j += max(1, size - step_back)
            a = ends[j - 1]
            unsafe.add(a)


def _ends(offsets: Sequence[tuple[int, int]]) -> list[int]:
    ends = [end for _, end in offsets]
    if any(x > y for x, y in zip(ends, ends[1:], strict=False)):
        ends.sort()
    return ends


def _units(text: str, headings: Headings) -> list[tuple[int, int]]:
    """Sections (heading + body; a body-less heading joins the next section), else paragraphs."""
    if not headings:
        cuts = [m.end() for m in SEPARATORS[PARAGRAPH].finditer(text) if 0 < m.end() < len(text)]
        bounds = [0, *cuts, len(text)]
        return list(zip(bounds, bounds[1:], strict=False))
    heading_starts = frozenset(h.start for h in headings.items)
    bounds = [0, *sorted(heading_starts - {0}), len(text)]
    units: list[tuple[int, int]] = []
    pending = -1
    for start, end in zip(bounds, bounds[1:], strict=False):
        begin = start if pending < 0 else pending
        heading_only = "\n" not in text[start:end].strip()
        if heading_only and end < len(text) and start in heading_starts:
            pending = begin
            continue
        units.append((begin, end))
        pending = -1
    if pending >= 0:
        units.append((pending, len(text)))
    return units
