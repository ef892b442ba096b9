"""What a sync is configured with besides its parts: the per-file limits and the vector kinds of each unit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragindex.types import Unit, VectorKind


def unit_kinds(kinds: Sequence[str], section_max_chars: int) -> dict[str, tuple[str, ...]] | None:
    """The vector kinds of each unit: sections carry the lexical kinds, chunks the dense one.

    None when there are no sections (``section_max_chars`` 0, or no lexical kind): every row has every kind.
    """
    lexical = tuple(k for k in kinds if k != VectorKind.DENSE)
    if section_max_chars <= 0 or not lexical:
        return None
    return {Unit.CHUNK: (VectorKind.DENSE,), Unit.SECTION: lexical}


def scored_units(kinds: Sequence[str], section_max_chars: int) -> dict[str, str]:
    """The unit each vector kind scores, e.g. ``{"dense": "chunk", "bm25": "section"}`` (chunks without sections)."""
    units = unit_kinds(kinds, section_max_chars)
    if units is None:
        return dict.fromkeys(kinds, Unit.CHUNK)
    return {kind: unit for unit, owned in units.items() for kind in owned}


@dataclass(frozen=True, slots=True)
class SyncLimits:
    """The per-file limits of a sync; each error names its setting.

    Args:
        max_file_bytes: Larger files fail (``RAGINDEX_MAX_FILE_BYTES``).
        max_chunks_per_document: A document cut into more chunks fails (``RAGINDEX_MAX_CHUNKS_PER_DOCUMENT``).
        parse_timeout_seconds: Seconds one file may take to parse; 0 parses in-process without a limit
            (``RAGINDEX_PARSE_TIMEOUT_SECONDS``).
        parse_memory_mb: Address space of the parser process (``RAGINDEX_PARSE_MEMORY_MB``; 0: no limit).
    """

    max_file_bytes: int = 50 * 1024 * 1024
    max_chunks_per_document: int = 10_000
    parse_timeout_seconds: float = 120.0
    parse_memory_mb: int = 4096
