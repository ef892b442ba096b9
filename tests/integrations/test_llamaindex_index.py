"""``ragindex.integrations.llamaindex.RagindexIndex`` with the real llama-index-core and a real embedded engine:
documents and nodes in and back (ids, metadata, ref_doc_id), delete and update, every ``FilterOperator`` mapped or
refused by name, and the index inside LlamaIndex's own pipelines (query engine, fusion, router) with ``MockLLM``.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from llama_index.core import Document
from llama_index.core import Settings as LlamaSettings
from llama_index.core.base.base_selector import BaseSelector, SelectorResult, SingleSelection
from llama_index.core.indices.managed.base import BaseManagedIndex
from llama_index.core.llms import MockLLM
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import QueryFusionRetriever, RouterRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import MetadataMode, Node, NodeRelationship, QueryBundle, RelatedNodeInfo, TextNode
from llama_index.core.tools import RetrieverTool, ToolMetadata
from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import InputError, ValidationError
from ragindex.filters import FilterError
from ragindex.integrations.llamaindex import NODE_ID_FIELD, RagindexIndex, RagindexRetriever
from ragindex.shared import shared_count

pytestmark = pytest.mark.integration

_SETS = itertools.count(10)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_cache_dir: Path) -> Iterator[Engine]:
    root = tmp_path_factory.mktemp("llamaindex-index")
    with Engine(Settings(_env_file=None, data_dir=root / "data", onnx_cache_dir=onnx_cache_dir)) as opened:
        yield opened


@pytest.fixture
def index(engine: Engine) -> RagindexIndex:
    """An index of a set of its own on the module's engine."""
    return RagindexIndex(engine=engine, set_id=next(_SETS))


@pytest.fixture(autouse=True)
def _no_default_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing here may reach for LlamaIndex's default (OpenAI) embed model or LLM."""

    def refuse(self: object) -> Any:
        raise AssertionError("Settings.embed_model / Settings.llm was read")

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(type(LlamaSettings), "embed_model", property(refuse))
    monkeypatch.setattr(type(LlamaSettings), "llm", property(refuse))


def node(node_id: str, text: str, doc: str | None, **metadata: Any) -> TextNode:
    relationships = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc)} if doc else {}
    return TextNode(id_=node_id, text=text, metadata=metadata, relationships=relationships)


def found(index: RagindexIndex, query: str, **kwargs: Any) -> list[tuple[str, str | None, dict[str, Any], str]]:
    """(id, ref_doc_id, metadata, text) of each node the retriever returns, best first."""
    hits = index.as_retriever(similarity_top_k=kwargs.pop("top_k", 10), **kwargs).retrieve(query)
    return [(n.node.node_id, n.node.ref_doc_id, n.node.metadata, n.node.get_content()) for n in hits]


TIDES = [
    node("t-1", "The moon's gravity pulls the oceans into tides.", "tides", lang="en", tags=["sea", "moon"]),
    node("t-2", "Spring tides come at new and full moon.", "tides", lang="en", page=2),
    node("t-3", "Nipptiden folgen den Halbmonden.", "tides", lang="de", reviewed=True, day="2024-03-01"),
]


def test_it_is_a_managed_index_that_needs_no_embed_model(index: RagindexIndex) -> None:
    assert isinstance(index, BaseManagedIndex)
    index.insert_nodes(TIDES)  # would raise through _no_default_models if an embed model were read
    assert found(index, "why are there tides", top_k=1)[0][0] == "t-1"


def test_nodes_round_trip_with_their_ids_metadata_text_and_ref_doc_id(index: RagindexIndex) -> None:
    index.insert_nodes(TIDES)
    back = {node_id: (ref, meta, text) for node_id, ref, meta, text in found(index, "tides and the moon")}
    assert back == {n.node_id: ("tides", n.metadata, n.get_content()) for n in TIDES}
    # one record of three pre-cut chunks in the nodes' order, each node's metadata and id on its chunk
    doc = index.engine.store.documents_by_key(index.user_id, index.set_id, ["tides"])["tides"]
    rows = index.engine.store.chunks_of_document(doc.doc_id)
    assert [r.content for r in rows] == [n.text for n in TIDES]
    assert [r.metadata["fields"][NODE_ID_FIELD] for r in rows] == ["t-1", "t-2", "t-3"]
    # what the LLM is shown is the caller's metadata, nothing of ragindex's
    best = index.as_retriever(similarity_top_k=1).retrieve("gravity pulls the oceans")[0].node
    assert best.get_content(metadata_mode=MetadataMode.LLM).startswith("lang: en\ntags: ['sea', 'moon']\n")


