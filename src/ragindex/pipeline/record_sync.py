"""Upserting records: the caller's documents, staged and indexed like files (``SourceSync.upsert``).

Every record of a batch is checked first (its key, content and metadata, against the set's field types), so a bad
record refuses the whole batch before anything is written. Then each record whose record hash differs from the
recorded one becomes a :class:`~ragindex.types.Document` (parsed in the parse child when it is a file's bytes) and
goes through the file path's staging: the chunk diff, sections, the state machine, the embedding cache. The batch's
chunks are indexed before the call returns, so an upsert that returns is searchable (read your writes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragindex.chunking.cutter import Cut
from ragindex.chunking.sections import with_sections
from ragindex.errors import DocumentTooLargeError
from ragindex.hashing import sha256_text
from ragindex.loaders.markdown import first_h1
from ragindex.metadata import FieldType, MetadataError, normalise
from ragindex.records import RECORD_URI_PREFIX, Record, RecordChunk, RecordError
from ragindex.types import CHUNK_FIELDS, ChunkDraft, Document


@dataclass(frozen=True, slots=True)
class CheckedRecord:
    """A record with its metadata normalised against the set's field types, and its record hash."""

    record: Record
    metadata: dict[str, Any]
    chunk_fields: tuple[dict[str, Any], ...]  # normalised fields of each given chunk (empty without chunks)
    record_hash: str

    @property
    def uri(self) -> str:
        """The ``file_uri`` the record is recorded under."""
        return RECORD_URI_PREFIX + self.record.key


def check_records(records: Sequence[Record], known: Mapping[str, str]) -> tuple[list[CheckedRecord], dict[str, str]]:
    """Normalise every record's metadata against the set's ``known`` field types (and against each other).

    Returns:
        The checked records and the types of the fields they add to the set.

    Raises:
        RecordError: The first record whose metadata breaks a rule, naming the record and the field.
    """
    types: dict[str, FieldType] = {name: FieldType(kind) for name, kind in known.items()}
    added: dict[str, str] = {}
    checked: list[CheckedRecord] = []
    for record in records:
        try:
            metadata, found = normalise(record.metadata, types)
            chunk_fields: list[dict[str, Any]] = []
            for chunk in record.chunks or ():
                assert isinstance(chunk, RecordChunk)  # Record turns every chunk into one
                fields, chunk_types = normalise(chunk.metadata, {**types, **found})
                chunk_fields.append(fields)
                found |= chunk_types
        except MetadataError as exc:
            raise RecordError(f"record {record.key!r}: {exc.message}", key=record.key, **exc.context) from exc
        for name, kind in found.items():
            if name not in types:
                types[name] = kind
                added[name] = str(kind)
        checked.append(CheckedRecord(record, metadata, tuple(chunk_fields), record.fingerprint(metadata)))
    return checked, added


def record_document(checked: CheckedRecord, parsed: Document | None = None) -> Document:
    """The document of a record: its text (or ``parsed``, a file's bytes as its loader read them), named by its key."""
    record = checked.record
    key = record.key
    if parsed is not None:
        return Document(
            source_uri=key,
            text=parsed.text,
            parser=parsed.parser,
            metadata=parsed.metadata,
            pages=parsed.pages,
            title=record.title or parsed.title,
            warnings=parsed.warnings,
            blocks=parsed.blocks,
        )
    if record.markdown is not None:
        return Document(key, record.markdown, "markdown", title=record.title or first_h1(record.markdown))
    if record.chunks is not None:
        text = "\n\n".join(c.text for c in record.chunks if isinstance(c, RecordChunk))
        return Document(key, text, "chunks", title=record.title)
    return Document(key, record.text or "", "text", title=record.title)


def given_cut(
    checked: CheckedRecord, document: Document, *, max_chunks: int, section_max_chars: int, contextual: bool
) -> Cut:
    """The drafts of a record whose chunks the caller cut: one draft per chunk, in order, then their sections.

    Each chunk's text is its place in the document's text (the chunks joined by blank lines), so context expansion
    and sections read it like any other document's.

    Raises:
        DocumentTooLargeError: More chunks than ``max_chunks``.
    """
    chunks = [c for c in checked.record.chunks or () if isinstance(c, RecordChunk)]
    if len(chunks) > max_chunks:
        raise DocumentTooLargeError(
            f"record {checked.record.key!r} gives {len(chunks)} chunks, over the limit of {max_chunks} "
            "(RAGINDEX_MAX_CHUNKS_PER_DOCUMENT)",
            chunks=len(chunks),
            limit=max_chunks,
        )
    drafts: list[ChunkDraft] = []
    start, line = 0, 1
    for index, (chunk, fields) in enumerate(zip(chunks, checked.chunk_fields, strict=True)):
        end = start + len(chunk.text)
        lines = chunk.text.count("\n")
        drafts.append(
            ChunkDraft(
                index=index,
                text=chunk.text,
                start_char=start,
                end_char=end,
                start_line=line,
                end_line=line + lines,
                metadata={CHUNK_FIELDS: fields} if fields else {},
            )
        )
        start, line = end + 2, line + lines + 2
    return Cut(with_sections(document, drafts, max_chars=section_max_chars, contextual=contextual), len(drafts))


def record_path(record: Record) -> Path:
    """The path a record's content is parsed and named as (only its name and suffix matter)."""
    if record.filename:
        return Path(Path(record.filename).name or "record")
    return Path("record.md" if record.markdown is not None else "record.txt")


def content_hash(document: Document) -> str:
    """The hash of a record's indexed text (what decides whether its chunks changed)."""
    return sha256_text(document.text)
