"""Records: documents that the caller names by a key and hands over whole (``Engine.upsert``).

A record is one document of a set, named by its **key** (1-256 printable characters, unique per ``(user_id,
set_id)``), with exactly one content: ``text``, ``markdown``, a file's bytes (``data`` with its ``filename``, parsed
by the loader of its suffix) or ``chunks`` the caller already cut (indexed as given, in order). ``title`` and
``metadata`` are optional; each chunk may carry its own ``metadata`` too. See ``docs/records-and-filters.md``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragindex.errors import InputError
from ragindex.hashing import canonical_json

MAX_KEY_CHARS = 256
MAX_BATCH = 1000
"""Most records of one ``Engine.upsert`` call (and of one HTTP batch)."""
MAX_RECORD_CHUNKS = 10_000
RESERVED_CHUNK_FIELDS = frozenset({"bbox", "element_types", "pages", "ocr", "ocr_confidence", "heading_path"})
"""Chunk metadata names the layout parser uses for a chunk's own facts: a caller's chunk fields cannot take them."""
RECORD_URI_PREFIX = "record:"
"""A record's ``file_uri``: never an absolute path, so no folder sync ever counts a record as a file gone."""

_CONTENTS = ("text", "markdown", "data", "chunks")
_FIELDS = frozenset({"key", *_CONTENTS, "filename", "title", "metadata"})


class RecordError(InputError):
    """A record that cannot be indexed as given (HTTP 422, exit code 2); nothing of its batch was written."""


