"""Result rows -> the frozen records of :mod:`ragindex.store.records` (no SQLAlchemy type leaves the store)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from functools import cache
from typing import Any, TypeVar

from ragindex.store.records import ChunkRow, DocumentRow, IndexMeta, OwnerRow, RunRow

RUN_STAGES = ("loading", "chunking", "dense", "bm25", "sparse")
_R = TypeVar("_R")


def record(cls: type[_R], m: Mapping[Any, Any], **computed: Any) -> _R:
    """A record dataclass from a result row: same-named columns, ``int`` fields as int, ``computed`` as given.

    JSON columns may come back NULL; a field named ``metadata`` is then ``{}``.
    """
    values: dict[str, Any] = {}
    for name, is_int in _columns(cls):  # type: ignore[arg-type]  # a type is hashable; mypy sees TypeVar
        if name in computed:
            continue
        value = m[name]
        if is_int:
            value = int(value)
        elif name == "metadata":
            value = value or {}
        values[name] = value
    return cls(**values, **computed)


@cache
def _columns(cls: type) -> tuple[tuple[str, bool], ...]:
    """A record type's field names, each with whether it is a plain ``int`` (``fields()`` per row costs ~10 us)."""
    return tuple((field.name, field.type == "int") for field in fields(cls))


def doc_row(m: Mapping[Any, Any]) -> DocumentRow:
    """A ``documents`` row."""
    return record(DocumentRow, m)


def chunk_row(m: Mapping[Any, Any]) -> ChunkRow:
    """A ``chunks`` row."""
    return record(ChunkRow, m)


def run_row(m: Mapping[Any, Any]) -> RunRow:
    """A ``pipeline_runs`` row."""
    return record(
        RunRow,
        m,
        stages={s: m[f"{s}_status"] for s in RUN_STAGES},
        durations_ms={s: m[f"{s}_ms"] for s in RUN_STAGES},
    )


def meta_row(m: Mapping[Any, Any]) -> IndexMeta:
    """An ``index_meta`` row."""
    return record(IndexMeta, m)


def owner_row(m: Mapping[Any, Any]) -> OwnerRow:
    """A ``claim_owners`` row."""
    return record(OwnerRow, m, process_started=float(m["process_started"]))
