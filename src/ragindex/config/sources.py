"""The names of the retrieval sources, and the parser of a list of them (``RAGINDEX_RECALL_ENABLED_SOURCES``)."""

from __future__ import annotations

from collections.abc import Iterable

from ragindex.types import VectorKind

__all__ = ["SOURCES", "parse_sources"]

SOURCES: tuple[str, ...] = tuple(VectorKind)
"""Every source name, in the order hybrid visits them: ``dense``, ``bm25``, ``sparse``."""


def parse_sources(value: str | Iterable[str]) -> tuple[str, ...]:
    """Source names from a comma list (``"bm25, dense"``) or an iterable of names, deduplicated, in the given order.

    Raises:
        ValueError: An unknown name (the message lists the valid ones) or no name at all.
    """
    items = value.split(",") if isinstance(value, str) else list(value)
    names: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"source names must be strings, got {item!r}; valid: {', '.join(SOURCES)}")
        name = item.strip().lower()
        if not name:
            continue
        if name not in SOURCES:
            raise ValueError(f"unknown source {item.strip()!r}; valid: {', '.join(SOURCES)}")
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError(f"no source named: at least one of {', '.join(SOURCES)} must stay enabled")
    return tuple(names)