def test_insert_nodes_adds_to_a_document_and_replaces_a_node_of_the_same_id_in_place(index: RagindexIndex) -> None:
    index.insert_nodes(TIDES[:2])
    index.insert_nodes([TIDES[2], node("t-1", "Tides rise twice a day.", "tides", lang="en")])
    assert index.ref_doc_info["tides"].node_ids == ["t-1", "t-2", "t-3"]
    texts = {node_id: text for node_id, _, _, text in found(index, "tides")}
    assert texts["t-1"] == "Tides rise twice a day." and set(texts) == {"t-1", "t-2", "t-3"}


def test_nodes_at_construction_and_nodes_over_a_document_ragindex_cut(engine: Engine) -> None:
    index = RagindexIndex(TIDES[:1], engine=engine, set_id=next(_SETS))
    assert index.ref_doc_info["tides"].node_ids == ["t-1"]
    index.insert(Document(id_="bees", text="Bees make honey."))
    index.insert_nodes([node("b-1", "Drones do not sting.", "bees")])  # the text record becomes this node's record
    assert index.ref_doc_info["bees"].node_ids == ["b-1"]
    assert [(n, t) for n, r, _, t in found(index, "bees") if r == "bees"] == [("b-1", "Drones do not sting.")]


def test_a_node_without_a_source_is_its_own_document(index: RagindexIndex) -> None:
    index.insert_nodes([node("lonely", "A lighthouse keeps ships off the rocks.", None, lang="en")])
    assert found(index, "lighthouse") == [
        ("lonely", "lonely", {"lang": "en"}, "A lighthouse keeps ships off the rocks.")
    ]
    assert list(index.ref_doc_info) == ["lonely"]


def test_documents_are_records_chunked_by_ragindex_and_update_and_delete_work(index: RagindexIndex) -> None:
    bees = Document(id_="bees", text="Honeybee colonies have one queen and many workers.", metadata={"year": 2020})
    index.insert(bees)
    [(chunk_id, ref, meta, text)] = found(index, "who leads a bee colony")
    assert ref == "bees" and meta == {"year": 2020} and text == bees.text
    assert index.ref_doc_info["bees"].node_ids == [chunk_id] and index.ref_doc_info["bees"].metadata == {"year": 2020}
    index.update_ref_doc(Document(id_="bees", text="Drones are male honeybees.", metadata={"year": 2021}))
    assert [(r, m, t) for _, r, m, t in found(index, "bees")] == [
        ("bees", {"year": 2021}, "Drones are male honeybees.")
    ]
    index.delete_ref_doc("bees")
    index.delete_ref_doc("bees")  # a key that names nothing is a no-op, as LlamaIndex's own indexes do
    assert found(index, "bees") == [] and index.ref_doc_info == {}


def test_documents_replace_nodes_and_none_values_are_left_out(index: RagindexIndex) -> None:
    index.insert_nodes(TIDES)
    index.insert(Document(id_="tides", text="Tides, in one paragraph.", metadata={"lang": "en", "author": None}))
    [(_, ref, meta, text)] = found(index, "tides")
    assert (ref, meta, text) == ("tides", {"lang": "en"}, "Tides, in one paragraph.")


def test_refresh_ref_docs_tells_which_documents_changed(index: RagindexIndex) -> None:
    docs = [Document(id_="a", text="Alpha is first."), Document(id_="b", text="Beta is second.")]
    assert index.refresh_ref_docs(docs) == [True, True]
    assert index.refresh_ref_docs(docs) == [False, False]  # unchanged records: nothing written
    docs[1] = Document(id_="b", text="Beta is second.", metadata={"lang": "en"})
    assert asyncio.run(index.arefresh_ref_docs(docs)) == [False, True]
    assert sorted(index.ref_doc_info) == ["a", "b"] and index.ref_doc_info["b"].metadata == {"lang": "en"}


