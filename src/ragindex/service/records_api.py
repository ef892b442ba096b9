"""The records API's bodies and checks: one record (``PUT``), a batch (``POST``), and what a stored record shows.

A record's body is strict like every body of the API, and its schema says what the engine refuses (so a request
the schema allows is one the service takes): a key of 1-256 printable characters, not only spaces; exactly one
content (``text``, ``markdown``, ``data_base64`` with ``filename``, or ``chunks``); metadata of the five value
types (:mod:`ragindex.metadata`) with its names and limits. One thing no schema can say is the set's field types:
a field keeps the type of the first value the set saw, and a value of another type is refused with a 422 naming
the field.

Every refusal of the engine (:class:`~ragindex.records.RecordError`, :class:`~ragindex.metadata.MetadataError`,
both 400-class input errors) is answered as a 422 :class:`~ragindex.errors.ValidationError` whose ``field`` is the
path of the bad value in the body (``records.3.metadata.year``, ``key``), before anything is written.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, StringConstraints, field_validator
from pydantic.json_schema import WithJsonSchema

from ragindex.errors import InputError, ValidationError
from ragindex.metadata import (
    KEY_PATTERN,
    MAX_FIELDS,
    MAX_KEY_CHARS,
    MAX_LIST_ITEMS,
    MAX_SAFE_INTEGER,
    MAX_STRING_CHARS,
    RESERVED_PREFIX,
)
from ragindex.records import MAX_BATCH, MAX_RECORD_CHUNKS, RESERVED_CHUNK_FIELDS, RecordError, validate_key
from ragindex.records import MAX_KEY_CHARS as MAX_RECORD_KEY_CHARS
from ragindex.service.schemas import NOT_BLANK, _Body, _examples, _given_only, _Out

T = TypeVar("T")
MAX_TEXT_CHARS = 100_000
"""Most characters of a record's ``text``, ``markdown`` or one chunk (a longer document: an upload, or chunks)."""
MAX_DATA_BYTES = 1024 * 1024
"""Most bytes of a record's ``data_base64`` once decoded (a larger file: ``POST /v1/sets/{set_id}/documents``)."""
MAX_TITLE_CHARS = 1000
SYNC_MAX_RECORDS = 100
"""A batch of more records than this answers 202 with a job; at most this many are upserted before the answer."""
SYNC_MAX_CONTENT_BYTES = 1024 * 1024
"""A batch whose content (texts, chunks and decoded data) is larger than this answers 202 with a job."""


def _printable_class() -> str:
    """A regular-expression class of every character ``str.isprintable()`` takes, as escapes (Python and Rust).

    (Named positively: a generator draws from a class of what it may take ten times faster than from a negated one.)
    """
    ranges: list[tuple[int, int]] = []
    start: int | None = None
    for cp in range(0x110000):
        good = chr(cp).isprintable()
        if good and start is None:
            start = cp
        elif not good and start is not None:
            ranges.append((start, cp - 1))
            start = None
    if start is not None:
        ranges.append((start, 0x10FFFF))

    def esc(cp: int) -> str:
        return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"

    return "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in ranges)


END = r"(?![\s\S])"
"""The end of the text in a JSON Schema pattern: ``$`` lets Python's ``re`` (and so a schema-based generator) take
a text with one more newline at its end, which the service's patterns (Rust's ``$``) refuse."""
KEY_JSON_PATTERN = f"^[{_printable_class()}]+{END}"
"""A record key's characters as JSON Schema says them: printable ones (``str.isprintable``); not only spaces is the
schema's ``not``."""
KEY_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_RECORD_KEY_CHARS,
    "pattern": KEY_JSON_PATTERN,
    "not": {"pattern": f"^ +{END}"},
    "description": "The record's key: 1-256 printable characters (no control characters), not only spaces; "
    "`/` allowed. Unique in its set.",
}


def _record_key(value: str) -> str:
    try:
        return validate_key(value)
    except RecordError as exc:
        raise ValueError(exc.message) from exc


