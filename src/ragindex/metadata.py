"""What a metadata value can be: five field types, their limits, and one canonical form.

Metadata travels twice: as JSON in the SQL truth store (the output of :func:`normalise`: dates as ISO-8601
strings) and as the ``meta`` payload of every Qdrant point (:func:`payload_value`: dates as epoch seconds,
so that date ranges are float ranges). A field keeps the type of the first value a set saw for it
(``known``), so the same filter means the same thing for every document of the set.

Two engine facts shape the payload form: Qdrant Edge 0.9 turns ``MatchValue(True)`` into the integer 1, so a
boolean payload could never be matched there (booleans are written as 0 and 1), and ``MatchValue(3)`` does not
match a stored ``3.0`` (numbers are compared with ranges, see :mod:`ragindex.filters`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta, timezone
from enum import StrEnum
from typing import Any

from ragindex.errors import InputError

MAX_FIELDS = 64
MAX_KEY_CHARS = 64
MAX_STRING_CHARS = 2048
MAX_LIST_ITEMS = 256
MAX_METADATA_BYTES = 65536
MAX_SAFE_INTEGER = 2**53  # beyond it a float (what Qdrant compares numbers as) cannot tell two integers apart
RESERVED_PREFIX = "_ri_"

KEY_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?(Z|[+-]\d{2}:\d{2})?",
    re.IGNORECASE,
)
_KINDS = "strings, numbers, booleans, ISO-8601 dates or lists of strings"


class FieldType(StrEnum):
    """The type of a metadata field, fixed by the first value a set stores under it."""

    STRING = "string"
    NUMBER = "number"  # int and float alike
    BOOLEAN = "boolean"
    DATE = "date"  # ISO-8601 dates and datetimes, compared as instants
    STRING_LIST = "string_list"

    @property
    def plural(self) -> str:
        """How messages name the values of this type ("numbers", "ISO-8601 dates", ...)."""
        return _PLURALS[self]


_PLURALS = {
    FieldType.STRING: "strings",
    FieldType.NUMBER: "numbers",
    FieldType.BOOLEAN: "booleans",
    FieldType.DATE: "ISO-8601 dates",
    FieldType.STRING_LIST: "lists of strings",
}


class MetadataError(InputError):
    """A metadata mapping breaks a rule: an unsupported value, a bad field name, a limit, a type conflict."""


def describe(value: Any) -> str:
    """A value as messages name it: "the string '2020'", "the number 3", "an object", ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, datetime | date):
        return f"the date {value.isoformat()}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:40] + "…"
        return f"the string {shown!r}"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


def parse_date(value: Any) -> datetime:
    """The instant a date value stands for, as an aware UTC datetime.

    Args:
        value: A ``date`` (its midnight UTC), a ``datetime`` (naive means UTC) or a strict ISO-8601 string
            (``YYYY-MM-DD`` or ``YYYY-MM-DDTHH:MM[:SS[.ffffff]][Z|±HH:MM]``, a space allowed for the ``T``).

    Returns:
        The instant, with ``tzinfo=UTC``.

    Raises:
        MetadataError: The value is not a date, or not a valid one (month 13, hour 25, out of range).
    """
    if isinstance(value, datetime):
        return _to_utc(value)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str):
        parsed = _parse_iso(value)
        if parsed is not None:
            return parsed
    raise MetadataError(
        f"{describe(value)} is not an ISO-8601 date; send YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS with Z or ±HH:MM"
    )


def _to_utc(value: datetime) -> datetime:
    try:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError as exc:
        raise MetadataError(f"the date {value.isoformat()} is out of range in UTC (years 1 to 9999)") from exc


def _parse_iso(text: str) -> datetime | None:
    """The instant of a strict ISO-8601 string, or None when ``text`` is not one (or not a real date)."""
    try:
        if m := _DATE.fullmatch(text):
            return datetime(int(m[1]), int(m[2]), int(m[3]), tzinfo=UTC)
        if m := _DATETIME.fullmatch(text):
            fraction = int((m[7] or "0").ljust(6, "0"))
            tz: timezone = UTC
            if m[8] and m[8].upper() != "Z":
                sign = -1 if m[8][0] == "-" else 1
                hours, minutes = int(m[8][1:3]), int(m[8][4:6])
                if hours > 23 or minutes > 59:
                    return None
                tz = timezone(sign * timedelta(hours=hours, minutes=minutes))
            moment = datetime(
                int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6] or 0), fraction, tzinfo=tz
            )
            return moment.astimezone(UTC)
    except (ValueError, OverflowError):  # 2020-13-01, 25:00, or an offset that leaves years 1..9999
        return None
    return None


