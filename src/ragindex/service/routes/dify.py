"""Dify's External Knowledge API: ``POST /retrieval`` (and ``/v1/retrieval``), exactly as Dify calls it.

Register the service in Dify (Knowledge -> External Knowledge API -> Add): the endpoint is the service's URL
(Dify appends ``/retrieval``; ``https://host/v1`` works too) and the API key a tenant key (``ragindex keys
create --user-id N``); each external knowledge base's **External Knowledge ID** is a set id of that tenant.

The request is Dify's: ``knowledge_id`` (the set id, as a string), ``query``, ``retrieval_setting {top_k,
score_threshold}`` and the optional ``metadata_condition {logical_operator, conditions: [{name,
comparison_operator, value}]}``. The answer is ``{"records": [{"content", "score", "title", "metadata"}]}`` in rank
order, ``metadata`` always an object. Errors are Dify's ``{"error_code", "error_msg"}``: 1001 (no ``Authorization:
Bearer`` header) and 1002 (an unknown or revoked key) with 403, Dify's status for a denied request; 2001 (no such
knowledge: not a set id, or a set of the tenant without documents) with 404. A body that is not Dify's shape is
the service's usual 422.

**Scores.** A Dify search is a hybrid search fused with reciprocal rank fusion (whatever RAGINDEX_FUSION says):
a hit's RRF score is the sum over the sources that ran of ``1 / (k + rank)`` (``RAGINDEX_RRF_K``, weights from
``RAGINDEX_RRF_WEIGHTS``), and Dify's score is that sum divided by the best one possible (rank 1 in every source
that ran). So ``score`` is in (0, 1], 1.0 means "first for every source", it falls with rank (the order is RRF's),
and a ``score_threshold`` of 0.5 keeps the hits at least as good as "first in one of two sources". With
``RAGINDEX_RERANK_ENABLED=true`` (and a reranker model) the score is the cross-encoder's, already in [0, 1].

**Metadata conditions** become a filter of the search (:mod:`ragindex.filters`) where the filter language says
them: ``is``/``=`` -> ``$eq``, ``is not``/``≠`` -> ``$ne``, ``in``/``not in`` -> ``$in``/``$nin``, ``>`` ``<`` ``≥``
``≤`` -> ``$gt`` ``$lt`` ``$gte`` ``$lte``, ``before``/``after`` -> ``$lt``/``$gt`` on a date field, ``contains`` /
``not contains`` on a list field -> ``$contains`` / its ``$not``. The rest it lacks: ``start with``, ``end with``,
``contains`` / ``not contains`` on a string field (substring), and ``empty`` / ``not empty`` (missing, ``""`` or
``[]``; ``not empty`` also narrows the search with ``$exists``). Those are applied to the backfilled hits (their
truth-store metadata), from a search of up to 5x ``top_k`` candidates (at least 50, at most 1000), so a rare match
may be missed in a large set. With ``logical_operator: or`` and such a condition, every condition is applied that
way. A condition with a list of names holds when it holds for any of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from ragindex.filters import FilterError, matches, parse_filter
from ragindex.metadata import FieldType, MetadataError, parse_date
from ragindex.service.deps import ServiceState, StateDep
from ragindex.service.hygiene import (
    AUTH_FAILED,
    AUTH_FAILED_MESSAGE,
    BAD_HEADER,
    BAD_HEADER_MESSAGE,
    DIFY_PATHS,
    bearer_token,
)
from ragindex.service.keys import Principal, authenticate
from ragindex.service.openapi import error_responses
from ragindex.service.routes.search import filter_error
from ragindex.service.schemas import MAX_ID, WholeNumber, _Body, _examples

router = APIRouter(tags=["dify"])

NO_KNOWLEDGE = 2001
OVERFETCH, MIN_CANDIDATES, MAX_CANDIDATES = 5, 50, 1000

Operator = Literal[
    "contains",
    "not contains",
    "start with",
    "end with",
    "is",
    "is not",
    "in",
    "not in",
    "empty",
    "not empty",
    "=",
    "≠",
    ">",
    "<",
    "≥",
    "≤",
    "before",
    "after",
]
_NO_VALUE = ("empty", "not empty")
_Name = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class RetrievalSetting(_Body):
    """How many records, and the lowest score (0 when Dify's threshold is off)."""

    top_k: WholeNumber = Field(ge=1, le=1000, description="Most records to return.")
    score_threshold: float = Field(ge=0, le=1, allow_inf_nan=False, description="Lowest score (0..1) to return.")


class DifyCondition(_Body):
    """One metadata condition (``value`` left out for ``empty`` and ``not empty``)."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            # every operator but `empty` and `not empty` compares with a value (422 without one)
            "if": {"properties": {"comparison_operator": {"enum": list(_NO_VALUE)}}},
            "else": {"required": ["value"], "properties": {"value": {"not": {"type": "null"}}}},
        },
    )

    name: _Name | Annotated[list[_Name], Field(min_length=1, max_length=16)] = Field(
        description="The metadata field (or fields: the condition holds when it holds for any)."
    )
    comparison_operator: Operator
    value: (
        Annotated[str, StringConstraints(max_length=2048)]
        | bool
        | Annotated[float, Field(allow_inf_nan=False)]
        | int
        | Annotated[list[Annotated[str, StringConstraints(max_length=2048)]], Field(max_length=1024)]
        | None
    ) = None


class MetadataCondition(_Body):
    """Dify's metadata filter."""

    logical_operator: Literal["and", "or"] = "and"
    conditions: list[DifyCondition] = Field(max_length=64)


class RetrievalRequest(_Body):
    """Dify's retrieval request."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "examples": [
                {
                    "knowledge_id": "1",
                    "query": "What is Dify?",
                    "retrieval_setting": {"top_k": 3, "score_threshold": 0.5},
                },
                {
                    "knowledge_id": "1",
                    "query": "your question",
                    "retrieval_setting": {"top_k": 2, "score_threshold": 0.0},
                    "metadata_condition": {
                        "logical_operator": "and",
                        "conditions": [{"name": ["suffix"], "comparison_operator": "is", "value": ".md"}],
                    },
                },
            ]
        },
    )

    knowledge_id: Annotated[str, StringConstraints(max_length=64)] = Field(
        description="The External Knowledge ID registered in Dify: a set id of the key's tenant (`1`)."
    )
    query: Annotated[str, StringConstraints(max_length=20_000)]
    retrieval_setting: RetrievalSetting
    metadata_condition: MetadataCondition | None = None


class DifyRecord(BaseModel):
    """One retrieved chunk."""

    content: str
    score: float = Field(description="0..1, falling with rank (see the route's description).")
    title: str
    metadata: dict[str, Any] = Field(description="The document's metadata and the hit's place; always an object.")


class RetrievalOut(BaseModel):
    """Dify's retrieval answer."""

    model_config = _examples(
        {
            "records": [
                {
                    "content": "Vitamin D helps the body absorb calcium, which keeps bones strong.",
                    "score": 0.98,
                    "title": "vitamin.md",
                    "metadata": {"key": "vitamin.md", "doc_id": 12, "chunk_id": "0b7e8f0e-...", "page": None},
                }
            ]
        }
    )

    records: list[DifyRecord]


class DifyErrorOut(BaseModel):
    """Dify's error body."""

    error_code: int = Field(description="1001 bad Authorization header, 1002 authorization failed, 2001 no knowledge.")
    error_msg: str


def dify_error(code: int, message: str, status: int) -> JSONResponse:
    """Dify's error answer."""
    return JSONResponse({"error_code": code, "error_msg": message}, status_code=status)


def _error_doc(description: str, code: int, message: str) -> dict[str, Any]:
    return {
        "model": DifyErrorOut,
        "description": description,
        "content": {"application/json": {"example": {"error_code": code, "error_msg": message}}},
    }


_RESPONSES: dict[int | str, Any] = {
    403: _error_doc(
        "1001: no `Authorization: Bearer <key>` header; 1002: an unknown or revoked key.",
        AUTH_FAILED,
        AUTH_FAILED_MESSAGE,
    ),
    404: _error_doc(
        "2001: the knowledge id is no set of the key's tenant.", NO_KNOWLEDGE, "knowledge '7' does not exist"
    ),
    **error_responses(400, 413, 422, 502, 503),
}


def authenticate_dify(state: ServiceState, header_token: str | None) -> Principal | JSONResponse:
    """The key's principal, or Dify's 1001 / 1002 answer."""
    if header_token is None:
        return dify_error(BAD_HEADER, BAD_HEADER_MESSAGE, 403)
    principal = authenticate(state.store, header_token)
    if principal is None:
        return dify_error(AUTH_FAILED, AUTH_FAILED_MESSAGE, 403)
    return principal


async def retrieval(body: RetrievalRequest, request: Request, state: StateDep) -> Any:
    """Dify's External Knowledge API: the set `knowledge_id`'s best chunks for `query`, as Dify's records."""
    principal = await state.aengine.run_sync(authenticate_dify, state, bearer_token(dict(request.scope)))
    if isinstance(principal, JSONResponse):
        return principal
    return await retrieve(state, principal.user_id, body)


for _path in DIFY_PATHS:
    router.add_api_route(
        _path,
        retrieval,
        methods=["POST"],
        response_model=RetrievalOut,
        responses=_RESPONSES,
        summary="Dify retrieval",
        operation_id="dify_retrieval" + _path.replace("/", "_"),
    )


async def retrieve(state: ServiceState, user_id: int, body: RetrievalRequest) -> Any:
    """Search the set and answer Dify's records (or Dify's 2001 when the set is not the tenant's)."""
    set_id = _set_id(body.knowledge_id)
    store = state.engine.store
    if set_id is None or not (await state.aengine.documents(user_id=user_id, set_id=set_id, limit=1)).documents:
        return dify_error(NO_KNOWLEDGE, f"knowledge {body.knowledge_id!r} does not exist", 404)
    setting = body.retrieval_setting
    fields = await state.aengine.run_sync(store.field_types, user_id, set_id)
    plan = plan_conditions(body.metadata_condition, {k: FieldType(v) for k, v in fields.items()})
    top_k = setting.top_k
    candidates = min(MAX_CANDIDATES, max(top_k * OVERFETCH, MIN_CANDIDATES)) if plan.post is not None else top_k
    try:
        result = await state.aengine.search(
            body.query,
            user_id=user_id,
            set_id=set_id,
            mode="hybrid",
            fusion="rrf",
            top_k=candidates,
            expand="none",
            group_by="none",
            filter=plan.native,
        )
    except FilterError as exc:  # not expected: every condition was checked against the set's fields
        raise filter_error(exc, "metadata_condition") from exc
    best = _best_rrf(state, result)
    answer = _public(state, result, user_id)
    records: list[dict[str, Any]] = []
    for hit, shown in zip(result.hits, answer, strict=True):
        if plan.post is not None and not plan.post(hit.metadata):
            continue
        score = _score(hit, best)
        if score < setting.score_threshold:
            break  # scores fall with rank: none after it reaches the threshold either
        records.append(_record(hit, shown, score, state.sources.metadata(hit.metadata, user_id=user_id, set_id=set_id)))
        if len(records) == top_k:
            break
    return {"records": records}


def _set_id(knowledge_id: str) -> int | None:
    text = knowledge_id.strip()
    if not text.isascii() or not text.isdigit() or len(text) > 16:
        return None
    value = int(text)
    return value if 0 < value <= MAX_ID else None


def _best_rrf(state: ServiceState, result: Any) -> float:
    """The RRF score of a hit ranked first by every source that ran (the divisor of Dify's score)."""
    retrieval = state.settings.retrieval
    ran = {name for hit in result.hits for name in hit.scores} - {"rerank"}
    weights = retrieval.rrf_weights or {}
    total = 0.0
    for name in ran:
        weight = weights.get(name, 1.0)
        if weight > 0:
            total += 1.0 / (1.0 / weight + retrieval.rrf_k - 1)
    return total


def _score(hit: Any, best: float) -> float:
    if "rerank" in hit.scores:
        return max(0.0, min(1.0, float(hit.score)))
    if best <= 0:
        return 0.0
    return max(0.0, min(1.0, float(hit.score) / best))


def _public(state: ServiceState, result: Any, user_id: int) -> list[dict[str, Any]]:
    hits: list[dict[str, Any]] = state.sources.answer(result, user_id=user_id)["hits"]
    return hits


def _record(hit: Any, shown: Mapping[str, Any], score: float, public: Mapping[str, Any]) -> dict[str, Any]:
    metadata = {k: v for k, v in public.items() if _json_value(v)}
    title = metadata.get("title")
    metadata.update(
        key=shown["key"],
        source=shown["source"],
        filename=shown["filename"],
        doc_id=hit.doc_id,
        chunk_id=hit.chunk_id,
        page=hit.page,
        section=hit.section,
    )
    return {
        "content": hit.text,
        "score": round(score, 6),
        "title": title if isinstance(title, str) and title else shown["filename"] or shown["key"],
        "metadata": metadata,
    }


def _json_value(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool | list | dict)


# ---------------------------------------------------------------------- metadata_condition -> filter + predicate
Predicate = Callable[[Mapping[str, Any]], bool]


class Plan:
    """A metadata condition as the search's filter (``native``) and a test of the backfilled hits (``post``)."""

    def __init__(self, native: dict[str, Any] | None, post: Predicate | None) -> None:
        self.native = native
        self.post = post


def plan_conditions(condition: MetadataCondition | None, fields: Mapping[str, FieldType]) -> Plan:
    """Map Dify's conditions onto the filter language, and what it lacks onto a test of the hits.

    Raises:
        ValidationError: A condition without the value its operator needs (422, ``metadata_condition``).
    """
    if condition is None or not condition.conditions:
        return Plan(None, None)
    parts = [_condition(c, n, fields) for n, c in enumerate(condition.conditions)]
    natives = [native for native, _ in parts]
    if condition.logical_operator == "and":
        filters = [n for n in natives if n is not None]
        tests = [test for _, test in parts if test is not None]
        native = filters[0] if len(filters) == 1 else ({"$and": filters} if filters else None)
        post = (lambda meta: all(t(meta) for t in tests)) if tests else None
        return Plan(native, post)
    if all(test is None for _, test in parts) and all(n is not None for n in natives):
        return Plan({"$or": natives} if len(natives) > 1 else natives[0], None)
    # an `or` with a condition the filter language lacks: every condition is tested on the hits
    whole = [_whole(native, test, fields) for native, test in parts]
    return Plan(None, lambda meta: any(t(meta) for t in whole))


def _whole(native: dict[str, Any] | None, test: Predicate | None, fields: Mapping[str, FieldType]) -> Predicate:
    node = parse_filter(native, fields) if native is not None else None

    def holds(meta: Mapping[str, Any]) -> bool:
        return (node is None or matches(node, meta, fields)) and (test is None or test(meta))

    return holds


def _condition(
    cond: DifyCondition, index: int, fields: Mapping[str, FieldType]
) -> tuple[dict[str, Any] | None, Predicate | None]:
    names = [cond.name] if isinstance(cond.name, str) else list(cond.name)
    op = cond.comparison_operator
    if op not in _NO_VALUE and cond.value is None:
        from ragindex.errors import ValidationError

        raise ValidationError(
            f"metadata_condition.conditions[{index}].value", f"the operator {op!r} needs a value to compare with"
        )
    per_name = [_one(name, op, cond.value, fields.get(name), fields) for name in names]
    if len(per_name) == 1:
        return per_name[0]
    if all(test is None for _, test in per_name):
        return {"$or": [n for n, _ in per_name]}, None
    wholes = [_whole(n, t, fields) for n, t in per_name]
    return None, lambda meta: any(w(meta) for w in wholes)


_NEGATED = ("is not", "≠", "not in", "not contains", "empty")


def _one(
    name: str, op: str, value: Any, kind: FieldType | None, fields: Mapping[str, FieldType]
) -> tuple[dict[str, Any] | None, Predicate | None]:
    """One field's condition: (filter, None), (None, test) or, for ``not empty``, both.

    A field the set does not have follows the filter language's rule for a missing field (every comparison is
    false, its negations true), and so does a value that cannot be compared with the field's values (a word for a
    number): Dify gets the records that match, never a 422 for its data.
    """
    if kind is None:
        missing = op in _NEGATED
        return None, lambda _meta: missing
    native, test = _mapped(name, op, value, kind)
    if native is not None:
        try:
            parse_filter(native, fields)
        except FilterError:
            mismatch = op in _NEGATED
            return None, lambda _meta: mismatch
    return native, test


def _mapped(name: str, op: str, value: Any, kind: FieldType | None) -> tuple[dict[str, Any] | None, Predicate | None]:
    if op in ("is", "="):
        return {name: {"$eq": _typed(value, kind)}}, None
    if op in ("is not", "≠"):
        return {name: {"$ne": _typed(value, kind)}}, None
    if op in ("in", "not in"):
        values = value if isinstance(value, list) else [value]
        return {name: {"$in" if op == "in" else "$nin": [_typed(v, kind) for v in values]}}, None
    ranges = {">": "$gt", "<": "$lt", "≥": "$gte", "≤": "$lte", "before": "$lt", "after": "$gt"}
    if op in ranges:
        return {name: {ranges[op]: _typed(value, kind)}}, None
    if op in ("contains", "not contains") and kind is FieldType.STRING_LIST:
        native = {name: {"$contains": str(value)}}
        return (native if op == "contains" else {"$not": native}), None
    if op == "empty":
        return None, lambda meta: _empty(meta.get(name))
    if op == "not empty":
        return {name: {"$exists": True}}, lambda meta: not _empty(meta.get(name))
    text = str(value)
    tests: dict[str, Callable[[str], bool]] = {
        "contains": lambda s: text in s,
        "not contains": lambda s: text not in s,
        "start with": lambda s: s.startswith(text),
        "end with": lambda s: s.endswith(text),
    }
    check = tests[op]
    negated = op == "not contains"

    def holds(meta: Mapping[str, Any]) -> bool:
        got = meta.get(name)
        if isinstance(got, list):  # a list field: any item (none, for `not contains`)
            return all(check(str(i)) for i in got) if negated else any(check(str(i)) for i in got)
        if got is None:
            return negated
        return check(str(got))

    return None, holds


def _typed(value: Any, kind: FieldType | None) -> Any:
    """Dify sends values as strings more often than not: read one as its field's type where it parses."""
    if isinstance(value, list):
        return [_typed(v, kind) for v in value]
    if kind is FieldType.NUMBER and isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if number.is_integer() and abs(number) < 2**53 else number
    if kind is FieldType.BOOLEAN and isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if kind is FieldType.DATE and isinstance(value, int | float) and not isinstance(value, bool):
        from datetime import UTC, datetime

        try:
            return datetime.fromtimestamp(value, UTC).isoformat().replace("+00:00", "Z")
        except (OverflowError, OSError, ValueError):  # not an instant of years 1-9999: no date equals it
            return value
    if kind is FieldType.DATE and isinstance(value, str):
        try:
            parse_date(value)
        except MetadataError:
            return value
    return value


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == []
