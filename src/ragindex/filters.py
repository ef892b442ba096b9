"""One metadata filter language, the JSON form of Chroma and Pinecone, run in Python and inside Qdrant.

A filter is a JSON object. Its keys are field names (all of them must hold: an implicit ``$and``) or the
logical operators ``$and`` / ``$or`` (a non-empty list of filters) and ``$not`` (one filter). A field maps
to a value (equality) or to an object of operators (all of them must hold)::

    {"year": {"$gte": 2020}, "$or": [{"lang": "en"}, {"tags": {"$in": ["faq", "howto"]}}]}

:func:`parse_filter` checks a filter against the set's field types and gives its tree (:class:`Condition`,
:class:`And`, :class:`Or`, :class:`Not`); :func:`matches` evaluates the tree on stored metadata and
:func:`to_qdrant` compiles it to the ``Filter`` of either Qdrant engine, with the same answers.

The rule for a field a point does not hold (missing, null, or an empty list) is Qdrant's: every condition on
it is false, so its negations are true. ``$ne`` is ``not $eq`` and ``$nin`` is ``not $in`` (a point without
the field passes both, as in a Qdrant ``must_not``), ``$exists: false`` holds, and ``$not`` negates
whatever it wraps. On a list field ``$eq`` and ``$contains`` mean "holds this string", ``$in`` "holds any of
them", and ``$ne`` / ``$nin`` "holds none of them".
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from ragindex.errors import InputError
from ragindex.metadata import (
    KEY_PATTERN,
    MAX_KEY_CHARS,
    FieldType,
    MetadataError,
    describe,
    parse_date,
)

MAX_DEPTH = 8
MAX_CONDITIONS = 64
MAX_IN_VALUES = 1024
MAX_FILTER_BYTES = 16384

COMPARISONS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$contains")
LOGICAL = ("$and", "$or", "$not")
RANGES = ("$gt", "$gte", "$lt", "$lte")
NEGATIONS = {"$ne": "$eq", "$nin": "$in"}
_ORDERED = (FieldType.NUMBER, FieldType.DATE)
_ALL = ", ".join((*LOGICAL, *COMPARISONS))


@dataclass(frozen=True)
class Condition:
    """One comparison: ``field op value`` (``op`` as written, e.g. ``"$gte"``; equality is ``"$eq"``).

    ``value`` is normalised: a date is an aware UTC datetime, a number an int or a float, ``$in`` / ``$nin``
    hold a tuple of such values and ``$exists`` a bool.
    """

    field: str
    op: str
    value: Any


@dataclass(frozen=True)
class And:
    """All of ``items`` hold."""

    items: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    """At least one of ``items`` holds."""

    items: tuple[Node, ...]


@dataclass(frozen=True)
class Not:
    """``item`` does not hold."""

    item: Node


Node = Condition | And | Or | Not


class FilterError(InputError):
    """A metadata filter is not valid: its message names the problem and where in the filter it is."""


def payload_key(field: str, prefix: str = "meta.") -> str:
    """The Qdrant payload key of a metadata field (a name with a dot is quoted, or Qdrant reads a path)."""
    return f'{prefix}"{field}"' if "." in field else prefix + field


# ---------------------------------------------------------------------------------------------- parsing
def parse_filter(spec: Mapping[str, Any] | str | None, fields: Mapping[str, FieldType]) -> Node | None:
    """Check a filter against a set's fields and give its tree.

    Args:
        spec: The filter as a mapping or as JSON text; ``None`` or ``{}`` is no filter.
        fields: The type of every metadata field the set holds.

    Returns:
        The filter's tree, or ``None`` for no filter.

    Raises:
        FilterError: The filter is not valid JSON or breaks a rule (unknown operator or field, a value of the
            wrong type, too deep, too many conditions); the message names the path, e.g. ``$and[1].year``.
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        spec = _load_json(spec)
    if not isinstance(spec, Mapping):
        raise _error("", f"a filter is a JSON object of field -> condition; got {describe(spec)}")
    if not spec:
        return None
    return _Parser(fields).filter(spec, "", 1)


def _load_json(text: str) -> Any:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_FILTER_BYTES:
        raise FilterError(
            f"filter: the JSON text is {size} bytes; at most {MAX_FILTER_BYTES} are allowed; "
            "use $in for long lists of values",
            limit=MAX_FILTER_BYTES,
        )
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise FilterError(
            f"filter: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); send a JSON object such "
            'as {"year": {"$gte": 2020}}'
        ) from exc
    except RecursionError as exc:
        raise FilterError(f"filter: nested more than {MAX_DEPTH} levels deep; flatten it", limit=MAX_DEPTH) from exc


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise FilterError(f"filter: the key {key!r} appears twice in one object; combine its conditions")
        out[key] = value
    return out