def test_from_documents_with_a_node_parser_keeps_the_parsers_node_ids(engine: Engine) -> None:
    text = " ".join(f"Sentence {i} is about the tides of the sea." for i in range(40))
    docs = [Document(id_="long", text=text, metadata={"lang": "en"})]
    splitter = SentenceSplitter(chunk_size=64, chunk_overlap=0)
    index = RagindexIndex.from_documents(docs, engine=engine, set_id=next(_SETS), transformations=[splitter])
    nodes = splitter.get_nodes_from_documents(docs)
    assert len(nodes) > 2
    assert len(index.ref_doc_info["long"].node_ids) == len(nodes)
    hits = index.as_retriever(similarity_top_k=len(nodes)).retrieve("tides of the sea")
    assert {h.node.ref_doc_id for h in hits} == {"long"} and all(h.node.metadata == {"lang": "en"} for h in hits)
    assert {h.node.node_id for h in hits} == set(index.ref_doc_info["long"].node_ids)


def test_bad_nodes_and_metadata_are_refused_naming_them(index: RagindexIndex) -> None:
    with pytest.raises(TypeError, match="node 'multi' is a Node"):
        index.insert_nodes([Node(id_="multi")])
    with pytest.raises(ValidationError, match=NODE_ID_FIELD):
        index.insert_nodes([node("x", "text", "d", **{NODE_ID_FIELD: "mine"})])
    with pytest.raises(InputError, match="'nested'"):
        index.insert_nodes([node("x", "text", "d", nested={"a": 1})])
    with pytest.raises(TypeError, match="'similarity_cutoff'"):
        index.as_retriever(similarity_cutoff=0.5)
    with pytest.raises(TypeError, match="storage_context"):
        RagindexIndex.from_documents([], engine=index.engine, storage_context=index.storage_context)
    with pytest.raises(ValidationError, match="give one target"):
        RagindexIndex()
    assert found(index, "text") == []  # nothing of a refused batch was written


def test_retriever_options_the_json_filter_and_what_is_not_supported(index: RagindexIndex) -> None:
    index.insert_nodes(TIDES)
    assert [n for n, *_ in found(index, "tides", filter={"lang": "de"})] == ["t-3"]
    assert [n for n, *_ in found(index, "tides", filter='{"page": {"$gte": 2}}', mode="bm25")] == ["t-2"]
    assert len(index.as_retriever(top_k=2).retrieve("tides")) == 2
    with pytest.raises(TypeError, match="similarity_top_k or top_k"):
        index.as_retriever(similarity_top_k=1, top_k=2)
    with pytest.raises(NotImplementedError, match="delete_ref_doc"):
        index.delete_nodes(["t-1"])
    with pytest.raises(ValueError, match="REACT and ChatMode.OPENAI"):
        index.as_chat_engine(chat_mode="react", llm=MockLLM())


def test_the_async_twins(index: RagindexIndex) -> None:
    async def run() -> list[str]:
        await index.ainsert_nodes(TIDES)
        await index.ainsert(Document(id_="bees", text="Bees make honey."))
        await index.adelete_ref_doc("bees")
        hits = await index.as_retriever(similarity_top_k=10).aretrieve("honey and tides")
        answer = await index.as_query_engine(llm=MockLLM()).aquery("tides")
        assert "Spring tides" in str(answer)
        return [h.node.node_id for h in hits]

    assert sorted(asyncio.run(run())) == ["t-1", "t-2", "t-3"]


def test_indexes_and_a_retriever_on_one_data_dir_share_its_engine_and_the_last_close_frees_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with RagindexIndex(data_dir=data, set_id=3) as tides, RagindexIndex(data_dir=data, set_id=4) as bees:
        assert tides.engine is bees.engine and shared_count(data) == 2
        tides.insert_nodes(TIDES)
        bees.insert(Document(id_="bees", text="Honeybees make honey."))
        with RagindexRetriever(data_dir=data, set_id=3, top_k=1) as plain:  # the retriever of files leases it too
            assert plain.retrieve("moon gravity")[0].node.metadata["source"] == "tides"
        fusion = QueryFusionRetriever(
            [tides.as_retriever(similarity_top_k=1), bees.as_retriever(similarity_top_k=1)],
            llm=MockLLM(),
            num_queries=1,
            similarity_top_k=2,
            use_async=False,
        )
        assert {n.node.ref_doc_id for n in fusion.retrieve("honey and tides")} == {"tides", "bees"}
    assert shared_count(data) == 0
    with Engine(Settings(data_dir=data)) as engine:  # the indexes gave the lock back
        assert engine.search("moon gravity", user_id=1, set_id=3, top_k=1).hits[0].key == "tides"


