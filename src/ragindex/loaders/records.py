"""Record files (``.json``, ``.jsonl``, ``.ndjson``): one document per record, BEIR ``corpus.jsonl`` style."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ragindex.errors import DocumentLoadError
from ragindex.loaders._decode import decode_text, refuse_binary
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