def _error(path: str, message: str, **context: Any) -> FilterError:
    where = f"filter at {path}" if path else "filter"
    return FilterError(f"{where}: {message}", path=path or None, **context)


_ARTICLES = {
    FieldType.STRING: "a string",
    FieldType.NUMBER: "a number",
    FieldType.BOOLEAN: "true or false",
    FieldType.DATE: "an ISO-8601 date such as 2024-05-31 or 2024-05-31T12:00:00Z",
    FieldType.STRING_LIST: "a string, one the list holds",
}


class _Parser:
    """One parse: the fields to check against and the number of conditions so far."""

    def __init__(self, fields: Mapping[str, FieldType]) -> None:
        self.fields = fields
        self.conditions = 0

    def filter(self, spec: Any, path: str, depth: int) -> Node:
        if not isinstance(spec, Mapping):
            raise _error(path, f"a filter is an object of field -> condition; got {describe(spec)}")
        if not spec:
            raise _error(path, "an empty filter; give at least one condition")
        if depth > MAX_DEPTH:
            raise _error(path, f"nested more than {MAX_DEPTH} levels deep; flatten it", limit=MAX_DEPTH)
        items: list[Node] = []
        for key, value in spec.items():
            sub = f"{path}.{key}" if path else str(key)
            if key in ("$and", "$or"):
                items.append(self.logical(key, value, sub, depth))
            elif key == "$not":
                items.append(Not(self.filter(value, sub, depth + 1)))
            elif isinstance(key, str) and key.startswith("$"):
                hint = (
                    f'{key} compares a field: write {{"<field>": {{"{key}": ...}}}}'
                    if key in COMPARISONS
                    else f"unknown operator {key!r}; valid: {_ALL}"
                )
                raise _error(sub, hint)
            else:
                items.append(self.field(key, value, sub))
        return items[0] if len(items) == 1 else And(tuple(items))

    def logical(self, op: str, value: Any, path: str, depth: int) -> Node:
        if not isinstance(value, list | tuple):
            raise _error(path, f"{op} takes a list of filters; got {describe(value)}")
        if not value:
            raise _error(path, f"{op} takes a non-empty list of filters; remove it or add a filter")
        items = tuple(self.filter(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value))
        return And(items) if op == "$and" else Or(items)

    def field(self, name: Any, value: Any, path: str) -> Node:
        if not isinstance(name, str) or len(name) > MAX_KEY_CHARS or not KEY_PATTERN.fullmatch(name):
            raise _error(
                path,
                f"{name!r} is not a field name (a letter or '_', then letters, digits, '_', '.' or '-', at most "
                f"{MAX_KEY_CHARS} characters) nor one of {_ALL}",
            )
        kind = self.fields.get(name)
        if kind is None:
            raise _error(path, f"unknown field {name!r}; {_known(self.fields)}", field=name)
        if not isinstance(value, Mapping):
            return self.condition(name, kind, "$eq", value, path)
        if not value:
            raise _error(path, f"no operator for field {name!r}; give one of {', '.join(COMPARISONS)}", field=name)
        conditions: list[Node] = []
        for op, arg in value.items():
            sub = f"{path}.{op}"
            if op not in COMPARISONS:
                hint = (
                    f"unknown operator {op!r}; valid: {', '.join(COMPARISONS)}"
                    if isinstance(op, str) and op.startswith("$")
                    else f"field {name!r} takes a value or an object of operators ({', '.join(COMPARISONS)}); "
                    "nested objects are not supported"
                )
                raise _error(sub, hint, field=name)
            conditions.append(self.condition(name, kind, op, arg, sub))
        return conditions[0] if len(conditions) == 1 else And(tuple(conditions))

    def condition(self, name: str, kind: FieldType, op: str, arg: Any, path: str) -> Condition:
        self.conditions += 1
        if self.conditions > MAX_CONDITIONS:
            raise _error(path, f"more than {MAX_CONDITIONS} conditions; use $in for many values", limit=MAX_CONDITIONS)
        if op == "$exists":
            if not isinstance(arg, bool):
                raise _error(path, f"$exists takes true or false; got {describe(arg)}", field=name)
            return Condition(name, op, arg)
        if op in RANGES and kind not in _ORDERED:
            raise _error(
                path,
                f"{op} compares numbers and dates; field {name!r} holds {kind.plural} (use $eq or $in)",
                field=name,
            )
        if op == "$contains" and kind is not FieldType.STRING_LIST:
            raise _error(path, f"$contains tests a list; field {name!r} holds {kind.plural} (use $eq)", field=name)
        if op in ("$in", "$nin"):
            if not isinstance(arg, list | tuple) or not arg:
                raise _error(path, f"{op} takes a non-empty list of values; got {describe(arg)}", field=name)
            if len(arg) > MAX_IN_VALUES:
                raise _error(
                    path, f"{op} takes at most {MAX_IN_VALUES} values, got {len(arg)}", field=name, limit=MAX_IN_VALUES
                )
            values = (self.value(name, kind, item, f"{path}[{i}]") for i, item in enumerate(arg))
            return Condition(name, op, tuple(dict.fromkeys(values)))
        return Condition(name, op, self.value(name, kind, arg, path))

    def value(self, name: str, kind: FieldType, value: Any, path: str) -> Any:
        if isinstance(value, list | tuple):
            raise _error(path, "a list is not one value; use $in to match any of several values", field=name)
        if value is None:
            raise _error(path, 'null is not a value; use {"$exists": false} for a missing field', field=name)
        if kind in (FieldType.STRING, FieldType.STRING_LIST):
            ok = isinstance(value, str)
        elif kind is FieldType.BOOLEAN:
            ok = isinstance(value, bool)
        elif kind is FieldType.NUMBER:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            if ok and not _finite(value):
                raise _error(path, f"{value!r} is not a finite number (Qdrant compares numbers as floats)", field=name)
        else:
            ok = isinstance(value, str | date)  # date includes datetime
            if ok:
                try:
                    return parse_date(value)
                except MetadataError:
                    ok = False
        if not ok:
            raise _error(
                path,
                f"field {name!r} holds {kind.plural}; got {describe(value)} (send {_ARTICLES[kind]})",
                field=name,
                expected=str(kind),
            )
        return value