@dataclass(frozen=True, slots=True)
class RecordChunk:
    """A chunk the caller cut: its text and its own metadata (over the record's)."""

    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Record:
    """One document named by the caller's ``key``, with exactly one of ``text``, ``markdown``, ``data`` or ``chunks``.

    Args:
        key: The caller's id of the document, unique in its set (1-256 printable characters).
        text: Plain text, chunked by the set's chunker.
        markdown: Markdown, chunked by headings like a ``.md`` file (its first ``#`` heading is the title).
        data: A file's bytes, parsed by the loader of ``filename``'s suffix (pdf, docx, html, ...).
        filename: The name of the file ``data`` holds (required with ``data``).
        chunks: Chunks cut by the caller (strings or :class:`RecordChunk`), indexed as given, in order.
        title: The document's title (shown in hits and put in front of its chunks' context lines).
        metadata: Filterable fields of the document (see :mod:`ragindex.metadata`).

    Raises:
        RecordError: A bad key, no content or more than one, ``data`` without ``filename``, an empty chunk list or
            an empty chunk; metadata problems are checked by the upsert, against the set's field types.
    """

    key: str
    text: str | None = None
    markdown: str | None = None
    data: bytes | None = None
    filename: str | None = None
    chunks: Sequence[RecordChunk | str | Mapping[str, Any]] | None = None
    title: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validate_key(self.key)
        given = [name for name in _CONTENTS if getattr(self, name) is not None]
        if len(given) != 1:
            what = "none" if not given else " and ".join(given)
            raise RecordError(
                f"record {self.key!r}: give exactly one of text, markdown, data (with filename) or chunks; got {what}",
                field="content",
                key=self.key,
            )
        if self.data is not None and not (self.filename and self.filename.strip()):
            raise RecordError(
                f"record {self.key!r}: data needs its filename (its suffix picks the parser, e.g. report.pdf)",
                field="filename",
                key=self.key,
            )
        if self.chunks is not None:
            object.__setattr__(self, "chunks", tuple(_chunk(self.key, i, c) for i, c in enumerate(self.chunks)))
            if not self.chunks:
                raise RecordError(f"record {self.key!r}: chunks is empty; give at least one", field="chunks")
            if len(self.chunks) > MAX_RECORD_CHUNKS:
                raise RecordError(
                    f"record {self.key!r}: {len(self.chunks)} chunks, over the limit of {MAX_RECORD_CHUNKS}",
                    field="chunks",
                )
        for name in ("text", "markdown", "title"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise RecordError(f"record {self.key!r}: {name} must be a string", field=name, key=self.key)
            if name != "title" and value is not None and not value.strip():
                raise RecordError(f"record {self.key!r}: its {name} is empty", field=name, key=self.key)
        if self.data is not None and not isinstance(self.data, bytes | bytearray):
            raise RecordError(f"record {self.key!r}: data must be bytes", field="data", key=self.key)
        if not isinstance(self.metadata, Mapping):
            raise RecordError(f"record {self.key!r}: metadata must be an object", field="metadata", key=self.key)

    @classmethod
    def from_dict(cls, value: Mapping[str, Any] | Record) -> Record:
        """A record from its dict form (``{"key": ..., "text": ...}``); unknown fields are refused."""
        if isinstance(value, Record):
            return value
        if not isinstance(value, Mapping):
            raise RecordError(f"a record must be an object or a ragindex.Record, got {type(value).__name__}")
        unknown = sorted(set(value) - _FIELDS)
        if unknown:
            raise RecordError(
                f"record {value.get('key')!r}: unknown field(s) {', '.join(unknown)}; a record has "
                f"{', '.join(sorted(_FIELDS))}",
                field=unknown[0],
            )
        if "key" not in value:
            raise RecordError("a record needs its key", field="key")
        return cls(**{k: (v if k != "metadata" or v is not None else {}) for k, v in value.items()})

    @property
    def content_kind(self) -> str:
        """Which content the record carries: ``text``, ``markdown``, ``data`` or ``chunks``."""
        return next(name for name in _CONTENTS if getattr(self, name) is not None)

    def fingerprint(self, metadata: Mapping[str, Any]) -> str:
        """The record hash: SHA-256 of its content, filename, title and (normalised) metadata, in one spelling.

        An upsert whose record hash is the recorded one changes nothing and costs nothing.
        """
        content: Any
        if self.data is not None:
            content = hashlib.sha256(self.data).hexdigest()
        elif self.chunks is not None:
            content = [[c.text, dict(c.metadata)] for c in self.chunks if isinstance(c, RecordChunk)]
        else:
            content = self.text if self.text is not None else self.markdown
        body = [self.content_kind, content, self.filename, self.title, dict(metadata)]
        return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def validate_key(key: Any) -> str:
    """``key`` if it is a valid record key (1-256 printable characters), else :class:`RecordError`."""
    if not isinstance(key, str):
        raise RecordError(f"a record key must be a string, got {type(key).__name__}", field="key")
    if not key or not key.strip():
        raise RecordError("a record key must not be empty or blank", field="key")
    if len(key) > MAX_KEY_CHARS:
        raise RecordError(
            f"record key {key[:40]!r}... is {len(key)} characters, over the limit of {MAX_KEY_CHARS}", field="key"
        )
    if not key.isprintable():
        bad = next(c for c in key if not c.isprintable())
        raise RecordError(
            f"record key {key!r} holds the control character {bad!r}; keys are printable text", field="key"
        )
    return key


def records_of(records: Iterable[Record | Mapping[str, Any]]) -> list[Record]:
    """The records of one upsert, checked: each valid, at most :data:`MAX_BATCH`, no key twice.

    Raises:
        RecordError: The first problem, naming the record; nothing is written.
    """
    if isinstance(records, Record | Mapping):
        records = [records]  # one record: a convenience
    out = [Record.from_dict(r) for r in records]
    if len(out) > MAX_BATCH:
        raise RecordError(
            f"{len(out)} records in one upsert, over the limit of {MAX_BATCH}; send them in batches",
            field="records",
            limit=MAX_BATCH,
        )
    seen: set[str] = set()
    for record in out:
        if record.key in seen:
            raise RecordError(f"record key {record.key!r} is given twice in one upsert", field="key", key=record.key)
        seen.add(record.key)
    return out


def _chunk(key: str, index: int, chunk: RecordChunk | str | Mapping[str, Any]) -> RecordChunk:
    if isinstance(chunk, str):
        chunk = RecordChunk(chunk)
    elif isinstance(chunk, Mapping):
        unknown = sorted(set(chunk) - {"text", "metadata"})
        if unknown or "text" not in chunk:
            raise RecordError(
                f"record {key!r}: chunk {index} must be {{text, metadata?}}"
                + (f"; unknown field(s) {', '.join(unknown)}" if unknown else ""),
                field=f"chunks[{index}]",
            )
        chunk = RecordChunk(chunk["text"], chunk.get("metadata") or {})
    if not isinstance(chunk, RecordChunk) or not isinstance(chunk.text, str):
        raise RecordError(f"record {key!r}: chunk {index} must be a string or {{text, metadata?}}", field="chunks")
    if not chunk.text.strip():
        raise RecordError(f"record {key!r}: chunk {index} is empty", field=f"chunks[{index}]")
    reserved = sorted(RESERVED_CHUNK_FIELDS & set(chunk.metadata))
    if reserved:
        raise RecordError(
            f"record {key!r}: chunk {index} metadata field {reserved[0]!r} is reserved for layout facts; rename it",
            field=f"chunks[{index}].metadata.{reserved[0]}",
        )
    return chunk
