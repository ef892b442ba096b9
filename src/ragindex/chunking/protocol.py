"""The chunker seam: a :class:`~ragindex.types.Document` -> ordered :class:`~ragindex.types.ChunkDraft` pieces."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ragindex.types import ChunkDraft, Document


class Tokenizer(Protocol):
    """The dense model's tokenizer, as the token-based chunker needs it (no torch required)."""

    @property
    def max_length(self) -> int:
        """Maximum sequence length (tokens, special tokens included) the encoder reads before truncating."""
        ...

    def count(self, text: str) -> int:
        """Number of tokens of ``text`` without special tokens."""
        ...

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span of every token of ``text`` (without special tokens), in order."""
        ...


@runtime_checkable
class BatchTokenizer(Tokenizer, Protocol):
    """A :class:`Tokenizer` that also tokenizes many texts in one call (used when present)."""

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts`` (without special tokens), in order."""
        ...

    def offsets_many(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        """Token offsets of each of ``texts`` (without special tokens), in order."""
        ...


class Chunker(Protocol):
    """Splits one document into chunks; deterministic for the same input and settings."""

    name: str

    def config(self) -> dict[str, object]:
        """The settings that shape the output (recorded in the index metadata)."""
        ...

    def chunk(self, document: Document) -> list[ChunkDraft]:
        """Split ``document``; whitespace-only pieces are dropped; indices are 0..n-1."""
        ...
