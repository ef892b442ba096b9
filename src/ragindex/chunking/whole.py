"""A document the dense model reads whole stays one chunk (``RAGINDEX_CHUNK_WHOLE_IF_FITS``).

Chunks are the dense unit. A character chunker cuts a 900-character abstract into two chunks of ~110 tokens
each, although all-MiniLM-L6-v2 reads 256 tokens: each half is then matched without the other's context, and the
whole-document dense baseline beats it on short documents (Debian package descriptions: 0.8773 vs 0.8669 nDCG@10;
docs/evaluation.md, "The dense unit"). :class:`WholeIfFits` keeps such a document as one chunk and leaves every
longer one to the configured chunker, whose smaller chunks are the better unit there (SciFact's longer
abstracts).
"""

from __future__ import annotations

from ragindex.chunking.headings import Headings
from ragindex.chunking.positions import make_drafts
from ragindex.chunking.protocol import Chunker, Tokenizer
from ragindex.chunking.recursive import body_start
from ragindex.chunking.splitting import strip_spans
from ragindex.types import ChunkDraft, Document

SPECIAL_TOKENS = 2
"""[CLS] and [SEP]: the encoder's window less these is what a text may hold."""

CONTEXT_RESERVE = 16
"""Tokens kept free for the chunk's ``Title > Heading`` context line, which the indexed text puts in front."""

MAX_CHARS_PER_TOKEN = 16
"""No real text averages more characters per token: a longer text cannot fit, and is not tokenized to find out."""


class WholeIfFits:
    """Keeps a document as one chunk when it fits the dense model's window; ``inner`` cuts every other one.

    Args:
        inner: The configured chunker (``fixed`` or ``recursive``).
        tokenizer: The dense model's tokenizer; its ``max_length`` is the window.
        cuts_above: Length in characters up to which ``inner`` gives one chunk anyway (its chunk size): such a
            document is left to it without counting tokens.

    Documents with layout blocks (tables, placed pages) are left to ``inner`` too: their chunks carry pages and
    table pieces that one whole chunk would lose.
    """

    def __init__(self, inner: Chunker, tokenizer: Tokenizer, *, cuts_above: int) -> None:
        self.inner = inner
        self.name = inner.name
        self.tokenizer = tokenizer
        self.cuts_above = cuts_above
        self.capacity = tokenizer.max_length - SPECIAL_TOKENS - CONTEXT_RESERVE

    def config(self) -> dict[str, object]:
        """The wrapped chunker's settings and the window a whole document must fit."""
        return {**self.inner.config(), "whole_if_fits": self.capacity}

    def fits(self, text: str) -> bool:
        """Whether the dense model reads ``text`` whole, with room for its context line."""
        if len(text) > self.capacity * MAX_CHARS_PER_TOKEN:
            return False
        return self.tokenizer.count(text) <= self.capacity

    def chunk(self, document: Document) -> list[ChunkDraft]:
        """One chunk for a document that fits (and would be cut), else the wrapped chunker's chunks."""
        text = document.text
        if document.blocks or len(text.strip()) <= self.cuts_above or not self.fits(text):
            return self.inner.chunk(document)
        headings = Headings(text)
        spans = strip_spans(text, [(0, len(text))])
        return make_drafts(document, [(s, e, headings.section_at(body_start(text, s, e))) for s, e in spans])