def _finite(value: float) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int beyond the largest float
        return False


def _known(fields: Mapping[str, FieldType]) -> str:
    if not fields:
        return "this set has no metadata fields yet"
    names = sorted(fields)
    shown = ", ".join(names[:30]) + (", …" if len(names) > 30 else "")
    return f"known fields: {shown}"


# ---------------------------------------------------------------------------------------------- evaluation
def matches(node: Node | None, metadata: Mapping[str, Any], fields: Mapping[str, FieldType]) -> bool:
    """Whether stored metadata passes a filter, with the answers Qdrant gives for the compiled filter.

    Args:
        node: A tree from :func:`parse_filter`; ``None`` passes everything.
        metadata: One mapping as the truth store keeps it (the output of :func:`ragindex.metadata.normalise`).
        fields: The set's field types.

    Returns:
        True when the metadata passes. A field that is missing, null or an empty list fails every condition
        but ``$ne``, ``$nin`` and ``$exists: false`` (and passes ``$not`` of any of them), as in Qdrant.
    """
    if node is None:
        return True
    if isinstance(node, And):
        return all(matches(item, metadata, fields) for item in node.items)
    if isinstance(node, Or):
        return any(matches(item, metadata, fields) for item in node.items)
    if isinstance(node, Not):
        return not matches(node.item, metadata, fields)
    return _holds(node, metadata, fields)


def _holds(cond: Condition, metadata: Mapping[str, Any], fields: Mapping[str, FieldType]) -> bool:
    if cond.op in NEGATIONS:
        return not _holds(Condition(cond.field, NEGATIONS[cond.op], cond.value), metadata, fields)
    raw = metadata.get(cond.field)
    if cond.op == "$exists":
        return (raw is not None and raw != [] and raw != ()) is cond.value
    kind = fields.get(cond.field)
    stored = None if raw is None or kind is None else _comparable(raw, kind)
    if stored is None:  # missing, or a value of another type: Qdrant's condition does not match either
        return False
    if kind is FieldType.STRING_LIST:
        wanted = cond.value if cond.op == "$in" else (cond.value,)
        return any(item in stored for item in wanted)
    if cond.op == "$in":
        return stored in {_scalar(v) for v in cond.value}
    bound = _scalar(cond.value)
    return bool(
        {
            "$eq": stored == bound,
            "$gt": stored > bound,
            "$gte": stored >= bound,
            "$lt": stored < bound,
            "$lte": stored <= bound,
        }[cond.op]
    )


