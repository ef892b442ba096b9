"""Fixed character windows: the seed's ``split_fixed`` (512 chars, 64 overlap) with positions."""

from __future__ import annotations

from ragindex.chunking.headings import Headings
from ragindex.chunking.positions import Span, make_drafts
from ragindex.errors import ConfigurationError
from ragindex.types import ChunkDraft, Document


def check_sizes(size: int, overlap: int, unit: str = "characters") -> None:
    """Reject a size/overlap pair no chunker can honour.

    Args:
        size: Chunk size (> 0).
        overlap: Overlap (>= 0 and smaller than ``size``).
        unit: What the sizes count, for the message.

    Raises:
        ConfigurationError: ``size < 1``, ``overlap < 0`` or ``overlap >= size``.
    """
    if size < 1:
        raise ConfigurationError(f"chunk size must be at least 1 {unit}, got {size}", field="chunk_size")
    if not 0 <= overlap < size:
        raise ConfigurationError(
            f"chunk overlap ({overlap} {unit}) must be >= 0 and smaller than the chunk size ({size})",
            field="chunk_overlap",
        )


class CharacterChunker:
    """What the character chunkers share: ``size`` and ``overlap`` checked when built, and :meth:`config`."""

    name: str = ""

    def __init__(self, size: int = 512, overlap: int = 64) -> None:
        check_sizes(size, overlap)
        self.size = size
        self.overlap = overlap

    def config(self) -> dict[str, object]:
        """The settings that shape the output."""
        return {"name": self.name, "size": self.size, "overlap": self.overlap}


class FixedChunker(CharacterChunker):
    """Character windows of ``size`` starting every ``size - overlap`` characters (seed 001).

    Each window is the verbatim slice ``text[start:start + size]``; whitespace-only windows are
    dropped. ``section`` is the last markdown heading at or before the window start.

    Args:
        size: Window length in characters.
        overlap: Characters shared by consecutive windows.

    Raises:
        ConfigurationError: Invalid sizes.
    """

    name: str = "fixed"

    def chunk(self, document: Document) -> list[ChunkDraft]:
        """Split ``document`` into fixed windows (drafts numbered 0..n-1)."""
        text = document.text
        headings = Headings(text)
        step = self.size - self.overlap
        spans: list[Span] = [
            (start, min(start + self.size, len(text)), headings.section_at(start))
            for start in range(0, len(text), step)
        ]
        return make_drafts(document, spans)
