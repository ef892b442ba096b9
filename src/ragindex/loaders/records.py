"""Record files (``.json``, ``.jsonl``, ``.ndjson``): one document per record, BEIR ``corpus.jsonl`` style.

Two readings: :class:`RecordsLoader` makes a file's documents (``<path>#<id>``, synced with the file), and
:func:`read_record_file` makes :class:`~ragindex.records.Record` objects named by their own key, for
``Engine.upsert`` (``ragindex ingest --as-records``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ragindex.errors import DocumentLoadError
from ragindex.loaders._decode import decode_text, refuse_binary
from ragindex.metadata import MetadataError, normalise
from ragindex.records import Record, RecordError
from ragindex.types import Document

_LINE_SUFFIXES = (".jsonl", ".ndjson")
_MAX_LISTED_IDS = 5


class RecordsLoader:
    """Loads json/jsonl records, e.g. ``{"_id": "4983", "title": "...", "text": "...", "metadata": {}}``.

    A ``.json`` file holds one object or a list of objects; a ``.jsonl``/``.ndjson`` file holds one
    object per non-blank line. Each record becomes a document with ``source_uri`` ``<path>#<record id>``,
    where the record id is ``str(record[id_field])`` or, without that field, the record's 0-based position.
    Ids must be unique within a file. Records without any non-empty text field are skipped with a warning
    (on the first returned document); a file where no record has text is an error.

    A record that cannot be read fails alone: a line of invalid JSON, a line or list item that is not an object,
    an id that is not a scalar, or a repeated id becomes a document with its ``error`` set (``<path>#line 7``,
    ``<path>#item 3``), which the ingest records as FAILED while the file's other records are indexed. A file
    in which no record can be read at all fails as a whole, with the first error.

    Args:
        text_fields: Fields joined by a blank line to form the text (non-string values are JSON-encoded).
        id_field: The field holding the record id.
        metadata_fields: Fields kept as metadata; empty keeps every field that is not a text field.
            ``record_id`` is always added.
    """

    name: str = "records"
    suffixes: tuple[str, ...] = (".json", *_LINE_SUFFIXES)

    def __init__(
        self,
        text_fields: Sequence[str] = ("title", "text"),
        id_field: str = "_id",
        metadata_fields: Sequence[str] = (),
    ) -> None:
        if not text_fields:
            raise ValueError("text_fields must name at least one field")
        self.text_fields = tuple(text_fields)
        self.id_field = id_field
        self.metadata_fields = tuple(metadata_fields)

    def load(self, path: Path, data: bytes) -> list[Document]:
        """Parse ``data`` into one document per record.

        Returns:
            The documents of the records that have text, in file order. A file holding no
            records at all (blank, or ``[]``) gives one document with empty text.

        Raises:
            DocumentLoadError: A ``.json`` file that is not valid JSON, a file where no record can be read (with
                the first record's error), no record with any of the text fields, or binary bytes.
        """
        refuse_binary(path, data)
        text, notes = decode_text(data, path)
        warnings = list(notes)
        lines = path.suffix.lower() in _LINE_SUFFIXES
        records = list(_json_lines(path, text)) if lines else _json_document(path, text)
        if not records:
            return [Document(source_uri=str(path), text="", parser=self.name, warnings=(*warnings, "no records"))]
        if all(isinstance(record, str) for _where, record in records):  # nothing readable: the file is the problem
            raise _bad_file(path, str(records[0][1]))

        documents: list[Document] = []
        seen: dict[str, str] = {}
        skipped: list[str] = []
        for position, (where, record) in enumerate(records):
            if isinstance(record, str):
                documents.append(self._failed(path, where, record))
                continue
            record_id = self._record_id(where, record, position)
            if record_id is None:
                problem = f"{where}: record id field {self.id_field!r} must be a string or a number"
                documents.append(self._failed(path, where, problem))
                continue
            if record_id in seen:
                problem = (
                    f"{where}: duplicate record id {record_id!r} (first at {seen[record_id]}); "
                    f"record ids (field {self.id_field!r}, else the position) must be unique in a file"
                )
                documents.append(self._failed(path, where, problem))
                continue
            seen[record_id] = where
            body = self._text(record)
            if not body:
                skipped.append(record_id)
                continue
            documents.append(
                Document(
                    source_uri=f"{path}#{record_id}",
                    text=body,
                    parser=self.name,
                    metadata={**self._metadata(record), "record_id": record_id},
                    title=_title(record),
                )
            )
        if not any(d.error is None for d in documents):
            raise _bad_file(
                path,
                f"no record has any of the text fields {list(self.text_fields)}; "
                "set RAGINDEX_JSON_TEXT_FIELDS to the fields that hold the text",
            )
        if skipped:
            listed = ", ".join(repr(i) for i in skipped[:_MAX_LISTED_IDS])
            more = f" and {len(skipped) - _MAX_LISTED_IDS} more" if len(skipped) > _MAX_LISTED_IDS else ""
            warnings.append(
                f"{len(skipped)} record(s) skipped without any non-empty text field "
                f"{list(self.text_fields)}: {listed}{more}"
            )
        if warnings:
            documents[0] = replace(documents[0], warnings=tuple(warnings))
        return documents

    def _record_id(self, where: str, record: dict[str, Any], position: int) -> str | None:
        """The record's id (its position without one); None for an id that is not a scalar."""
        value = record.get(self.id_field)
        if value is None or value == "":
            return str(position)
        if isinstance(value, (dict, list)):
            return None
        return str(value)

    def _failed(self, path: Path, where: str, problem: str) -> Document:
        """The stand-in of a record that cannot be read: a document that fails alone with ``problem``."""
        return Document(source_uri=f"{path}#{where}", text="", parser=self.name, error=f"{path.name}: {problem}")

    def _text(self, record: dict[str, Any]) -> str:
        parts: list[str] = []
        for field in self.text_fields:
            value = record.get(field)
            if value is None or value in ("", [], {}):
                continue
            part = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            if part.strip():
                parts.append(part.strip())
        return "\n\n".join(parts)

    def _metadata(self, record: dict[str, Any]) -> dict[str, Any]:
        if self.metadata_fields:
            return {key: record[key] for key in self.metadata_fields if key in record}
        return {key: value for key, value in record.items() if key not in self.text_fields}


def _title(record: dict[str, Any]) -> str | None:
    title = record.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    return None


def _bad_file(path: Path, problem: str, **context: Any) -> DocumentLoadError:
    """A load error naming the file: its name leads the message, its path is in the context."""
    return DocumentLoadError(f"{path.name}: {problem}", path=str(path), **context)


def _json_lines(path: Path, text: str) -> Iterator[tuple[str, dict[str, Any] | str]]:
    """Each non-blank line's ``(where, record)``; a line that is not a JSON object gives its problem instead."""
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            yield where, f"{where}: invalid JSON ({_where_in(exc, line=False)})"
            continue
        if not isinstance(value, dict):
            yield where, f"{where}: expected a JSON object, got {type(value).__name__}"
            continue
        yield where, value


def _where_in(exc: json.JSONDecodeError, *, line: bool) -> str:
    """``Expecting value at column 5`` (``... line 2, column 5``): the decoder's message with its position.

    Some of the decoder's messages end with "at" already (``Invalid control character at``).
    """
    position = f"line {exc.lineno}, column {exc.colno}" if line else f"column {exc.colno}"
    return f"{exc.msg} {position}" if exc.msg.endswith(" at") else f"{exc.msg} at {position}"


def _json_document(path: Path, text: str) -> list[tuple[str, dict[str, Any] | str]]:
    if not text.strip():
        return []
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad_file(path, f"invalid JSON ({_where_in(exc, line=True)})", line=exc.lineno) from exc
    if isinstance(value, dict):
        return [("record 0", value)]
    if not isinstance(value, list):
        raise _bad_file(path, f"expected a JSON object or a list of objects, got {type(value).__name__}")
    records: list[tuple[str, dict[str, Any] | str]] = []
    for position, item in enumerate(value):
        where = f"item {position}"
        problem = f"{where} is {type(item).__name__}, expected a JSON object"
        records.append((where, item if isinstance(item, dict) else problem))
    return records


RECORD_SUFFIXES = RecordsLoader.suffixes
_SCALARS = (str, int, float, bool)


@dataclass(frozen=True, slots=True)
class RecordFields:
    """Which fields of a records file's objects make a record's key, text, title and metadata.

    The defaults read BEIR's ``corpus.jsonl`` (``{"_id", "title", "text", "metadata"}``).

    Args:
        key: The field holding the record's key (a string or a number; a number's key is its JSON spelling).
        text: Fields joined by a blank line to form the text (non-string values are JSON-encoded).
        title: The field holding the title (a non-blank string), or None for no title.
        metadata: Fields kept as metadata, as given; None keeps every other field whose value is a string, a
            number or a boolean (not the key, text or title fields; objects, lists and nulls are left out).
    """

    key: str = "_id"
    text: tuple[str, ...] = ("title", "text")
    title: str | None = "title"
    metadata: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not self.key:
            raise ValueError("the key field must be named")
        if not self.text:
            raise ValueError("name at least one text field")


@dataclass(slots=True)
class RecordFile:
    """What :func:`read_record_file` read: the records, the objects that failed alone, the ones without text."""

    path: Path
    records: list[Record] = dataclasses.field(default_factory=list)
    where: dict[str, str] = dataclasses.field(default_factory=dict)
    """Each record's place in the file (``line 7``, ``item 3``), by key."""
    failures: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    """``(where, problem)`` of each object that cannot be a record (the problem starts with the file's name)."""
    skipped: list[str] = dataclasses.field(default_factory=list)
    """Keys of the records without any non-empty text field."""
    notes: list[str] = dataclasses.field(default_factory=list)


def read_record_file(
    path: Path, data: bytes, fields: RecordFields = RecordFields(), *, metadata: Mapping[str, Any] | None = None
) -> RecordFile:
    """Read a ``.jsonl``/``.ndjson`` (one object per line) or ``.json`` (an object or a list) file as records.

    An object that cannot be a record fails alone, like a bad line of :class:`RecordsLoader`: invalid JSON, not an
    object, no key or a key that is not a string or a number, a key given twice in the file, a key or a metadata
    value that breaks a rule of :mod:`ragindex.records` / :mod:`ragindex.metadata`. Metadata types are not checked
    against each other here: the upsert checks the whole batch against the set's field types.

    Args:
        path: The file (named in the messages; its suffix tells lines from a JSON document).
        data: Its bytes.
        fields: Which fields make the key, text, title and metadata.
        metadata: Fields given to every record, over its own.

    Raises:
        DocumentLoadError: Binary bytes, a ``.json`` file that is not valid JSON or not an object or a list, or a
            file where no object can be read at all (with the first problem).
    """
    refuse_binary(path, data)
    text, notes = decode_text(data, path)
    out = RecordFile(path, notes=list(notes))
    lines = path.suffix.lower() in _LINE_SUFFIXES
    items = list(_json_lines(path, text)) if lines else _json_document(path, text)
    if items and all(isinstance(item, str) for _where, item in items):
        raise _bad_file(path, str(items[0][1]))
    for where, item in items:
        record = item if isinstance(item, str) else _record(where, item, fields, metadata or {})
        if isinstance(record, str):
            out.failures.append((where, f"{path.name}: {record}"))
        elif record is None:
            out.skipped.append(str(item[fields.key]) if isinstance(item, dict) else where)
        elif record.key in out.where:
            problem = f"{where}: duplicate record key {record.key!r} (first at {out.where[record.key]})"
            out.failures.append((where, f"{path.name}: {problem}"))
        else:
            out.records.append(record)
            out.where[record.key] = where
    if out.skipped:
        listed = ", ".join(repr(k) for k in out.skipped[:_MAX_LISTED_IDS])
        more = f" and {len(out.skipped) - _MAX_LISTED_IDS} more" if len(out.skipped) > _MAX_LISTED_IDS else ""
        out.notes.append(
            f"{len(out.skipped)} record(s) skipped without any non-empty text field {list(fields.text)}: {listed}{more}"
        )
    return out


def _record(where: str, item: dict[str, Any], fields: RecordFields, extra: Mapping[str, Any]) -> Record | str | None:
    """The record of one object; its problem (``line 7: ...``); None when it has no text."""
    key = item.get(fields.key)
    if key is None or key == "":
        return f"{where}: no record key (field {fields.key!r})"
    if isinstance(key, bool) or not isinstance(key, str | int | float):
        return f"{where}: record key field {fields.key!r} must be a string or a number"
    key = key if isinstance(key, str) else json.dumps(key)
    parts = []
    for name in fields.text:
        value = item.get(name)
        if value is None or value in ("", [], {}):
            continue
        part = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if part.strip():
            parts.append(part.strip())
    if not parts:
        return None
    title = item.get(fields.title) if fields.title else None
    if fields.metadata is not None:
        own = {name: item[name] for name in fields.metadata if name in item}
    else:
        taken = {fields.key, *fields.text, fields.title}
        own = {k: v for k, v in item.items() if k not in taken and isinstance(v, _SCALARS)}
    try:
        record = Record(
            key=key,
            text="\n\n".join(parts),
            title=title.strip() if isinstance(title, str) and title.strip() else None,
            metadata={**own, **extra},
        )
        normalise(record.metadata)  # a value no field can hold fails this record alone; types are the batch's
    except (RecordError, MetadataError) as exc:
        return f"{where}: {exc.message}"
    return record