def is_date_string(text: str) -> bool:
    """Whether ``text`` is a strict ISO-8601 date or datetime (a real one: no month 13)."""
    return _parse_iso(text) is not None


def render_date(value: Any) -> str:
    """The stored form of a date value: ``YYYY-MM-DD`` for a date, ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z`` otherwise.

    Raises:
        MetadataError: The value is not a valid date.
    """
    if isinstance(value, date) and not isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, str) and _DATE.fullmatch(value):
        return parse_date(value).date().isoformat()
    moment = parse_date(value)
    return moment.replace(tzinfo=None).isoformat() + "Z"


def value_type(value: Any) -> FieldType:
    """The field type of one metadata value.

    Args:
        value: A str, int, float, bool, ``date``/``datetime`` or a list/tuple of str.

    Returns:
        BOOLEAN for a bool, NUMBER for a finite int or float, DATE for a date, a datetime or a strict
        ISO-8601 string, STRING for any other str, STRING_LIST for a list or tuple of str (empty included).

    Raises:
        MetadataError: Any other value (an object, null, bytes, a list of non-strings, NaN or infinity,
            an integer beyond ±2**53).
    """
    return _value_type(value, None)


def _value_type(value: Any, field: str | None) -> FieldType:
    where = f"metadata field {field!r}: " if field is not None else ""
    if isinstance(value, bool):  # before int: a bool is an int to Python
        return FieldType.BOOLEAN
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise MetadataError(
                f"{where}the integer {value} is beyond ±2**53, where numbers stop comparing exactly; "
                "store it as a string",
                field=field,
            )
        return FieldType.NUMBER
    if isinstance(value, float):
        if not math.isfinite(value):
            raise MetadataError(
                f"{where}{value!r} is not a finite number; send a number or leave the field out", field=field
            )
        return FieldType.NUMBER
    if isinstance(value, datetime | date):
        return FieldType.DATE
    if isinstance(value, str):
        return FieldType.DATE if is_date_string(value) else FieldType.STRING
    if isinstance(value, list | tuple):
        bad = [item for item in value if not isinstance(item, str)]
        if not bad:
            return FieldType.STRING_LIST
        raise MetadataError(
            f"{where}lists hold strings only; got {describe(bad[0])} in the list; "
            "send the items as strings, or use one field per value",
            field=field,
        )
    if isinstance(value, Mapping):
        hint = f", e.g. {field}_name" if field is not None else ""
        raise MetadataError(
            f"{where}nested objects are not supported (values are {_KINDS}); flatten it{hint}", field=field
        )
    raise MetadataError(f"{where}{describe(value)} is not supported (values are {_KINDS})", field=field)


def check_key(key: Any) -> str:
    """Return ``key`` when it is a valid metadata field name.

    Raises:
        MetadataError: Not a str, too long, the wrong shape, or in the reserved ``_ri_`` namespace.
    """
    if not isinstance(key, str):
        raise MetadataError(f"metadata field names are strings; got {describe(key)}")
    if len(key) > MAX_KEY_CHARS:
        raise MetadataError(
            f"metadata field {key[:MAX_KEY_CHARS]!r}…: names are at most {MAX_KEY_CHARS} characters; shorten it",
            field=key,
        )
    if not KEY_PATTERN.fullmatch(key):
        raise MetadataError(
            f"metadata field {key!r}: a name starts with a letter or '_' and holds letters, digits, '_', '.' "
            "and '-' only; rename it",
            field=key,
        )
    if key.startswith(RESERVED_PREFIX):
        raise MetadataError(
            f"metadata field {key!r}: names starting with {RESERVED_PREFIX!r} are reserved for ragindex; rename it",
            field=key,
        )
    return key


