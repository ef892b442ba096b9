"""RagindexVectorStore beyond the standard suite, the shared engine, and the retriever's per-call options."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langchain_core.documents import Document

from ragindex.client.models import JobDetail
from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import IndexLockedError, ValidationError
from ragindex.filters import FilterError
from ragindex.integrations.langchain import CALL_OPTIONS, RagindexRetriever, RagindexVectorStore
from ragindex.integrations.langchain_store import EXTRA_FIELD
from ragindex.shared import shared_count, shared_engine
from servekit import CORPUS_USER, Served

pytestmark = pytest.mark.integration

QUERY = "how many queens does a honeybee colony have"


def _settings(data_dir: Path, onnx_cache_dir: Path) -> Settings:
    return Settings(_env_file=None, data_dir=data_dir, onnx_cache_dir=onnx_cache_dir)


def test_two_retrievers_and_a_store_share_one_engine_per_data_dir(embedded_dir: Path) -> None:
    first = RagindexRetriever(data_dir=embedded_dir, set_id=1, top_k=3)
    second = RagindexRetriever(data_dir=embedded_dir, set_id=1, top_k=1)
    store = RagindexVectorStore(data_dir=embedded_dir, set_id=41)
    try:
        assert len(first.invoke(QUERY)) == 3 and len(second.invoke(QUERY)) == 1
        store.add_texts(["Drones are the male bees of a colony."], ids=["drones"])
        assert store.similarity_search("male bees", k=1)[0].id == "drones"
        assert store.engine is first._searcher._open_engine()
        assert shared_count(embedded_dir) == 3
    finally:
        first.close()
        second.close()
        store.close()
    assert shared_count(embedded_dir) == 0
    with Engine(Settings(data_dir=embedded_dir)) as engine:  # the last close gave up the index
        assert engine.search("male bees", user_id=1, set_id=41, mode="bm25").hits


def test_a_second_engine_of_this_process_is_told_it_is_this_process(tmp_path: Path, onnx_cache_dir: Path) -> None:
    settings = _settings(tmp_path / "data", onnx_cache_dir)
    with Engine(settings) as engine:
        engine.index  # noqa: B018  (takes the index lock)
        with Engine(settings) as other, pytest.raises(IndexLockedError) as caught:
            other.index  # noqa: B018
    message = str(caught.value)
    assert "another Engine of this same process" in message and "shared_engine" in message and "engine=" in message
    assert "wait for" not in message.lower()


def test_shared_engine_refuses_other_settings_for_the_same_data_dir(tmp_path: Path, onnx_cache_dir: Path) -> None:
    with shared_engine(_settings(tmp_path / "d", onnx_cache_dir)) as engine:
        with shared_engine(_settings(tmp_path / "d", onnx_cache_dir)) as again:
            assert again is engine
        other = _settings(tmp_path / "d", onnx_cache_dir).model_copy(update={"default_top_k": 9})
        with pytest.raises(ValidationError, match="with other settings"):
            shared_engine(other)
    assert shared_count(tmp_path / "d") == 0


def test_retriever_takes_per_call_options_and_refuses_unknown_ones(embedded_dir: Path) -> None:
    with RagindexRetriever(data_dir=embedded_dir, set_id=1, top_k=3) as retriever:
        assert len(retriever.invoke(QUERY, k=1)) == 1
        assert len(retriever.invoke(QUERY, top_k=2)) == 2
        bm25 = retriever.invoke("queen", mode="bm25")
        assert [d.metadata["filename"] for d in bm25] == ["bees.txt"] and set(bm25[0].metadata["scores"]) == {"bm25"}
        assert len(asyncio.run(retriever.ainvoke(QUERY, k=1))) == 1
        with pytest.raises(ValidationError) as caught:
            retriever.invoke(QUERY, topk=1)
        assert "'topk'" in str(caught.value) and all(name in str(caught.value) for name in CALL_OPTIONS)
        with pytest.raises(ValidationError, match="not both"):
            retriever.invoke(QUERY, k=1, top_k=2)


@pytest.fixture
def store(tmp_path: Path, onnx_cache_dir: Path) -> RagindexVectorStore:
    return RagindexVectorStore(settings=_settings(tmp_path / "data", onnx_cache_dir), set_id=5)


def test_metadata_round_trips_filters_and_ragindex_fields(store: RagindexVectorStore) -> None:
    odd = {"year": 2021, "tags": ["a", "b"], "none": None, "nested": {"x": [1, 2]}, "bad key": 1.5, "ok": True}
    with store:
        ids = store.add_documents(
            [
                Document(page_content="Ganymede is the largest moon of Jupiter.", metadata=odd, id="g"),
                Document(page_content="Titan is the largest moon of Saturn.", metadata={"year": 2019}),
            ]
        )
        assert ids[0] == "g" and len(ids[1]) == 36  # a uuid4 for the document without an id
        ganymede = Document(id="g", page_content="Ganymede is the largest moon of Jupiter.", metadata=odd)
        assert store.get_by_ids(["nope", "g"]) == [ganymede]
        found = store.similarity_search("largest moon", k=2, filter={"year": {"$gte": 2020}})
        assert found == [ganymede]
        assert EXTRA_FIELD in store.engine.store.documents_by_key(1, 5, ["g"])["g"].metadata
        with pytest.raises(FilterError):
            store.similarity_search("moon", filter={"nope": 1})
        with pytest.raises(ValidationError, match="unknown search option"):
            store.similarity_search("moon", kk=1)
        store.include_ragindex_metadata = True
        doc, score = store.similarity_search_with_score("Titan Saturn", k=1, mode="bm25")[0]
        assert doc.id == ids[1] and doc.metadata["year"] == 2019 and doc.metadata["ragindex"]["score"] == score
        assert asyncio.run(store.adelete([ids[1], "missing"])) is True
        assert [d.id for d in asyncio.run(store.asimilarity_search("moon", k=4))] == ["g"]
        retriever = store.as_retriever(search_kwargs={"k": 1, "filter": {"ok": True}})
        assert [d.id for d in retriever.invoke("moon")] == ["g"]


def test_search_by_vector_embedded_and_over_http(store: RagindexVectorStore, served: Served) -> None:
    """``similarity_search_by_vector``: the dense index searched with the caller's embedding of the set's model."""
    texts = ["Ganymede is the largest moon of Jupiter.", "Sourdough rises with wild yeast.", "Tides follow the moon."]
    with store, RagindexVectorStore(url=served.url, api_key=served.key(CORPUS_USER + 62), set_id=8) as remote:
        for each in (store, remote):
            ids = each.add_texts(texts, [{"year": 2020 + i} for i in range(3)], ids=["g", "s", "t"])
            assert ids == ["g", "s", "t"]
        vector = store.engine.dense.encode_queries(["bread baking yeast"])[0].tolist()
        for each in (store, remote):
            assert [d.id for d in each.similarity_search_by_vector(vector, k=1)] == ["s"]
            assert [d.id for d in each.similarity_search_by_vector(vector, k=3, filter={"year": {"$ne": 2021}})][0] in {
                "g",
                "t",
            }
            assert [d.id for d in asyncio.run(each.asimilarity_search_by_vector(vector, k=1))] == ["s"]
            with pytest.raises(ValidationError) as caught:
                each.similarity_search_by_vector(vector[:8], k=1)
            assert caught.value.field.split(".")[0] == "vector"
            with pytest.raises(ValidationError, match="query"):
                each.similarity_search_by_vector(vector, k=1, mode="hybrid")


def test_embeddings_are_refused_unless_none(tmp_path: Path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    with pytest.raises(ValidationError, match="its own models"):
        RagindexVectorStore(data_dir=tmp_path, set_id=1, embeddings=DeterministicFakeEmbedding(size=8))
    with pytest.raises(ValidationError, match="give the ids"):
        RagindexVectorStore(data_dir=tmp_path, set_id=1).delete()


def test_over_http_metadata_filters_and_deletes(served: Served) -> None:
    odd = {"year": 2021, "nested": {"x": [1, None]}, "tags": ["moon"]}
    with RagindexVectorStore(url=served.url, api_key=served.key(CORPUS_USER + 61), set_id=7) as store:
        ids = store.add_texts(["Ganymede is the largest moon.", "Titan has lakes of methane."], [odd, {"year": 2019}])
        found = store.similarity_search("largest moon", k=2, filter={"year": {"$gte": 2020}})
        assert found == [Document(id=ids[0], page_content="Ganymede is the largest moon.", metadata=odd)]
        assert store.get_by_ids([ids[1], "nope"])[0].metadata == {"year": 2019}
        with pytest.raises(ValidationError):
            store.similarity_search("moon", filter={"nope": 1})
        with pytest.raises(ValidationError, match="no engine"):
            store.engine  # noqa: B018
        store.delete([ids[0], "nope"])
        assert [d.id for d in store.similarity_search("moon", k=4)] == [ids[1]]


def test_over_http_a_batch_over_a_mebibyte_is_a_job_waited_for(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    # 13 texts of 85,000 characters: over the service's 1 MiB of synchronous content (a chunk holds 100,000 at most)
    texts = [f"Part {n} of a long manual about lighthouse lenses. " + "lens " * 17_000 for n in range(13)]
    with RagindexVectorStore(url=served.url, api_key=served.key(CORPUS_USER + 62), set_id=8) as store:
        client = store._searcher._open_client()
        waited: list[str] = []
        wait = client.wait_for_job

        def counted(job_id: str) -> JobDetail:
            waited.append(job_id)
            return wait(job_id)

        monkeypatch.setattr(client, "wait_for_job", counted)
        ids = store.add_texts(texts, ids=[f"p{n}" for n in range(13)])
        assert len(waited) == 1
        assert [d.id for d in store.get_by_ids(ids)] == ids  # searchable and readable once add_texts returns
        assert len({d.id for d in store.similarity_search("lighthouse lenses manual", k=13)}) == 13