def test_a_retriever_keeps_its_index_and_engine_alive(tmp_path: Path) -> None:
    index = RagindexIndex(data_dir=tmp_path / "data", set_id=3)
    index.insert_nodes(TIDES)
    retriever = index.as_retriever(similarity_top_k=1)
    del index
    gc.collect()
    assert retriever.retrieve("moon gravity")[0].node.node_id == "t-1"
    del retriever
    gc.collect()
    assert shared_count(tmp_path / "data") == 0  # collected: the lease was given back


# ---------------------------------------------------------------------------------------------------- filters
FILTER_NODES = [
    node("r1", "Honeybee colonies have one queen.", "d1", year=2019, lang="en", tags=["insects", "faq"]),
    node("r2", "Ein Bienenvolk hat eine Königin.", "d2", year=2021, lang="de", tags=["insects"]),
    node("r3", "Spring tides come at new and full moon.", "d3", year=2023, lang="en"),
    node("r4", "Les marées de vive-eau suivent la lune.", "d4", year=2024, lang="fr", tags=[]),
]


def f(key: str, value: Any, operator: FilterOperator = FilterOperator.EQ) -> MetadataFilter:
    return MetadataFilter(key=key, value=value, operator=operator)


def all_of(*filters: MetadataFilter | MetadataFilters, condition: FilterCondition = FilterCondition.AND) -> Any:
    return MetadataFilters(filters=list(filters), condition=condition)


# every FilterOperator llama-index-core defines: the filter of one, and the nodes it selects (None: refused)
OPERATORS: dict[str, tuple[MetadataFilter, set[str] | None]] = {
    "EQ": (f("lang", "en"), {"r1", "r3"}),
    "NE": (f("lang", "en", FilterOperator.NE), {"r2", "r4"}),
    "GT": (f("year", 2021, FilterOperator.GT), {"r3", "r4"}),
    "GTE": (f("year", 2021, FilterOperator.GTE), {"r2", "r3", "r4"}),
    "LT": (f("year", 2021, FilterOperator.LT), {"r1"}),
    "LTE": (f("year", 2021, FilterOperator.LTE), {"r1", "r2"}),
    "IN": (f("lang", ["de", "fr"], FilterOperator.IN), {"r2", "r4"}),
    "NIN": (f("lang", ["de", "fr"], FilterOperator.NIN), {"r1", "r3"}),
    "ANY": (f("tags", ["faq", "none"], FilterOperator.ANY), {"r1"}),
    "ALL": (f("tags", ["insects", "faq"], FilterOperator.ALL), {"r1"}),
    "CONTAINS": (f("tags", "insects", FilterOperator.CONTAINS), {"r1", "r2"}),
    "IS_EMPTY": (f("tags", None, FilterOperator.IS_EMPTY), {"r3", "r4"}),
    "TEXT_MATCH": (f("lang", "e", FilterOperator.TEXT_MATCH), None),
    "TEXT_MATCH_INSENSITIVE": (f("lang", "E", FilterOperator.TEXT_MATCH_INSENSITIVE), None),
}

CONDITIONS: dict[str, tuple[MetadataFilters, set[str]]] = {
    "AND": (all_of(f("lang", "en"), f("year", 2020, FilterOperator.GT)), {"r3"}),
    "OR": (all_of(f("lang", "de"), f("year", 2024), condition=FilterCondition.OR), {"r2", "r4"}),
    "NOT": (all_of(f("lang", "en"), f("year", 2024), condition=FilterCondition.NOT), {"r2"}),
    "nested": (
        all_of(
            f("year", 2021, FilterOperator.GTE),
            all_of(f("lang", "de"), f("lang", "fr"), condition=FilterCondition.OR),
        ),
        {"r2", "r4"},
    ),
    "nested NOT": (
        all_of(f("tags", "insects", FilterOperator.CONTAINS), all_of(f("lang", "de"), condition=FilterCondition.NOT)),
        {"r1"},
    ),
}


