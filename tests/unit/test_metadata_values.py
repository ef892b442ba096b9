"""Metadata values: the five field types, every limit and message, the stored date forms, type conflicts."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from ragindex.errors import InputError
from ragindex.metadata import (
    MAX_FIELDS,
    MAX_KEY_CHARS,
    MAX_LIST_ITEMS,
    MAX_METADATA_BYTES,
    MAX_STRING_CHARS,
    FieldType,
    MetadataError,
    normalise,
    parse_date,
    payload_value,
    value_type,
)


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (True, FieldType.BOOLEAN),
        (False, FieldType.BOOLEAN),
        (0, FieldType.NUMBER),
        (-7, FieldType.NUMBER),
        (2.5, FieldType.NUMBER),
        (2**53, FieldType.NUMBER),
        (date(2024, 5, 31), FieldType.DATE),
        (datetime(2024, 5, 31, 12, 0), FieldType.DATE),
        ("2024-05-31", FieldType.DATE),
        ("2024-05-31T12:30", FieldType.DATE),
        ("2024-05-31T12:30:15", FieldType.DATE),
        ("2024-05-31T12:30:15.5Z", FieldType.DATE),
        ("2024-05-31 12:30:15.123456+02:00", FieldType.DATE),
        ("2024-05-31t12:30z", FieldType.DATE),
        ("2024-05-31T12:30-05:30", FieldType.DATE),
        ("", FieldType.STRING),
        ("hello", FieldType.STRING),
        ("2024-13-01", FieldType.STRING),  # the shape of a date, not a date
        ("2024-02-30", FieldType.STRING),
        ("2024-05-31T25:00", FieldType.STRING),
        ("2024-05-31T12:30+24:00", FieldType.STRING),
        ("2024-5-31", FieldType.STRING),
        ("2024-05-31T12", FieldType.STRING),
        ("2024-05-31T12:30:15.1234567", FieldType.STRING),
        (" 2024-05-31", FieldType.STRING),
        ("20240531", FieldType.STRING),
        ("v2", FieldType.STRING),
        ([], FieldType.STRING_LIST),
        (["a", "b"], FieldType.STRING_LIST),
        (("a",), FieldType.STRING_LIST),
    ],
)
def test_value_type(value: object, kind: FieldType) -> None:
    assert value_type(value) is kind


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ({"a": 1}, "nested objects are not supported"),
        (None, "null is not supported"),
        (b"x", "a bytes is not supported"),
        ([1, 2], "lists hold strings only; got the number 1"),
        (["a", None], "lists hold strings only; got null"),
        (math.nan, "nan is not a finite number"),
        (math.inf, "inf is not a finite number"),
        (2**53 + 1, r"beyond ±2\*\*53"),
        ({1, 2}, "a set is not supported"),
    ],
)
def test_value_type_refuses(value: object, words: str) -> None:
    with pytest.raises(MetadataError, match=words):
        value_type(value)


def test_metadata_error_is_an_input_error() -> None:
    assert issubclass(MetadataError, InputError)
    assert MetadataError.exit_code == 2 and MetadataError.http_status == 400


def test_normalise_every_type_and_the_stored_forms() -> None:
    stored, types = normalise(
        {
            "title": "A",
            "year": 2020,
            "score": 0.5,
            "draft": False,
            "day": date(2024, 5, 31),
            "day_text": "2024-05-31",
            "at": datetime(2024, 5, 31, 14, 0, tzinfo=timezone(timedelta(hours=2))),
            "at_naive": datetime(2024, 5, 31, 12, 0, 0, 250),
            "at_text": "2024-05-31 14:00+02:00",
            "at_short": "2024-05-31T12:00",
            "tags": ("x", "y"),
            "none": [],
            "gone": None,
        }
    )
    assert stored == {
        "title": "A",
        "year": 2020,
        "score": 0.5,
        "draft": False,
        "day": "2024-05-31",
        "day_text": "2024-05-31",
        "at": "2024-05-31T12:00:00Z",
        "at_naive": "2024-05-31T12:00:00.000250Z",
        "at_text": "2024-05-31T12:00:00Z",
        "at_short": "2024-05-31T12:00:00Z",
        "tags": ["x", "y"],
        "none": [],
    }
    assert types == {
        "title": FieldType.STRING,
        "year": FieldType.NUMBER,
        "score": FieldType.NUMBER,
        "draft": FieldType.BOOLEAN,
        "day": FieldType.DATE,
        "day_text": FieldType.DATE,
        "at": FieldType.DATE,
        "at_naive": FieldType.DATE,
        "at_text": FieldType.DATE,
        "at_short": FieldType.DATE,
        "tags": FieldType.STRING_LIST,
        "none": FieldType.STRING_LIST,
    }
    assert normalise({}) == ({}, {})


def test_normalise_is_idempotent() -> None:
    stored, types = normalise({"at": "2024-05-31T23:30:00-01:00", "d": "2024-05-31", "n": 1})
    assert normalise(stored, types) == (stored, types)
    assert stored["at"] == "2024-06-01T00:30:00Z"


def test_messages_name_the_field_and_the_fix() -> None:
    with pytest.raises(MetadataError) as info:
        normalise({"author": {"name": "x"}})
    assert str(info.value) == (
        "metadata field 'author': nested objects are not supported (values are strings, numbers, booleans, "
        "ISO-8601 dates or lists of strings); flatten it, e.g. author_name"
    )
    assert info.value.context == {"field": "author"}
    with pytest.raises(MetadataError, match=r"^metadata field 'tags': lists hold strings only; got the number 3"):
        normalise({"tags": ["a", 3]})
    with pytest.raises(MetadataError, match=r"^metadata field 'x': nan is not a finite number"):
        normalise({"x": math.nan})
    with pytest.raises(MetadataError, match=r"^metadata field 'big': the integer"):
        normalise({"big": -(2**60)})


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("", "a name starts with a letter or '_'"),
        ("1st", "a name starts with a letter or '_'"),
        ("a b", "a name starts with a letter or '_'"),
        ("é", "a name starts with a letter or '_'"),
        ("-x", "a name starts with a letter or '_'"),
        ("_ri_state", "reserved for ragindex"),
        ("x" * (MAX_KEY_CHARS + 1), f"names are at most {MAX_KEY_CHARS} characters"),
    ],
)
def test_bad_field_names(key: str, words: str) -> None:
    with pytest.raises(MetadataError, match=words) as info:
        normalise({key: 1})
    assert info.value.context["field"] == key


def test_good_field_names() -> None:
    names = ["a", "_x", "A.b-c_9", "x" * MAX_KEY_CHARS, "_ri", "ri_x"]
    assert list(normalise(dict.fromkeys(names, 1))[0]) == names


def test_a_field_name_must_be_a_string() -> None:
    with pytest.raises(MetadataError, match="metadata field names are strings; got the number 3"):
        normalise({3: "x"})  # type: ignore[dict-item]


def test_field_count_limit() -> None:
    normalise({f"f{i}": i for i in range(MAX_FIELDS)})
    normalise({**{f"f{i}": i for i in range(MAX_FIELDS)}, "empty": None})  # a None value is no field
    with pytest.raises(MetadataError, match=f"metadata has {MAX_FIELDS + 1} fields; at most {MAX_FIELDS}") as info:
        normalise({f"f{i}": i for i in range(MAX_FIELDS + 1)})
    assert info.value.context == {"limit": MAX_FIELDS}


def test_string_limits() -> None:
    normalise({"s": "x" * MAX_STRING_CHARS, "l": ["y" * MAX_STRING_CHARS]})
    with pytest.raises(MetadataError, match=f"metadata field 's': a string is at most {MAX_STRING_CHARS} char"):
        normalise({"s": "x" * (MAX_STRING_CHARS + 1)})
    with pytest.raises(MetadataError, match="metadata field 'l': a string is at most"):
        normalise({"l": ["ok", "x" * (MAX_STRING_CHARS + 1)]})
    with pytest.raises(MetadataError, match="metadata field 's': strings cannot hold the NUL character"):
        normalise({"s": "a\x00b"})
    with pytest.raises(MetadataError, match="metadata field 's': the string is not valid Unicode"):
        normalise({"s": "a\udc80"})


def test_list_limit() -> None:
    normalise({"l": ["a"] * MAX_LIST_ITEMS})
    with pytest.raises(MetadataError, match=f"metadata field 'l': a list holds at most {MAX_LIST_ITEMS} items"):
        normalise({"l": ["a"] * (MAX_LIST_ITEMS + 1)})


def test_json_size_limit() -> None:
    near = {f"f{i}": "x" * 2000 for i in range(32)}  # ~64,300 bytes
    normalise(near)
    with pytest.raises(MetadataError, match=f"bytes as JSON; at most {MAX_METADATA_BYTES}") as info:
        normalise({**near, "more": "é" * 700})  # counted in UTF-8 bytes
    assert info.value.context == {"limit": MAX_METADATA_BYTES}


def test_known_types_conflict() -> None:
    with pytest.raises(MetadataError) as info:
        normalise({"year": "2020"}, {"year": FieldType.NUMBER})
    assert str(info.value) == (
        "metadata field 'year' holds numbers in this set; got the string '2020' (send a number, or use another "
        "field name)"
    )
    assert info.value.context == {"field": "year", "expected": "number"}
    with pytest.raises(MetadataError, match="metadata field 'flag' holds booleans in this set; got the number 1"):
        normalise({"flag": 1}, {"flag": FieldType.BOOLEAN})
    with pytest.raises(MetadataError, match="'n' holds numbers in this set; got the boolean true"):
        normalise({"n": True}, {"n": FieldType.NUMBER})
    with pytest.raises(MetadataError, match="'tags' holds lists of strings in this set; got the string 'a'"):
        normalise({"tags": "a"}, {"tags": FieldType.STRING_LIST})
    with pytest.raises(MetadataError, match="'s' holds strings in this set; got a list"):
        normalise({"s": []}, {"s": FieldType.STRING})
    with pytest.raises(MetadataError, match="'s' holds strings in this set; got the date 2024-01-01"):
        normalise({"s": date(2024, 1, 1)}, {"s": FieldType.STRING})
    # a None value is no value: it never conflicts
    assert normalise({"year": None}, {"year": FieldType.NUMBER}) == ({}, {})
    # fields the set does not know yet take the type of their value
    assert normalise({"new": 1}, {"year": FieldType.NUMBER})[1] == {"new": FieldType.NUMBER}


def test_first_type_wins_for_date_looking_strings() -> None:
    # a field of version strings: first a plain string, later one that looks like a date: it stays a string
    _, types = normalise({"version": "v1"})
    stored, later = normalise({"version": "2024-01-01"}, types)
    assert stored == {"version": "2024-01-01"} and later == {"version": FieldType.STRING}
    stored, _ = normalise({"version": "2024-01-01T10:00+02:00"}, types)
    assert stored == {"version": "2024-01-01T10:00+02:00"}  # a string is stored as given
    # first a date, later "v2": that is the type error, and it says the field holds dates
    _, types = normalise({"version": "2024-01-01"})
    assert types == {"version": FieldType.DATE}
    with pytest.raises(MetadataError) as info:
        normalise({"version": "v2"}, types)
    assert str(info.value).startswith(
        "metadata field 'version' holds ISO-8601 dates in this set; got the string 'v2' (send an ISO-8601 date"
    )
    # a date field takes dates in every form
    assert normalise({"version": datetime(2024, 1, 2, 3, 4, 5)}, types)[0] == {"version": "2024-01-02T03:04:05Z"}


def test_normalise_refuses_a_non_mapping() -> None:
    with pytest.raises(MetadataError, match="metadata is an object of field -> value; got a list"):
        normalise([("a", 1)])  # type: ignore[arg-type]


def test_parse_date() -> None:
    assert parse_date("2024-05-31") == datetime(2024, 5, 31, tzinfo=UTC)
    assert parse_date(date(2024, 5, 31)) == datetime(2024, 5, 31, tzinfo=UTC)
    assert parse_date(datetime(2024, 5, 31, 1)) == datetime(2024, 5, 31, 1, tzinfo=UTC)
    moment = parse_date("2024-05-31T01:00:00.5-02:00")
    assert moment == datetime(2024, 5, 31, 3, 0, 0, 500000, tzinfo=UTC)
    assert moment.tzinfo is UTC
    with pytest.raises(MetadataError, match="the string 'v2' is not an ISO-8601 date"):
        parse_date("v2")
    with pytest.raises(MetadataError, match="is not an ISO-8601 date"):
        parse_date(20240531)
    with pytest.raises(MetadataError, match="out of range in UTC"):
        parse_date(datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))))
    assert value_type("0001-01-01T00:00+01:00") is FieldType.STRING  # before year 1 in UTC: not a date


def test_payload_value() -> None:
    assert payload_value("2024-05-31", FieldType.DATE) == datetime(2024, 5, 31, tzinfo=UTC).timestamp()
    assert payload_value("1970-01-01T00:00:01.5Z", FieldType.DATE) == 1.5
    assert payload_value("1969-12-31", FieldType.DATE) == -86400.0
    assert payload_value(date(1970, 1, 2), FieldType.DATE) == 86400.0
    assert isinstance(payload_value("1970-01-01", FieldType.DATE), float)
    assert payload_value(True, FieldType.BOOLEAN) == 1 and type(payload_value(True, FieldType.BOOLEAN)) is int
    assert payload_value(False, FieldType.BOOLEAN) == 0
    assert payload_value(3, FieldType.NUMBER) == 3
    assert payload_value("x", FieldType.STRING) == "x"
    assert payload_value(("a",), FieldType.STRING_LIST) == ["a"]


def test_field_type_values() -> None:
    assert [t.value for t in FieldType] == ["string", "number", "boolean", "date", "string_list"]
    assert FieldType("date") is FieldType.DATE
