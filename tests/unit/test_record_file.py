"""Reading a records file as records (``ingest --as-records``) and ``--metadata KEY=VALUE`` values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragindex.cli.record_ingest import parse_metadata_options, record_fields
from ragindex.errors import DocumentLoadError, InputError
from ragindex.loaders.records import RecordFields, read_record_file


def test_a_json_list_reads_keys_text_title_and_scalar_metadata() -> None:
    items = [
        {"_id": 7, "title": "Seven", "text": "the text", "year": 2020, "ok": True, "tags": ["a"], "meta": {"x": 1}},
        {"_id": "b", "text": "only text", "note": None},
        {"_id": {"nested": 1}, "text": "bad key"},
        ["not", "an", "object"],
        {"_id": "c", "text": "  "},
    ]
    read = read_record_file(Path("/d/c.json"), json.dumps(items).encode(), metadata={"team": "x", "ok": False})
    first, second = read.records
    assert (first.key, first.title, first.text) == ("7", "Seven", "Seven\n\nthe text")
    assert dict(first.metadata) == {"year": 2020, "ok": False, "team": "x"}  # --metadata over the record's own
    assert (second.key, second.title, dict(second.metadata)) == ("b", None, {"team": "x", "ok": False})
    assert read.where == {"7": "item 0", "b": "item 1"}
    assert read.failures == [
        ("item 2", "c.json: item 2: record key field '_id' must be a string or a number"),
        ("item 3", "c.json: item 3 is list, expected a JSON object"),
    ]
    assert read.skipped == ["c"] and "1 record(s) skipped" in read.notes[-1]


def test_named_fields_are_kept_as_given_and_a_bad_value_fails_its_line_alone() -> None:
    lines = [
        {"id": "a", "body": "one", "author": "ann", "extra": 1},
        {"id": "b", "body": "two", "author": {"name": "bob"}},
        {"id": "c\x07", "body": "three"},
    ]
    data = "\n".join(json.dumps(x) for x in lines).encode()
    fields = RecordFields(key="id", text=("body",), title=None, metadata=("author",))
    read = read_record_file(Path("n.jsonl"), data, fields)
    assert [(r.key, r.text, dict(r.metadata)) for r in read.records] == [("a", "one", {"author": "ann"})]
    assert [where for where, _ in read.failures] == ["line 2", "line 3"]
    assert "nested objects are not supported" in read.failures[0][1]
    assert "control character" in read.failures[1][1]


def test_a_file_where_nothing_reads_fails_whole() -> None:
    with pytest.raises(DocumentLoadError, match="x.jsonl: line 1: invalid JSON"):
        read_record_file(Path("x.jsonl"), b"{nope\n[1]\n")


def test_metadata_options_parse_json_scalars_else_text() -> None:
    given = ["year=2024", "score=0.5", "draft=true", "code=\"007\"", "team=search", "when=2024-01-02", "list=[1]",
             "empty=", "eq=a=b"]  # fmt: skip
    assert parse_metadata_options(given) == {
        "year": 2024,
        "score": 0.5,
        "draft": True,
        "code": "007",
        "team": "search",
        "when": "2024-01-02",
        "list": "[1]",
        "empty": "",
        "eq": "a=b",
    }
    for bad, words in (("novalue", "KEY=VALUE"), ("=1", "KEY=VALUE")):
        with pytest.raises(InputError, match=words):
            parse_metadata_options([bad])
    with pytest.raises(InputError, match="given twice"):
        parse_metadata_options(["a=1", "a=2"])


def test_field_options_default_to_the_beir_layout() -> None:
    assert record_fields(None, None, None, None) == RecordFields("_id", ("title", "text"), "title", None)
    assert record_fields("id", ["body,summary"], "", "a, b") == RecordFields(
        "id", ("body", "summary"), None, ("a", "b")
    )