@pytest.fixture(scope="module")
def filtered(engine: Engine) -> RagindexIndex:
    index = RagindexIndex(engine=engine, set_id=next(_SETS))
    index.insert_nodes(FILTER_NODES)
    return index


def test_the_table_covers_every_operator_llama_index_core_defines() -> None:
    assert set(OPERATORS) == set(FilterOperator.__members__), "a FilterOperator is neither mapped nor refused here"
    assert set(CONDITIONS) >= {c.name for c in FilterCondition}


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_every_filter_operator_is_mapped_or_refused_by_name(filtered: RagindexIndex, name: str) -> None:
    one, expected = OPERATORS[name]
    filters = all_of(one)
    if expected is None:
        with pytest.raises(FilterError, match=rf"operator {name} \(.*\) on 'lang' has no ragindex equivalent"):
            filtered.as_retriever(filters=filters)
        return
    assert {node_id for node_id, *_ in found(filtered, "animals and the sea", filters=filters)} == expected
    async_hits = asyncio.run(filtered.as_retriever(similarity_top_k=10, filters=filters).aretrieve("the sea"))
    assert {h.node.node_id for h in async_hits} == expected


@pytest.mark.parametrize("name", sorted(CONDITIONS))
def test_and_or_not_and_nested_filters(filtered: RagindexIndex, name: str) -> None:
    filters, expected = CONDITIONS[name]
    assert {node_id for node_id, *_ in found(filtered, "animals and the sea", filters=filters)} == expected


def test_a_refused_operator_deep_in_a_nested_filter_is_named(filtered: RagindexIndex) -> None:
    nested = all_of(f("lang", "en"), all_of(f("year", 2020), f("title", "bee", FilterOperator.TEXT_MATCH)))
    with pytest.raises(FilterError, match="TEXT_MATCH .* on 'title'"):
        filtered.as_query_engine(llm=MockLLM(), filters=nested)


def test_the_node_id_field_is_filterable(filtered: RagindexIndex) -> None:
    only = all_of(f(NODE_ID_FIELD, ["r2", "r3"], FilterOperator.IN))
    assert {node_id for node_id, *_ in found(filtered, "moon", filters=only)} == {"r2", "r3"}


# ---------------------------------------------------------------------------------------------------- pipelines
def test_as_query_engine_with_mock_llm_answers_from_the_nodes(filtered: RagindexIndex) -> None:
    engine = filtered.as_query_engine(llm=MockLLM(), similarity_top_k=2, mode="dense", response_mode="compact")
    answer = engine.query("when do spring tides come")
    assert {n.node.node_id for n in answer.source_nodes} <= {"r1", "r2", "r3", "r4"} and len(answer.source_nodes) == 2
    assert answer.source_nodes[0].node.node_id == "r3" and "Spring tides" in str(answer)
    german = filtered.as_query_engine(llm=MockLLM(), filters=all_of(f("lang", "de"))).query("bees")
    assert [n.node.node_id for n in german.source_nodes] == ["r2"]


def test_retriever_query_engine_over_the_retriever(filtered: RagindexIndex) -> None:
    engine = RetrieverQueryEngine.from_args(filtered.as_retriever(similarity_top_k=1), llm=MockLLM())
    answer = engine.query("honeybee queen")
    assert [n.node.node_id for n in answer.source_nodes] == ["r1"] and "Honeybee colonies" in str(answer)


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """This thread's event loop, closed after the test: LlamaIndex's sync chat path (``asyncio_run`` to count tokens)
    takes the thread's loop, and would create one and leave it open."""
    opened = asyncio.new_event_loop()
    asyncio.set_event_loop(opened)
    yield opened
    asyncio.set_event_loop(None)
    opened.close()


@pytest.mark.parametrize("mode", ["context", "condense_plus_context", "condense_question", "best"])
def test_chat_engines_with_mock_llm(filtered: RagindexIndex, mode: str, loop: asyncio.AbstractEventLoop) -> None:
    # chat engine options go to the chat engine; a ChatMemoryBuffer, as LlamaIndex's default Memory leaves an
    # aiosqlite connection open
    extra: dict[str, Any] = {"memory": ChatMemoryBuffer.from_defaults(llm=MockLLM())}
    if mode != "condense_question":  # the one chat engine without a system prompt
        extra["system_prompt"] = "Be brief."
    chat = filtered.as_chat_engine(
        chat_mode=mode, llm=MockLLM(), similarity_top_k=1, filters=all_of(f("lang", "en")), **extra
    )
    first = chat.chat("when do spring tides come")
    assert [n.node.node_id for n in first.source_nodes] == ["r3"]
    again = loop.run_until_complete(chat.achat("and honeybee queens?"))
    assert all(n.node.metadata["lang"] == "en" for n in again.source_nodes)


