"""Metadata filters through both retrievers on a real embedded engine: the JSON form at construction and per call
(LangChain), and LlamaIndex ``MetadataFilters`` mapped operator by operator, nested, and refused where ragindex has
no equivalent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import ValidationError
from ragindex.filters import FilterError
from ragindex.integrations.langchain import RagindexRetriever as LangChainRetriever
from ragindex.integrations.llamaindex import RagindexRetriever as LlamaIndexRetriever
from ragindex.integrations.llamaindex import metadata_filters_to_filter
from servekit import CORPUS_SET, CORPUS_USER, Served

pytestmark = pytest.mark.integration

QUERY = "animals and the sea"
RECORDS = [
    {"key": "r1", "text": "Honeybee colonies have one queen.", "metadata": {"year": 2019, "lang": "en",
                                                                             "tags": ["insects", "faq"]}},
    {"key": "r2", "text": "Ein Bienenvolk hat eine Königin.", "metadata": {"year": 2021, "lang": "de",
                                                                           "tags": ["insects"]}},
    {"key": "r3", "text": "Spring tides come at new and full moon.", "metadata": {"year": 2023, "lang": "en"}},
    {"key": "r4", "text": "Les marées de vive-eau suivent la lune.", "metadata": {"year": 2024, "lang": "fr",
                                                                                 "tags": []}},
]  # fmt: skip
ALL = {"r1", "r2", "r3", "r4"}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_cache_dir: Path) -> Iterator[Engine]:
    root = tmp_path_factory.mktemp("filters")
    settings = Settings(_env_file=None, data_dir=root / "data", onnx_cache_dir=onnx_cache_dir)
    with Engine(settings) as opened:
        report = opened.upsert(RECORDS)
        assert report.documents["added"] == 4 and not report.failures
        yield opened


def f(key: str, value: Any, operator: FilterOperator = FilterOperator.EQ) -> MetadataFilter:
    return MetadataFilter(key=key, value=value, operator=operator)


def both(*filters: MetadataFilter | MetadataFilters, condition: FilterCondition = FilterCondition.AND) -> Any:
    return MetadataFilters(filters=list(filters), condition=condition)


CASES: list[tuple[str, MetadataFilters, dict[str, Any], set[str]]] = [
    ("EQ", both(f("lang", "en")), {"lang": {"$eq": "en"}}, {"r1", "r3"}),
    ("NE", both(f("lang", "en", FilterOperator.NE)), {"lang": {"$ne": "en"}}, {"r2", "r4"}),
    ("GT", both(f("year", 2021, FilterOperator.GT)), {"year": {"$gt": 2021}}, {"r3", "r4"}),
    ("GTE", both(f("year", 2021, FilterOperator.GTE)), {"year": {"$gte": 2021}}, {"r2", "r3", "r4"}),
    ("LT", both(f("year", 2021, FilterOperator.LT)), {"year": {"$lt": 2021}}, {"r1"}),
    ("LTE", both(f("year", 2021.0, FilterOperator.LTE)), {"year": {"$lte": 2021.0}}, {"r1", "r2"}),
    ("IN", both(f("lang", ["de", "fr"], FilterOperator.IN)), {"lang": {"$in": ["de", "fr"]}}, {"r2", "r4"}),
    ("NIN", both(f("lang", ["de", "fr"], FilterOperator.NIN)), {"lang": {"$nin": ["de", "fr"]}}, {"r1", "r3"}),
    ("CONTAINS", both(f("tags", "faq", FilterOperator.CONTAINS)), {"tags": {"$contains": "faq"}}, {"r1"}),
    ("ANY", both(f("tags", ["faq", "x"], FilterOperator.ANY)), {"tags": {"$in": ["faq", "x"]}}, {"r1"}),
    (
        "ALL",
        both(f("tags", ["insects", "faq"], FilterOperator.ALL)),
        {"$and": [{"tags": {"$contains": "insects"}}, {"tags": {"$contains": "faq"}}]},
        {"r1"},
    ),
    ("IS_EMPTY", both(f("tags", None, FilterOperator.IS_EMPTY)), {"tags": {"$exists": False}}, {"r3", "r4"}),
    (
        "AND",
        both(f("lang", "en"), f("year", 2020, FilterOperator.GT)),
        {"$and": [{"lang": {"$eq": "en"}}, {"year": {"$gt": 2020}}]},
        {"r3"},
    ),
    (
        "OR",
        both(f("lang", "de"), f("year", 2024), condition=FilterCondition.OR),
        {"$or": [{"lang": {"$eq": "de"}}, {"year": {"$eq": 2024}}]},
        {"r2", "r4"},
    ),
    ("NOT one", both(f("lang", "en"), condition=FilterCondition.NOT), {"$not": {"lang": {"$eq": "en"}}}, {"r2", "r4"}),
    (
        "NOT many",  # LlamaIndex's NOT: none of the filters holds
        both(f("lang", "en"), f("year", 2024), condition=FilterCondition.NOT),
        {"$not": {"$or": [{"lang": {"$eq": "en"}}, {"year": {"$eq": 2024}}]}},
        {"r2"},
    ),
    (
        "nested",
        both(f("year", 2021, FilterOperator.GTE), both(f("lang", "de"), f("lang", "fr"), condition=FilterCondition.OR)),
        {"$and": [{"year": {"$gte": 2021}}, {"$or": [{"lang": {"$eq": "de"}}, {"lang": {"$eq": "fr"}}]}]},
        {"r2", "r4"},
    ),
    ("empty", both(), {}, ALL),
]


@pytest.mark.parametrize(("name", "filters", "expected", "keys"), CASES, ids=[c[0] for c in CASES])
def test_llamaindex_metadata_filters_map_to_the_json_filter_and_select_the_same_records(
    engine: Engine, name: str, filters: MetadataFilters, expected: dict[str, Any], keys: set[str]
) -> None:
    assert metadata_filters_to_filter(filters) == expected
    retriever = LlamaIndexRetriever(engine=engine, set_id=1, top_k=10, mode="dense", filters=filters)
    assert {n.node.metadata["source"] for n in retriever.retrieve(QUERY)} == keys, name
    same = LlamaIndexRetriever(engine=engine, set_id=1, top_k=10, mode="dense", filter=filters)  # filter= takes it
    assert {n.node.metadata["source"] for n in asyncio.run(same.aretrieve(QUERY))} == keys, name


@pytest.mark.parametrize("operator", [FilterOperator.TEXT_MATCH, FilterOperator.TEXT_MATCH_INSENSITIVE])
def test_an_operator_without_an_equivalent_is_refused_naming_it(operator: FilterOperator) -> None:
    nested = both(f("lang", "en"), both(f("title", "bee", operator)))
    with pytest.raises(FilterError, match=f"operator {operator.name} .* on 'title' has no ragindex equivalent"):
        metadata_filters_to_filter(nested)
    with pytest.raises(FilterError, match=operator.name):
        LlamaIndexRetriever(data_dir="/nonexistent", set_id=1, filters=nested)
    with pytest.raises(FilterError, match="ALL on 'tags' takes a list"):
        metadata_filters_to_filter(both(f("tags", "faq", FilterOperator.ALL)))


def test_llamaindex_takes_the_json_form_and_refuses_both_spellings(engine: Engine) -> None:
    retriever = LlamaIndexRetriever(engine=engine, set_id=1, top_k=10, filter='{"year": {"$gte": 2023}}')
    assert {n.node.metadata["source"] for n in retriever.retrieve(QUERY)} == {"r3", "r4"}
    with pytest.raises(TypeError, match="filter= or filters="):
        LlamaIndexRetriever(engine=engine, set_id=1, filter={"lang": "en"}, filters=both(f("lang", "en")))
    unknown = LlamaIndexRetriever(engine=engine, set_id=1, filter={"colour": "red"})
    with pytest.raises(FilterError, match="unknown field 'colour'"):
        unknown.retrieve(QUERY)


def test_langchain_filters_at_construction_and_per_call(engine: Engine) -> None:
    def keys(docs: list[Any]) -> set[str]:
        return {d.metadata["source"] for d in docs}

    plain = LangChainRetriever(engine=engine, set_id=1, top_k=10, mode="dense")
    assert keys(plain.invoke(QUERY)) == ALL
    assert keys(plain.invoke(QUERY, filter={"lang": "en"})) == {"r1", "r3"}
    assert keys(asyncio.run(plain.ainvoke(QUERY, filter='{"tags": {"$contains": "insects"}}'))) == {"r1", "r2"}

    english = LangChainRetriever(engine=engine, set_id=1, top_k=10, mode="dense", filter={"lang": "en"})
    assert keys(english.invoke(QUERY)) == {"r1", "r3"}
    assert keys(english.invoke(QUERY, filter={"year": {"$gt": 2020}})) == {"r3"}  # both must hold
    assert keys(asyncio.run(english.ainvoke(QUERY, filter={"lang": "de"}))) == set()
    assert keys(english.invoke(QUERY)) == {"r1", "r3"}  # a call's filter is not kept

    with pytest.raises(FilterError, match="holds numbers"):
        plain.invoke(QUERY, filter={"year": "recent"})
    with pytest.raises(FilterError, match="not valid JSON"):
        plain.invoke(QUERY, filter="{year")


def test_both_retrievers_send_the_filter_over_http(served: Served) -> None:
    key = served.key(CORPUS_USER)
    only = {"filename": "tcp.txt"}
    lang = LangChainRetriever(url=served.url, api_key=key, set_id=CORPUS_SET, top_k=3, filter=only)
    assert [d.metadata["filename"] for d in lang.invoke("bees and sugar")] == ["tcp.txt"]
    assert lang.invoke("bees", filter={"filename": "bees.txt"}) == []  # both must hold
    assert [d.metadata["filename"] for d in asyncio.run(lang.ainvoke("sugar"))] == ["tcp.txt"]
    llama = LlamaIndexRetriever(url=served.url, api_key=key, set_id=CORPUS_SET, filters=both(f("filename", "bees.txt")))
    assert [n.node.metadata["filename"] for n in llama.retrieve("sugar")] == ["bees.txt"]
    with pytest.raises(ValidationError, match="unknown field 'colour'"):
        LangChainRetriever(url=served.url, api_key=key, set_id=CORPUS_SET).invoke("x", filter={"colour": "red"})
    lang.close()
    llama.close()
