"""Chunker selection by name (``RAGINDEX_CHUNKER``, the ``chunking`` settings section)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ragindex.chunking.fixed import FixedChunker
from ragindex.chunking.layout import LayoutChunker
from ragindex.chunking.protocol import Chunker, Tokenizer
from ragindex.chunking.recursive import RecursiveChunker
from ragindex.chunking.structure import StructureChunker
from ragindex.chunking.whole import WholeIfFits
from ragindex.errors import ConfigurationError

if TYPE_CHECKING:
    from ragindex.config.sections import ChunkingSettings

CHUNKER_NAMES: tuple[str, ...] = ("fixed", "recursive", "structure")


def build_chunker(
    name: str,
    *,
    chunk_size: int = 512,
    chunk_overlap: int = 64,
    chunk_tokens: int = 480,
    chunk_token_overlap: int = 0,
    tokenizer_factory: Callable[[], Tokenizer] | None = None,
    whole_if_fits: bool = False,
) -> Chunker:
    """The chunker called ``name``.

    Args:
        name: ``fixed``, ``recursive`` or ``structure``.
        chunk_size: Characters per chunk (``fixed``, ``recursive``).
        chunk_overlap: Character overlap (``fixed``, ``recursive``).
        chunk_tokens: Tokens per chunk (``structure``; capped at the encoder's maximum).
        chunk_token_overlap: Token overlap when ``structure`` must split a section.
        tokenizer_factory: Returns the dense model's tokenizer; called for ``structure``, and for ``whole_if_fits``.
        whole_if_fits: ``fixed`` and ``recursive`` keep a document that fits the dense model's window as one
            chunk (:class:`~ragindex.chunking.whole.WholeIfFits`); needs ``tokenizer_factory``. ``structure``
            does so already (it packs whole sections up to the window).

    Returns:
        The chunker, wrapped in :class:`~ragindex.chunking.layout.LayoutChunker` (tables and pages of parsed
        layouts; documents without layout pass through unchanged).

    Raises:
        ConfigurationError: Unknown name, invalid sizes, or ``structure`` without a tokenizer.
    """
    if name in ("fixed", "recursive"):
        text: Chunker = (FixedChunker if name == "fixed" else RecursiveChunker)(chunk_size, chunk_overlap)
        chunker: Chunker = LayoutChunker(text, limit=chunk_size)
        if whole_if_fits:
            if tokenizer_factory is None:
                raise ConfigurationError("whole_if_fits needs the dense model's tokenizer (tokenizer_factory)")
            chunker = WholeIfFits(chunker, tokenizer_factory(), cuts_above=chunk_size)
        return chunker
    if name == "structure":
        if tokenizer_factory is None:
            raise ConfigurationError("the structure chunker needs the dense model's tokenizer (tokenizer_factory)")
        structure = StructureChunker(tokenizer_factory(), chunk_tokens, chunk_token_overlap)
        return LayoutChunker(structure, limit=structure.limit, measure=structure.tokenizer.count, counts_tokens=True)
    raise ConfigurationError(
        f"unknown chunker {name!r}; valid chunkers: {', '.join(CHUNKER_NAMES)}", field="chunker", value=name
    )


def chunker_from_settings(chunking: ChunkingSettings, *, tokenizer_model: str, local_model: bool = True) -> Chunker:
    """The chunker ``chunking`` selects; ``structure`` and ``chunk_whole_if_fits`` use ``tokenizer_model``'s tokenizer.

    Args:
        chunking: The chunking section of the settings (``settings.chunking``).
        tokenizer_model: The dense model whose tokenizer ``structure`` counts with (``settings.dense_model``).
        local_model: Whether that model is the one that embeds (not an embeddings API): ``chunk_whole_if_fits``
            needs its window, so it is off otherwise.

    Returns:
        The chunker.

    Raises:
        ConfigurationError: As :func:`build_chunker`, or the model's tokenizer is not available locally.
    """

    def tokenizer() -> Tokenizer:
        from ragindex.chunking.tokens import tokenizer_for_model

        return tokenizer_for_model(tokenizer_model)

    return build_chunker(
        chunking.chunker,
        chunk_size=chunking.chunk_size,
        chunk_overlap=chunking.chunk_overlap,
        chunk_tokens=chunking.chunk_tokens,
        chunk_token_overlap=chunking.chunk_token_overlap,
        tokenizer_factory=tokenizer,
        whole_if_fits=chunking.chunk_whole_if_fits and local_model,
    )