def _two_indexes(engine: Engine) -> tuple[RagindexIndex, RagindexIndex]:
    """Two indexes of two sets on one data dir (one engine)."""
    bees, sea = RagindexIndex(engine=engine, set_id=next(_SETS)), RagindexIndex(engine=engine, set_id=next(_SETS))
    bees.insert_nodes(
        [node("b1", "Honeybees make honey from nectar.", "bees"), node("b2", "A hive has one queen.", "bees")]
    )
    sea.insert_nodes(
        [node("s1", "The moon pulls the tides.", "sea"), node("s2", "Salt water covers most of Earth.", "sea")]
    )
    return bees, sea


def test_query_fusion_retriever_over_two_indexes_on_one_data_dir(engine: Engine) -> None:
    bees, sea = _two_indexes(engine)
    fusion = QueryFusionRetriever(
        [bees.as_retriever(similarity_top_k=2), sea.as_retriever(similarity_top_k=2)],
        llm=MockLLM(),
        num_queries=1,  # no generated queries: the MockLLM would only echo the prompt
        mode=FUSION_MODES.RECIPROCAL_RANK,
        similarity_top_k=4,
        use_async=False,
    )
    fused = fusion.retrieve("honey and tides")
    assert {n.node.node_id for n in fused} == {"b1", "b2", "s1", "s2"}
    assert {n.node.ref_doc_id for n in fused} == {"bees", "sea"}
    async_fusion = QueryFusionRetriever(fusion._retrievers, llm=MockLLM(), num_queries=1, similarity_top_k=4)
    async_fused = asyncio.run(async_fusion.aretrieve("tides"))
    assert {n.node.node_id for n in async_fused} == {"b1", "b2", "s1", "s2"}


class _WordSelector(BaseSelector):
    """Picks the choice whose description shares the most words with the query (no LLM)."""

    def _get_prompts(self) -> dict[str, Any]:
        return {}

    def _update_prompts(self, prompts_dict: dict[str, Any]) -> None:
        pass

    def _select(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> SelectorResult:
        words = set(query.query_str.lower().split())
        best = max(range(len(choices)), key=lambda i: len(words & set(choices[i].description.lower().split())))
        return SelectorResult(selections=[SingleSelection(index=best, reason="shared words")])

    async def _aselect(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> SelectorResult:
        return self._select(choices, query)


def test_router_retriever_over_two_indexes_on_one_data_dir(engine: Engine) -> None:
    bees, sea = _two_indexes(engine)
    tools = [
        RetrieverTool.from_defaults(bees.as_retriever(similarity_top_k=1), description="bees honey hives"),
        RetrieverTool.from_defaults(sea.as_retriever(similarity_top_k=1), description="sea tides moon"),
    ]
    router = RouterRetriever(selector=_WordSelector(), retriever_tools=tools, llm=MockLLM())
    assert [n.node.node_id for n in router.retrieve("tides moon")] == ["s1"]
    assert [n.node.node_id for n in asyncio.run(router.aretrieve("bees queen hives"))] == ["b2"]
    engine_answer = RetrieverQueryEngine.from_args(router, llm=MockLLM()).query("sea tides")
    assert [n.node.ref_doc_id for n in engine_answer.source_nodes] == ["sea"]


def test_include_ragindex_metadata_adds_its_fields_hidden_from_the_llm(filtered: RagindexIndex) -> None:
    best = filtered.as_retriever(similarity_top_k=1, include_ragindex_metadata=True).retrieve("spring tides")[0]
    meta = best.node.metadata
    assert best.node.node_id == "r3" and meta["lang"] == "en" and meta["year"] == 2023
    assert meta["source"] == "d3" and meta["score"] == best.score and meta["chunk_id"]
    shown = best.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "lang: en" in shown and "chunk_id" not in shown and "score" not in shown
