"""Recursive character chunking: paragraphs, lines, sentences, clauses, words, then hard cuts."""

from __future__ import annotations

from ragindex.chunking.fixed import CharacterChunker
from ragindex.chunking.headings import Headings
from ragindex.chunking.positions import make_drafts
from ragindex.chunking.splitting import HEADINGS_ONLY, RecursiveSplitter, char_windows, strip_spans
from ragindex.types import ChunkDraft, Document


def _length(start: int, end: int) -> int:
    return end - start


class RecursiveChunker(CharacterChunker):
    """Chunks of at most ``size`` characters cut at the coarsest boundary available.

    Follows LangChain's ``RecursiveCharacterTextSplitter`` (with its markdown separators
    first): split before markdown headings, else at blank lines, else line breaks, else
    sentence ends (``.!?`` before whitespace; ``。！？`` need none), else clause punctuation,
    else whitespace, else every ``size - overlap`` characters; adjacent pieces are merged up
    to ``size`` and a chunk repeats whole trailing pieces of the previous one up to
    ``overlap`` characters. Every chunk is an exact, whitespace-trimmed substring of the
    document; together they cover every non-whitespace character. A heading with no body of its own opens the
    next chunk instead of standing alone. ``section`` is the last markdown heading above the chunk's first line
    of text (``# Guide`` then ``## Setup`` then text: ``Setup``).

    Args:
        size: Maximum chunk length in characters.
        overlap: Maximum characters repeated from the previous chunk.

    Raises:
        ConfigurationError: Invalid sizes.
    """

    name: str = "recursive"

    def __init__(self, size: int = 512, overlap: int = 64) -> None:
        super().__init__(size, overlap)
        self._hard_cut = char_windows(size, overlap)

    def chunk(self, document: Document) -> list[ChunkDraft]:
        """Split ``document`` recursively (drafts numbered 0..n-1)."""
        text = document.text
        splitter = RecursiveSplitter(text, self.size, self.overlap, _length, self._hard_cut)
        spans = strip_spans(text, splitter.split(0, len(text)))
        headings = Headings(text)
        return make_drafts(document, [(s, e, headings.section_at(body_start(text, s, e))) for s, e in spans])


def body_start(text: str, start: int, end: int) -> int:
    """Where the chunk ``text[start:end]`` leaves its leading heading lines (``start`` if it is nothing else)."""
    lead = HEADINGS_ONLY.match(text, start, end)
    return lead.end() if lead is not None and lead.end() < end else start