RecordKey = Annotated[str, AfterValidator(_record_key), WithJsonSchema(KEY_SCHEMA)]


# ---------------------------------------------------------------------- metadata values, as the schema says them
def _field_name(value: str) -> str:
    if value.startswith(RESERVED_PREFIX):
        raise ValueError(f"names starting with {RESERVED_PREFIX!r} are reserved for ragindex; rename it")
    return value


def _name_schema(reserved: Sequence[str] = ()) -> dict[str, Any]:
    refused: list[dict[str, Any]] = [{"pattern": f"^{RESERVED_PREFIX}"}]
    if reserved:
        refused.append({"enum": sorted(reserved)})
    return {
        "type": "string",
        "maxLength": MAX_KEY_CHARS,
        "pattern": f"^{KEY_PATTERN.pattern}{END}",
        "not": {"anyOf": refused},
    }


FieldName = Annotated[
    str,
    StringConstraints(max_length=MAX_KEY_CHARS, pattern=f"^{KEY_PATTERN.pattern}$"),
    AfterValidator(_field_name),
    WithJsonSchema(_name_schema()),
]
_MetaString = Annotated[str, StringConstraints(max_length=MAX_STRING_CHARS, pattern="^[^\\u0000]*$")]
_MetaInt = Annotated[int, Field(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]


def _fraction(value: object) -> object:
    # an integer is the integer branch's: read as a float, -2**53 - 1 would round into the bounds
    if isinstance(value, int):
        raise ValueError("an integer beyond ±2**53")
    return value


_MetaFloat = Annotated[
    float, BeforeValidator(_fraction), Field(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER, allow_inf_nan=False)
]
MetaValue = (
    _MetaString | bool | _MetaInt | _MetaFloat | Annotated[list[_MetaString], Field(max_length=MAX_LIST_ITEMS)] | None
)
"""A metadata value: a string, a boolean, a number within ±2**53, a list of strings, or null (no value)."""
_STRING_SCHEMA = {"type": "string", "maxLength": MAX_STRING_CHARS, "pattern": "^[^\\u0000]*$"}
VALUE_SCHEMA: dict[str, Any] = {
    "anyOf": [
        _STRING_SCHEMA,
        {"type": "boolean"},
        {"type": "number", "minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER},
        {"type": "array", "maxItems": MAX_LIST_ITEMS, "items": _STRING_SCHEMA},
        {"type": "null"},
    ]
}


def _metadata_schema(reserved: Sequence[str] = ()) -> dict[str, Any]:
    # written out: pydantic files a key pattern under patternProperties, which lets a key that misses it through
    return {
        "type": "object",
        "maxProperties": MAX_FIELDS,
        "propertyNames": _name_schema(reserved),
        "additionalProperties": VALUE_SCHEMA,
    }


Metadata = Annotated[dict[FieldName, MetaValue], Field(max_length=MAX_FIELDS), WithJsonSchema(_metadata_schema())]


def _chunk_field_name(value: str) -> str:
    if value in RESERVED_CHUNK_FIELDS:
        raise ValueError(f"{value!r} is reserved for layout facts; rename it")
    return value


ChunkFieldName = Annotated[
    str,
    StringConstraints(max_length=MAX_KEY_CHARS, pattern=f"^{KEY_PATTERN.pattern}$"),
    AfterValidator(_field_name),
    AfterValidator(_chunk_field_name),
    WithJsonSchema(_name_schema(tuple(RESERVED_CHUNK_FIELDS))),
]
ChunkMetadata = Annotated[
    dict[ChunkFieldName, MetaValue],
    Field(max_length=MAX_FIELDS),
    WithJsonSchema(_metadata_schema(tuple(RESERVED_CHUNK_FIELDS))),
]
_Text = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT_CHARS, pattern=NOT_BLANK)]
_BASE64 = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
_BASE64_CHARS = 4 * -(-MAX_DATA_BYTES // 3)
Base64 = Annotated[
    str,
    StringConstraints(max_length=_BASE64_CHARS, pattern=_BASE64),
    WithJsonSchema({"type": "string", "maxLength": _BASE64_CHARS, "pattern": _BASE64[:-1] + END}),
]


class ChunkIn(_Body):
    """A chunk the caller cut, with its own metadata (over the record's)."""

    text: _Text
    metadata: ChunkMetadata | None = None


_ONE_CONTENT = [{"required": [name]} for name in ("text", "markdown", "data_base64", "chunks")]


class RecordBody(_Body):
    """``PUT /v1/sets/{set_id}/records/{key}``: one record's content (exactly one), title and metadata."""

    model_config = _examples(
        {"text": "Vitamin D helps the body absorb calcium.", "title": "Vitamin D", "metadata": {"year": 2024}},
        {"chunks": ["First part.", {"text": "Second part.", "metadata": {"page_kind": "appendix"}}]},
        oneOf=_ONE_CONTENT,
        dependentRequired={"data_base64": ["filename"]},
    )

    # a content left out is not given; null is refused (the schema's `oneOf` counts the fields that are present)
    text: _Text | None = Field(
        None, description="Plain text, chunked by the set's chunker.", json_schema_extra=_given_only()
    )
    markdown: _Text | None = Field(
        None, description="Markdown, chunked by its headings.", json_schema_extra=_given_only()
    )
    data_base64: Base64 | None = Field(
        None,
        description="A file's bytes in base64 (at most 1 MiB decoded), parsed by `filename`'s loader.",
        json_schema_extra=_given_only(),
    )
    filename: Annotated[str, StringConstraints(min_length=1, max_length=512, pattern=NOT_BLANK)] | None = Field(
        None,
        description="The name of the file `data_base64` holds; its suffix picks the parser (`report.pdf`).",
        json_schema_extra=_given_only(),
    )
    chunks: Annotated[list[_Text | ChunkIn], Field(min_length=1, max_length=MAX_RECORD_CHUNKS)] | None = Field(
        None, description="Chunks cut by the caller, indexed as given and in order.", json_schema_extra=_given_only()
    )
    title: Annotated[str, StringConstraints(max_length=MAX_TITLE_CHARS)] | None = Field(
        None, description="The document's title (shown in hits, put in front of its chunks' context lines)."
    )
    metadata: Metadata | None = Field(
        None,
        description="Filterable fields: strings, numbers (within ±2**53), booleans, ISO-8601 dates (as strings), "
        "lists of strings; at most 64 fields, names like `year` or `dept.code`. A field keeps the type of the "
        "first value its set saw.",
    )

    @field_validator("text", "markdown", "data_base64", "filename", "chunks", mode="before")
    @classmethod
    def _not_null(cls, value: object) -> object:
        if value is None:
            raise ValueError("leave the field out when the record has no such content; null is refused")
        return value

    def to_record(self, key: str) -> dict[str, Any]:
        """The record in the form :meth:`ragindex.Engine.upsert` takes (``data`` as bytes)."""
        record: dict[str, Any] = {"key": key}
        for name in ("text", "markdown", "filename", "title"):
            value = getattr(self, name)
            if value is not None:
                record[name] = value
        if self.data_base64 is not None:
            try:
                record["data"] = base64.b64decode(self.data_base64, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise ValidationError("data_base64", "not valid base64") from exc
        if self.chunks is not None:
            record["chunks"] = [
                c if isinstance(c, str) else {"text": c.text, "metadata": dict(c.metadata or {})} for c in self.chunks
            ]
        if self.metadata is not None:
            record["metadata"] = dict(self.metadata)
        return record

    def content_bytes(self) -> int:
        """The size of its content (texts, chunks, decoded data) in UTF-8 bytes, as the batch threshold counts."""
        size = sum(len(v.encode()) for v in (self.text, self.markdown) if v is not None)
        if self.data_base64 is not None:
            size += len(self.data_base64) * 3 // 4
        for chunk in self.chunks or ():
            size += len((chunk if isinstance(chunk, str) else chunk.text).encode())
        return size


class RecordIn(RecordBody):
    """One record of a batch: its key and its content."""

    model_config = _examples(
        {"key": "faq/42", "text": "Vitamin D helps the body absorb calcium.", "metadata": {"lang": "en"}},
        oneOf=_ONE_CONTENT,
        dependentRequired={"data_base64": ["filename"]},
    )

    key: RecordKey


class RecordBatch(_Body):
    """``POST /v1/sets/{set_id}/records``: up to 1000 records, each key once."""

    model_config = _examples(
        {
            "records": [
                {"key": "faq/1", "text": "Vitamin D helps the body absorb calcium.", "metadata": {"year": 2024}},
                {"key": "faq/2", "markdown": "# Comets\n\nA comet's tail points away from the Sun."},
            ]
        }
    )

    records: list[RecordIn] = Field(
        min_length=1,
        max_length=MAX_BATCH,
        description=f"At most {MAX_BATCH} records. More than {SYNC_MAX_RECORDS} records, or more than 1 MiB of "
        "content, answer 202 with a job; fewer answer 200 once they are searchable.",
    )


class RecordOut(_Out):
    """``GET /v1/sets/{set_id}/records/{key}``: the record as the truth store holds it."""

    model_config = _examples(
        {
            "key": "faq/42",
            "doc_id": 12,
            "set_id": 1,
            "title": "Vitamin D",
            "filename": "faq/42",
            "metadata": {"year": 2024, "title": "Vitamin D"},
            "status": "SUCCESS",
            "error": None,
            "chunk_count": 1,
            "size": 41,
            "updated_at": "2025-01-01T12:00:00",
        }
    )

    key: str
    doc_id: int
    set_id: int
    title: str | None
    filename: str
    metadata: dict[str, Any]
    status: str = Field(description="PROCESSING, SUCCESS or FAILED.")
    error: str | None
    chunk_count: int
    size: int = Field(description="Bytes of its content.")
    updated_at: str | None


class RecordsJobAccepted(BaseModel):
    """``202`` answer of a batch over the synchronous threshold: poll ``GET /v1/jobs/{job_id}``."""

    model_config = _examples({"job_id": "9b2c4e1f0a7d4c3e", "status": "queued", "records": 250})

    job_id: str
    status: str
    records: int = Field(description="Records in the job.")


# ---------------------------------------------------------------------- the engine's refusals, named by path
def field_path(exc: InputError, *, prefix: str = "", keys: Mapping[str, int] | None = None) -> str:
    """Where in the body ``exc`` (a RecordError, a MetadataError) is: ``records.3.metadata.year``, ``key``."""
    context = exc.context
    if keys is not None and isinstance(context.get("key"), str) and context["key"] in keys:
        prefix = f"records.{keys[context['key']]}."  # pydantic's spelling of a place in the body
    field = str(context.get("field") or "records")
    cause = exc.__cause__
    from ragindex.metadata import MetadataError

    if isinstance(exc, MetadataError) or isinstance(cause, MetadataError):
        field = f"metadata.{field}" if context.get("field") else "metadata"
    if keys is not None and not prefix and field == "records":
        return field
    return f"{prefix}{field}"


def as_validation_error(exc: InputError, **where: Any) -> ValidationError:
    """``exc`` as the 422 the API answers: its message, its context, ``field`` the path in the body."""
    field = field_path(exc, **where)
    context = {k: v for k, v in exc.context.items() if k != "field"}
    error = ValidationError(field, exc.message, **context)
    error.__cause__ = exc
    return error


async def checked_call(call: Awaitable[T], **where: Any) -> T:
    """``await call``, its record and metadata refusals as :func:`as_validation_error`."""
    from ragindex.metadata import MetadataError

    try:
        return await call
    except (RecordError, MetadataError) as exc:
        raise as_validation_error(exc, **where) from exc


def checked(call: Callable[[], Any], **where: Any) -> Any:
    """``call()``, its record and metadata refusals as :func:`as_validation_error`."""
    from ragindex.metadata import MetadataError

    try:
        return call()
    except (RecordError, MetadataError) as exc:
        raise as_validation_error(exc, **where) from exc