def _check_string(key: str, text: str) -> None:
    if len(text) > MAX_STRING_CHARS:
        raise MetadataError(
            f"metadata field {key!r}: a string is at most {MAX_STRING_CHARS} characters, this one has "
            f"{len(text)}; shorten it or keep long text in the document",
            field=key,
        )
    if "\x00" in text:
        # PostgreSQL's jsonb refuses \u0000: the same metadata must store on every truth-store backend
        raise MetadataError(f"metadata field {key!r}: strings cannot hold the NUL character; remove it", field=key)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MetadataError(
            f"metadata field {key!r}: the string is not valid Unicode (a lone surrogate); fix its encoding",
            field=key,
        ) from exc


def _conflict(key: str, want: FieldType, value: Any) -> MetadataError:
    return MetadataError(
        f"metadata field {key!r} holds {want.plural} in this set; got {describe(value)} "
        f"(send {_article(want)}, or use another field name)",
        field=key,
        expected=str(want),
    )


def _article(kind: FieldType) -> str:
    return {
        FieldType.STRING: "a string",
        FieldType.NUMBER: "a number",
        FieldType.BOOLEAN: "a boolean",
        FieldType.DATE: "an ISO-8601 date",
        FieldType.STRING_LIST: "a list of strings",
    }[kind]


def normalise(
    metadata: Mapping[str, Any], known: Mapping[str, FieldType] | None = None
) -> tuple[dict[str, Any], dict[str, FieldType]]:
    """Validate one metadata mapping and give its stored form and the type of each field.

    Args:
        metadata: Field name -> value. A ``None`` value means "no value": the field is left out.
        known: Types the set already holds. A value of another type is refused, except that a STRING field
            keeps a date-looking string as a string (the first type seen wins).

    Returns:
        The JSON-ready mapping to store (dates as ``YYYY-MM-DD`` or ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z`` in UTC,
        tuples as lists) and the type of every field in it.

    Raises:
        MetadataError: A value or name is not supported, a limit is passed, or a type differs from ``known``.
    """
    if not isinstance(metadata, Mapping):
        raise MetadataError(f"metadata is an object of field -> value; got {describe(metadata)}")
    known = known or {}
    out: dict[str, Any] = {}
    types: dict[str, FieldType] = {}
    for key, value in metadata.items():
        check_key(key)
        if value is None:
            continue
        kind = _value_type(value, key)
        want = known.get(key)
        if want is FieldType.STRING and kind is FieldType.DATE and isinstance(value, str):
            kind = FieldType.STRING  # a set's version strings stay strings when one of them looks like a date
        if want is not None and kind is not want:
            raise _conflict(key, want, value)
        out[key] = _stored(key, value, kind)
        types[key] = kind
    if len(out) > MAX_FIELDS:
        raise MetadataError(
            f"metadata has {len(out)} fields; at most {MAX_FIELDS} are allowed; drop some or merge them",
            limit=MAX_FIELDS,
        )
    size = len(json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise MetadataError(
            f"metadata is {size} bytes as JSON; at most {MAX_METADATA_BYTES} are allowed; "
            "keep long text in the document",
            limit=MAX_METADATA_BYTES,
        )
    return out, types


def _stored(key: str, value: Any, kind: FieldType) -> Any:
    if kind is FieldType.STRING:
        _check_string(key, value)
        return value
    if kind is FieldType.DATE:
        try:
            return render_date(value)
        except MetadataError as exc:
            raise MetadataError(f"metadata field {key!r}: {exc.message}", field=key) from exc
    if kind is FieldType.STRING_LIST:
        if len(value) > MAX_LIST_ITEMS:
            raise MetadataError(
                f"metadata field {key!r}: a list holds at most {MAX_LIST_ITEMS} items, this one has {len(value)}; "
                "keep the most useful ones",
                field=key,
            )
        for item in value:
            _check_string(key, item)
        return list(value)
    return value


def payload_value(value: Any, kind: FieldType) -> Any:
    """A stored metadata value as written to the index payload.

    Args:
        value: The value as :func:`normalise` stores it (or any value of ``kind``).
        kind: The field's type.

    Returns:
        DATE: epoch seconds as a float (UTC; a date is its midnight UTC). BOOLEAN: the integer 1 or 0
        (Qdrant Edge cannot match boolean payloads). Other types: the value unchanged (a tuple as a list).
    """
    if kind is FieldType.DATE:
        return parse_date(value).timestamp()
    if kind is FieldType.BOOLEAN:
        return int(value)
    if kind is FieldType.STRING_LIST:
        return list(value)
    return value
