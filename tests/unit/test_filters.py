"""The filter language: parsing and every error, then agreement of `matches` with both real Qdrant engines."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from ragindex.errors import InputError
from ragindex.filters import (
    MAX_CONDITIONS,
    MAX_DEPTH,
    And,
    Condition,
    FilterError,
    Not,
    Or,
    matches,
    parse_filter,
    payload_key,
    to_qdrant,
)
from ragindex.metadata import FieldType, normalise, payload_value

S, N, B, D, L = FieldType.STRING, FieldType.NUMBER, FieldType.BOOLEAN, FieldType.DATE, FieldType.STRING_LIST
FIELDS = {"title": S, "year": N, "draft": B, "published": D, "tags": L}


def parse(spec: Any) -> Any:
    return parse_filter(spec, FIELDS)


def error(spec: Any, fields: dict[str, FieldType] | None = None) -> str:
    with pytest.raises(FilterError) as info:
        parse_filter(spec, FIELDS if fields is None else fields)
    return str(info.value)


# --- parsing ---------------------------------------------------------------------------------------------


def test_no_filter() -> None:
    assert parse(None) is None
    assert parse({}) is None
    assert parse("{}") is None
    assert parse("  {} ") is None


def test_equality_shorthand_and_operators() -> None:
    assert parse({"title": "a"}) == Condition("title", "$eq", "a")
    assert parse({"year": {"$gte": 2020}}) == Condition("year", "$gte", 2020)
    assert parse({"year": 2020.5}) == Condition("year", "$eq", 2020.5)
    assert parse({"draft": False}) == Condition("draft", "$eq", False)
    assert parse({"tags": "x"}) == Condition("tags", "$eq", "x")
    assert parse({"tags": {"$contains": "x"}}) == Condition("tags", "$contains", "x")
    assert parse({"title": {"$exists": False}}) == Condition("title", "$exists", False)
    assert parse({"title": {"$in": ["a", "b", "a"]}}) == Condition("title", "$in", ("a", "b"))
    assert parse({"year": {"$nin": (1, 2.5)}}) == Condition("year", "$nin", (1, 2.5))


def test_several_operators_and_keys_are_anded() -> None:
    assert parse({"year": {"$gte": 2000, "$lt": 2010}}) == And(
        (Condition("year", "$gte", 2000), Condition("year", "$lt", 2010))
    )
    assert parse({"title": "a", "draft": True}) == And(
        (Condition("title", "$eq", "a"), Condition("draft", "$eq", True))
    )


def test_logical_operators() -> None:
    node = parse({"$or": [{"title": "a"}, {"$not": {"draft": True}}], "$and": [{"year": 1}]})
    assert node == And(
        (
            Or((Condition("title", "$eq", "a"), Not(Condition("draft", "$eq", True)))),
            And((Condition("year", "$eq", 1),)),
        )
    )


def test_dates_are_aware_utc_instants() -> None:
    midnight = datetime(2024, 5, 31, tzinfo=UTC)
    assert parse({"published": "2024-05-31"}) == Condition("published", "$eq", midnight)
    assert parse({"published": date(2024, 5, 31)}) == Condition("published", "$eq", midnight)
    node = parse({"published": {"$gt": "2024-05-31T02:00+02:00"}})
    assert node == Condition("published", "$gt", midnight)
    assert node.value.tzinfo is UTC
    assert parse({"published": {"$lt": datetime(2024, 5, 31, 0, 0)}}).value == midnight  # naive means UTC
    assert parse({"published": {"$in": ["2024-05-31", "2024-05-31T00:00:00Z"]}}).value == (midnight,)


def test_json_text_equals_the_mapping() -> None:
    spec = {"$or": [{"year": {"$gte": 2020}}, {"tags": {"$in": ["a", "b"]}}], "published": {"$lt": "2024-01-01"}}
    assert parse(json.dumps(spec)) == parse(spec)


def test_json_errors() -> None:
    assert error('{"year": ').startswith("filter: not valid JSON (Expecting value at line 1 column 10)")
    assert error("[1]") == "filter: a filter is a JSON object of field -> condition; got a list"
    assert (
        error('{"year": 1, "year": 2}') == "filter: the key 'year' appears twice in one object; combine its conditions"
    )
    big = json.dumps({"title": {"$in": ["x" * 100] * 170}})
    assert error(big).startswith(f"filter: the JSON text is {len(big)} bytes; at most 16384 are allowed")
    assert error("[" * 5000 + "]" * 5000) == f"filter: nested more than {MAX_DEPTH} levels deep; flatten it"
    assert error('{"year": NaN}') == "filter at year: nan is not a finite number (Qdrant compares numbers as floats)"


def test_unknown_operators_list_the_valid_ones() -> None:
    assert error({"year": {"$gtt": 1}}) == (
        "filter at year.$gtt: unknown operator '$gtt'; valid: $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists, "
        "$contains"
    )
    assert error({"$nor": []}) == (
        "filter at $nor: unknown operator '$nor'; valid: $and, $or, $not, $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, "
        "$exists, $contains"
    )
    assert (
        error({"$and": [{"$gt": 1}]}) == 'filter at $and[0].$gt: $gt compares a field: write {"<field>": {"$gt": ...}}'
    )
    assert error({"year": {"$gt": 1, "sub": 2}}).startswith(
        "filter at year.sub: field 'year' takes a value or an object of operators ($eq, "
    )
    assert error({"year": {}}).startswith("filter at year: no operator for field 'year'; give one of $eq, $ne")


def test_type_mismatches_name_the_field_type_and_path() -> None:
    assert error({"$and": [{"title": "a"}, {"year": "2020"}]}) == (
        "filter at $and[1].year: field 'year' holds numbers; got the string '2020' (send a number)"
    )
    assert error({"year": True}) == "filter at year: field 'year' holds numbers; got the boolean true (send a number)"
    assert error({"draft": 1}) == "filter at draft: field 'draft' holds booleans; got the number 1 (send true or false)"
    assert error({"title": 3}) == "filter at title: field 'title' holds strings; got the number 3 (send a string)"
    assert error({"tags": {"$contains": 3}}) == (
        "filter at tags.$contains: field 'tags' holds lists of strings; got the number 3 (send a string, one the "
        "list holds)"
    )
    assert error({"published": {"$gt": "last week"}}).startswith(
        "filter at published.$gt: field 'published' holds ISO-8601 dates; got the string 'last week' (send an "
        "ISO-8601 date such as 2024-05-31"
    )
    assert error({"published": {"$gt": 1700000000}}).startswith("filter at published.$gt: field 'published' holds")
    assert error({"year": {"$in": [1, "2"]}}).startswith("filter at year.$in[1]: field 'year' holds numbers")
    with pytest.raises(FilterError) as info:
        parse({"$or": [{"year": "x"}]})
    assert info.value.context == {"path": "$or[0].year", "field": "year", "expected": "number"}
    assert isinstance(info.value, InputError)


def test_operators_that_do_not_fit_the_type() -> None:
    assert error({"title": {"$gt": "a"}}) == (
        "filter at title.$gt: $gt compares numbers and dates; field 'title' holds strings (use $eq or $in)"
    )
    assert error({"draft": {"$lte": True}}).startswith("filter at draft.$lte: $lte compares numbers and dates")
    assert error({"tags": {"$gte": "a"}}).startswith("filter at tags.$gte: $gte compares numbers and dates")
    assert error({"title": {"$contains": "a"}}) == (
        "filter at title.$contains: $contains tests a list; field 'title' holds strings (use $eq)"
    )


def test_list_and_null_values() -> None:
    assert error({"tags": ["a", "b"]}) == (
        "filter at tags: a list is not one value; use $in to match any of several values"
    )
    assert error({"title": {"$eq": ["a"]}}).startswith("filter at title.$eq: a list is not one value; use $in")
    assert error({"title": None}) == 'filter at title: null is not a value; use {"$exists": false} for a missing field'
    assert error({"title": {"$in": []}}) == "filter at title.$in: $in takes a non-empty list of values; got a list"
    assert error({"title": {"$nin": "a"}}) == (
        "filter at title.$nin: $nin takes a non-empty list of values; got the string 'a'"
    )
    assert error({"title": {"$in": ["a"] * 1025}}) == "filter at title.$in: $in takes at most 1024 values, got 1025"
    assert error({"title": {"$in": [["a"]]}}).startswith("filter at title.$in[0]: a list is not one value")
    parse({"title": {"$in": [str(i) for i in range(1024)]}})


def test_exists_takes_a_boolean() -> None:
    assert error({"title": {"$exists": 1}}) == "filter at title.$exists: $exists takes true or false; got the number 1"
    assert error({"title": {"$exists": "yes"}}).startswith("filter at title.$exists: $exists takes true or false")


def test_logical_operator_shapes() -> None:
    assert error({"$and": []}) == "filter at $and: $and takes a non-empty list of filters; remove it or add a filter"
    assert error({"$or": {"title": "a"}}) == "filter at $or: $or takes a list of filters; got an object"
    assert error({"$or": [{}]}) == "filter at $or[0]: an empty filter; give at least one condition"
    assert error({"$or": ["a"]}) == (
        "filter at $or[0]: a filter is an object of field -> condition; got the string 'a'"
    )
    assert error({"$not": {}}) == "filter at $not: an empty filter; give at least one condition"
    assert (
        error({"$not": [{"title": "a"}]}) == "filter at $not: a filter is an object of field -> condition; got a list"
    )


def test_unknown_fields_list_the_known_ones() -> None:
    assert error({"$or": [{"autor": "x"}]}) == (
        "filter at $or[0].autor: unknown field 'autor'; known fields: draft, published, tags, title, year"
    )
    many = {f"f{i:02d}": S for i in range(40)}
    message = error({"zz": "x"}, many)
    assert message.endswith("f27, f28, f29, …") and "f30" not in message
    assert error({"x": "y"}, {}) == "filter at x: unknown field 'x'; this set has no metadata fields yet"


@pytest.mark.parametrize("name", ["1x", "a b", "", "x" * 65, "é"])
def test_field_names_with_the_wrong_shape(name: str) -> None:
    assert f": {name!r} is not a field name (a letter or '_'" in error({name: "v"})
    assert error({"$or": [{name: "v"}]}).startswith(f"filter at $or[0].{name}: ")


def test_depth_limit() -> None:
    spec: dict[str, Any] = {"title": "a"}
    for _ in range(MAX_DEPTH - 1):
        spec = {"$not": spec}
    parse(spec)  # MAX_DEPTH levels
    deeper = {"$and": [spec]}
    assert error(deeper) == (
        f"filter at $and[0]{'.$not' * (MAX_DEPTH - 1)}: nested more than {MAX_DEPTH} levels deep; flatten it"
    )


def test_condition_limit() -> None:
    parse({"$or": [{"year": i} for i in range(MAX_CONDITIONS)]})
    assert error({"$or": [{"year": i} for i in range(MAX_CONDITIONS + 1)]}) == (
        f"filter at $or[{MAX_CONDITIONS}].year: more than {MAX_CONDITIONS} conditions; use $in for many values"
    )
    assert error({"year": {"$gt": 1, "$lt": 9}, "$or": [{"year": i} for i in range(MAX_CONDITIONS - 1)]}).startswith(
        f"filter at $or[{MAX_CONDITIONS - 2}].year: more than {MAX_CONDITIONS} conditions"
    )


def test_payload_key_quotes_dotted_names() -> None:
    assert payload_key("year") == "meta.year"
    assert payload_key("lang-code") == "meta.lang-code"
    assert payload_key("a.b") == 'meta."a.b"'
    assert payload_key("a", prefix="") == "a"


# --- matches on stored metadata --------------------------------------------------------------------------


def test_matches_on_stored_metadata() -> None:
    stored, _ = normalise(
        {"title": "a", "year": 2020, "draft": False, "published": "2024-05-31T10:00+02:00", "tags": ["x", "y"]},
        FIELDS,
    )

    def m(spec: Any) -> bool:
        return matches(parse(spec), stored, FIELDS)

    assert m(None) and m({})
    assert m({"year": 2020.0}) and m({"year": {"$gte": 2019.5, "$lt": 2021}})
    assert m({"published": {"$gt": "2024-05-31", "$lt": "2024-06-01"}})
    assert m({"published": "2024-05-31T08:00:00Z"}) and not m({"published": "2024-05-31"})
    assert m({"tags": "x"}) and m({"tags": {"$contains": "y"}}) and m({"tags": {"$in": ["q", "y"]}})
    assert not m({"tags": {"$ne": "x"}}) and m({"tags": {"$nin": ["q"]}}) and not m({"tags": {"$nin": ["q", "x"]}})
    assert m({"draft": False}) and not m({"draft": True}) and m({"draft": {"$ne": True}})
    assert m({"$or": [{"title": "b"}, {"$not": {"title": "b"}}]})
    # a missing field: every comparison is false but $ne, $nin and $exists: false
    empty: dict[str, Any] = {}
    for spec, want in [
        ({"year": 1}, False),
        ({"year": {"$gt": 1}}, False),
        ({"year": {"$in": [1]}}, False),
        ({"tags": {"$contains": "x"}}, False),
        ({"year": {"$exists": True}}, False),
        ({"year": {"$ne": 1}}, True),
        ({"year": {"$nin": [1]}}, True),
        ({"tags": {"$ne": "x"}}, True),
        ({"year": {"$exists": False}}, True),
        ({"$not": {"year": {"$gt": 1}}}, True),
    ]:
        assert matches(parse(spec), empty, FIELDS) is want, spec
    # an empty list counts as no value, as Qdrant's IsEmpty has it
    assert matches(parse({"tags": {"$exists": False}}), {"tags": []}, FIELDS)
    assert matches(parse({"title": {"$exists": True}}), {"title": ""}, FIELDS)


# --- agreement with Qdrant Edge and qdrant-client local mode ----------------------------------------------

WORLD = {
    "title": S,
    "year": N,
    "score": N,
    "draft": B,
    "published": D,
    "tags": L,
    "x.y": N,
    "lang-code": S,
    "never": S,  # no point holds it
}
POINTS = 200
TITLES = ["alpha", "beta", "gamma", "", "Ärger", "2024-01-01", "v2"]
TAGS = ["a", "b", "c", "d", "", "Ω"]
LANGS = ["en", "de", "fr"]
YEARS = [2018, 2019, 2020, 2020.0, 2020.5, 2021, 2022, -3, 0]
SCORES = [0.1, 0.25, 0.5, 1.0, 1, 2, 1e-9, -0.5, 1e12]
BASE = datetime(2024, 1, 1, tzinfo=UTC)


def random_date(rng: random.Random) -> Any:
    day = BASE + timedelta(days=rng.randint(-3, 3))
    shape = rng.randrange(5)
    if shape == 0:
        return day.date()  # its midnight UTC
    if shape == 1:
        return day.date().isoformat()
    moment = day + timedelta(hours=rng.choice([0, 1, 12, 23]), minutes=rng.choice([0, 30]), seconds=rng.choice([0, 1]))
    if shape == 2:
        return moment  # aware UTC datetime
    if shape == 3:
        return moment.astimezone(timezone(timedelta(hours=rng.choice([-5, 2])))).isoformat()
    return moment.replace(tzinfo=None, microsecond=rng.choice([0, 250000])).isoformat(sep=" ")  # naive: UTC


def random_metadata(rng: random.Random) -> dict[str, Any]:
    makers: dict[str, Callable[[], Any]] = {
        "title": lambda: rng.choice(TITLES),
        "year": lambda: rng.choice(YEARS),
        "score": lambda: rng.choice(SCORES),
        "draft": lambda: rng.random() < 0.5,
        "published": lambda: random_date(rng),
        "tags": lambda: rng.sample(TAGS, rng.randint(0, 3)),
        "x.y": lambda: rng.randint(0, 4),
        "lang-code": lambda: rng.choice(LANGS),
    }
    return {name: make() for name, make in makers.items() if rng.random() < 0.75}


def filter_value(rng: random.Random, kind: FieldType, field: str) -> Any:
    if kind is S:
        return rng.choice([*TITLES, "zzz"]) if field == "title" else rng.choice([*LANGS, "xx"])
    if kind is L:
        return rng.choice([*TAGS, "zzz"])
    if kind is B:
        return rng.random() < 0.5
    if kind is N:
        pool = {"year": [*YEARS, 2019.5, 1e6], "score": [*SCORES, 0.3], "x.y": [0, 1, 2, 3, 4, 2.0, 5]}[field]
        return rng.choice(pool)
    value = random_date(rng)
    return value if rng.random() < 0.7 else str(value)  # str(date) and str(datetime) are ISO too


def random_condition(rng: random.Random) -> dict[str, Any]:
    field = rng.choice([*WORLD, "title", "tags", "published", "year"])
    kind = WORLD[field]
    ops = ["=", "$eq", "$ne", "$in", "$nin", "$exists"]
    if kind in (N, D):
        ops += ["$gt", "$gte", "$lt", "$lte", "range", "range"]
    if kind is L:
        ops += ["$contains", "$contains"]
    op = rng.choice(ops)
    if op == "=":
        return {field: filter_value(rng, kind, field)}
    if op == "$exists":
        return {field: {"$exists": rng.random() < 0.5}}
    if op in ("$in", "$nin"):
        return {field: {op: [filter_value(rng, kind, field) for _ in range(rng.randint(1, 3))]}}
    if op == "range":
        low, high = sorted((filter_value(rng, kind, field) for _ in range(2)), key=lambda v: str(v))
        return {field: {rng.choice(["$gt", "$gte"]): low, rng.choice(["$lt", "$lte"]): high}}
    return {field: {op: filter_value(rng, kind, field)}}


def random_filter(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    roll = rng.random() if depth < 3 else 0.0
    if roll < 0.45:
        return random_condition(rng)
    if roll < 0.6:
        spec: dict[str, Any] = {}
        for _ in range(rng.randint(2, 3)):
            spec.update(random_condition(rng))
        return spec
    if roll < 0.75:
        return {"$and": [random_filter(rng, depth + 1) for _ in range(rng.randint(1, 3))]}
    if roll < 0.9:
        return {"$or": [random_filter(rng, depth + 1) for _ in range(rng.randint(1, 3))]}
    return {"$not": random_filter(rng, depth + 1)}


def point_id(i: int) -> str:
    return str(uuid.UUID(int=i + 1))


class Engines:
    """The same points in an Edge shard without payload indexes, one with them, and qdrant-client local mode."""

    def __init__(self, root: Path, payloads: dict[str, dict[str, Any]]) -> None:
        import qdrant_edge as qe
        from qdrant_client import QdrantClient
        from qdrant_client import models as qm

        self.qe, self.qm = qe, qm
        self.shards = []
        for name, indexed in (("plain", False), ("indexed", True)):
            shard = qe.EdgeShard.create(
                str(root / name),
                qe.EdgeConfig(vectors={"d": qe.EdgeVectorParams(size=2, distance=qe.Distance.Cosine)}),
            )
            if indexed:
                schemas = {S: qe.PayloadSchemaType.Keyword, L: qe.PayloadSchemaType.Keyword}
                schemas |= {N: qe.PayloadSchemaType.Float, D: qe.PayloadSchemaType.Float}
                schemas |= {B: qe.IntegerIndexParams(lookup=True, range=False)}
                for field, kind in WORLD.items():
                    shard.update(qe.UpdateOperation.create_field_index(payload_key(field), schemas[kind]))
            shard.update(
                qe.UpdateOperation.upsert_points(
                    [qe.Point(id=pid, vector={"d": [1.0, 0.0]}, payload=p) for pid, p in payloads.items()]
                )
            )
            self.shards.append(shard)
        self.client = QdrantClient(":memory:")
        self.client.create_collection("c", vectors_config={"d": qm.VectorParams(size=2, distance=qm.Distance.COSINE)})
        self.client.upsert(
            "c", [qm.PointStruct(id=pid, vector={"d": [1.0, 0.0]}, payload=p) for pid, p in payloads.items()]
        )

    def edge_ids(self, node: Any) -> list[set[str]]:
        flt = to_qdrant(node, self.qe)
        out = []
        for shard in self.shards:
            page, _ = shard.scroll(self.qe.ScrollRequest(limit=1000, filter=flt, with_payload=False, with_vector=False))
            assert shard.count(self.qe.CountRequest(exact=True, filter=flt)) == len(page)
            out.append({str(r.id) for r in page})
        return out

    def client_ids(self, node: Any) -> set[str]:
        points, _ = self.client.scroll("c", scroll_filter=to_qdrant(node, self.qm), limit=1000)
        return {str(p.id) for p in points}

    def close(self) -> None:
        for shard in self.shards:
            shard.close()
        self.client.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, dict[str, Any]], Engines]]:
    pytest.importorskip("qdrant_client")
    rng = random.Random(20240531)
    stored: dict[str, dict[str, Any]] = {}
    payloads: dict[str, dict[str, Any]] = {}
    for i in range(POINTS):
        meta, types = normalise(random_metadata(rng), WORLD)
        stored[point_id(i)] = meta
        payloads[point_id(i)] = {"meta": {k: payload_value(v, types[k]) for k, v in meta.items()}}
    engines = Engines(tmp_path_factory.mktemp("filters"), payloads)
    yield stored, engines
    engines.close()


def check(world: tuple[dict[str, dict[str, Any]], Engines], spec: Any) -> set[str]:
    stored, engines = world
    node = parse_filter(spec, WORLD)
    assert node is not None
    want = {pid for pid, meta in stored.items() if matches(node, meta, WORLD)}
    plain, indexed = engines.edge_ids(node)
    assert plain == want, f"Qdrant Edge disagrees on {spec}"
    assert indexed == want, f"Qdrant Edge with payload indexes disagrees on {spec}"
    assert engines.client_ids(node) == want, f"qdrant-client disagrees on {spec}"
    return want


HAND_PICKED: list[dict[str, Any]] = [
    {"year": 2020},  # matches 2020 and 2020.0
    {"year": 2020.0},
    {"year": {"$in": [2020, 2021.0]}},
    {"year": {"$nin": [2020, -3]}},
    {"year": {"$ne": 2020}},
    {"score": {"$gt": 0.25, "$lte": 1}},
    {"score": 1e12},
    {"score": 1e-9},
    {"x.y": {"$gte": 2}},
    {"x.y": 0},
    {"lang-code": "de"},
    {"lang-code": {"$nin": ["de", "en"]}},
    {"draft": True},
    {"draft": False},
    {"draft": {"$ne": True}},
    {"draft": {"$in": [True, False]}},
    {"draft": {"$nin": [False]}},
    {"draft": {"$exists": False}},
    {"title": ""},
    {"title": "2024-01-01"},  # a date-looking string in a string field
    {"title": {"$in": ["", "Ärger"]}},
    {"title": {"$exists": True}},
    {"tags": ""},
    {"tags": "Ω"},
    {"tags": {"$contains": "a"}},
    {"tags": {"$in": ["a", "b"]}},
    {"tags": {"$nin": ["a", "b"]}},
    {"tags": {"$ne": "c"}},
    {"tags": {"$exists": True}},
    {"tags": {"$exists": False}},  # missing or an empty list
    {"published": "2024-01-01"},  # midnight UTC exactly
    {"published": date(2024, 1, 1)},
    {"published": {"$gte": "2024-01-01", "$lt": "2024-01-02"}},
    {"published": {"$gt": "2024-01-01T00:00:00+01:00"}},
    {"published": {"$lte": datetime(2023, 12, 31, 23, 30, 1)}},
    {"published": {"$in": ["2024-01-02", "2024-01-03T12:30:00Z"]}},
    {"published": {"$ne": "2024-01-02"}},
    {"never": "x"},
    {"never": {"$ne": "x"}},
    {"never": {"$exists": False}},
    {"never": {"$nin": ["x"]}},
    {"$not": {"never": "x"}},
    {"$not": {"year": {"$gt": 2019}}},
    {"$not": {"$not": {"year": {"$gt": 2019}}}},
    {"$or": [{"draft": True}, {"tags": "a"}, {"never": {"$exists": True}}]},
    {"$and": [{"year": {"$gte": 2019}}, {"$or": [{"draft": False}, {"$not": {"tags": {"$in": ["a", "c"]}}}]}]},
    {"$not": {"$or": [{"title": "alpha"}, {"year": {"$exists": False}}]}},
    {"title": {"$ne": "alpha"}, "year": {"$nin": [2020]}, "$not": {"draft": True}},
]


def test_hand_picked_filters_agree_with_both_engines(world: Any) -> None:
    sizes = [len(check(world, spec)) for spec in HAND_PICKED]
    assert sum(0 < size < POINTS for size in sizes) >= len(HAND_PICKED) - 6  # the filters select, mostly


def test_random_filters_agree_with_both_engines(world: Any) -> None:
    rng = random.Random(7)
    seen_ops: set[tuple[str, FieldType]] = set()
    selective = 0
    for _ in range(150):
        spec = random_filter(rng)
        if rng.random() < 0.5:  # as JSON text too: dates as ISO strings
            text = json.dumps(spec, default=str)
            assert parse_filter(text, WORLD) == parse_filter(spec, WORLD)
            spec = text
        want = check(world, spec)
        selective += 0 < len(want) < POINTS
        seen_ops |= set(operators(parse_filter(spec, WORLD)))
    assert selective >= 100
    for spec in HAND_PICKED:  # with the hand-picked ones, every operator on every type it takes
        seen_ops |= set(operators(parse_filter(spec, WORLD)))
    expected = {(op, kind) for kind in (S, N, B, D, L) for op in ("$eq", "$ne", "$in", "$nin", "$exists")}
    expected |= {(op, kind) for kind in (N, D) for op in ("$gt", "$gte", "$lt", "$lte")} | {("$contains", L)}
    assert expected <= seen_ops


def operators(node: Any) -> Iterator[tuple[str, FieldType]]:
    if isinstance(node, Condition):
        yield node.op, WORLD[node.field]
    elif isinstance(node, Not):
        yield from operators(node.item)
    else:
        for item in node.items:
            yield from operators(item)


def test_compiled_shapes(world: Any) -> None:
    _, engines = world
    qe, qm = engines.qe, engines.qm
    flt = to_qdrant(parse_filter({"year": 3, "draft": True, "title": {"$ne": "a"}}, WORLD), qe)
    assert len(flt.must) == 2 and len(flt.must_not) == 1
    assert isinstance(flt.must[0].range, qe.RangeFloat)
    assert flt.must[1].match.value == 1
    client = to_qdrant(parse_filter({"x.y": {"$exists": True}}, WORLD), qm)
    assert isinstance(client, qm.Filter)
    assert client.must_not[0].is_empty.key == 'meta."x.y"'
    custom = to_qdrant(parse_filter({"title": "a"}, WORLD), qm, prefix="m_")
    assert custom.must[0].key == "m_title"