def _comparable(raw: Any, kind: FieldType) -> Any:
    """A stored value in the form the filter compares (numbers and dates as floats), or None if of another type."""
    if kind is FieldType.STRING:
        return raw if isinstance(raw, str) else None
    if kind is FieldType.BOOLEAN:
        return raw if isinstance(raw, bool) else None
    if kind is FieldType.NUMBER:
        return float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else None
    if kind is FieldType.DATE:
        try:
            return parse_date(raw).timestamp()
        except MetadataError:
            return None
    if isinstance(raw, list | tuple) and all(isinstance(item, str) for item in raw):
        return list(raw)
    return None


def _scalar(value: Any) -> Any:
    """A filter value as Qdrant compares it: a number or a date as a float (epoch seconds)."""
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return value


# ---------------------------------------------------------------------------------------------- Qdrant
def to_qdrant(node: Node, models: Any, *, prefix: str = "meta.") -> Any:
    """The Qdrant ``Filter`` of a filter tree, for the embedded or the server engine.

    Numbers and dates compile to float ranges (``$eq`` is ``gte = lte``, so 3 matches a stored 3.0; dates are
    epoch seconds, as :func:`ragindex.metadata.payload_value` writes them), booleans to a match on 1 or 0,
    strings to ``MatchValue`` / ``MatchAny``, ``$ne`` / ``$nin`` / ``$not`` to ``must_not`` and ``$exists``
    to ``IsEmptyCondition``.

    Args:
        node: A tree from :func:`parse_filter`.
        models: ``qdrant_edge`` or ``qdrant_client.models``.
        prefix: What comes before a field name in the payload key (the metadata lives under ``meta``).

    Returns:
        A ``models.Filter``.
    """
    return _Compiler(models, prefix).filter(node)


class _Compiler:
    def __init__(self, models: Any, prefix: str) -> None:
        self.m = models
        self.edge = hasattr(models, "RangeFloat")  # qdrant_edge; qdrant_client.models calls it Range
        self.prefix = prefix

    def filter(self, node: Node) -> Any:
        m = self.m
        if isinstance(node, Or):
            return m.Filter(should=[self.condition(item) for item in node.items])
        items = node.items if isinstance(node, And) else (node,)
        must: list[Any] = []
        must_not: list[Any] = []
        for item in items:
            if isinstance(item, Not):
                must_not.append(self.condition(item.item))
            elif isinstance(item, Condition):
                negated, condition = self.atom(item)
                (must_not if negated else must).append(condition)
            else:
                must.append(self.filter(item))
        return m.Filter(must=must or None, must_not=must_not or None)

    def condition(self, node: Node) -> Any:
        """A condition for a ``must``, ``should`` or ``must_not`` list."""
        if isinstance(node, Condition):
            negated, condition = self.atom(node)
            return self.m.Filter(must_not=[condition]) if negated else condition
        return self.filter(node)

    def atom(self, cond: Condition) -> tuple[bool, Any]:
        """``(negated, condition)``: the condition holds, or (negated) must not hold, for the node to hold."""
        if cond.op in NEGATIONS:
            return True, self.atom(Condition(cond.field, NEGATIONS[cond.op], cond.value))[1]
        key = payload_key(cond.field, self.prefix)
        if cond.op == "$exists":
            return cond.value, self.is_empty(key)
        if cond.op in RANGES:
            return False, self.range(key, **{cond.op[1:]: _scalar(cond.value)})
        values = cond.value if cond.op == "$in" else (cond.value,)
        if isinstance(values[0], str | bool):  # a boolean payload is 1 or 0 (payload_value)
            keywords = [int(v) if isinstance(v, bool) else v for v in values]
            match = self.m.MatchValue(value=keywords[0]) if len(keywords) == 1 else self.m.MatchAny(any=keywords)
            return False, self.field(key, match=match)
        # numbers and dates: a range per value, since MatchValue(3) misses a stored 3.0 and takes no floats
        ranges = [self.range(key, gte=_scalar(v), lte=_scalar(v)) for v in values]
        return False, ranges[0] if len(ranges) == 1 else self.m.Filter(should=ranges)

    def field(self, key: str, **kw: Any) -> Any:
        return self.m.FieldCondition(key=key, **kw)

    def range(self, key: str, **bounds: float) -> Any:
        m = self.m
        return self.field(key, range=m.RangeFloat(**bounds) if self.edge else m.Range(**bounds))

    def is_empty(self, key: str) -> Any:
        m = self.m
        return m.IsEmptyCondition(key=key) if self.edge else m.IsEmptyCondition(is_empty=m.PayloadField(key=key))
