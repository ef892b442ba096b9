"""``ragindex.integrations.langchain.RagindexRetriever`` with the real langchain-core, embedded and over HTTP."""

from __future__ import annotations

import asyncio
import importlib
import sys
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import BackendError, MissingExtraError, RagindexError, ValidationError
from ragindex.integrations.langchain import RagindexRetriever
from servekit import CORPUS_SET, CORPUS_USER, Served, free_port

pytestmark = pytest.mark.integration

META_KEYS = {
    "chunk_id",
    "doc_id",
    "set_id",
    "source",
    "filename",
    "page",
    "section",
    "start_line",
    "end_line",
    "chunk_type",
    "rank",
    "score",
    "scores",
    "ranks",
    "expanded",
}
QUERY = "how many queens does a honeybee colony have"


def _check(docs: list[Document], *, top: str, count: int, sources: set[str]) -> None:
    assert len(docs) == count and all(isinstance(d, Document) for d in docs)
    first = docs[0]
    assert first.metadata["filename"] == top and "queen" in first.page_content.lower()
    assert set(first.metadata) == META_KEYS and first.id == first.metadata["chunk_id"]
    assert set(first.metadata["scores"]) == sources and first.metadata["ranks"][next(iter(sources))] >= 1
    assert [d.metadata["rank"] for d in docs] == list(range(1, count + 1))
    assert first.metadata["score"] >= docs[-1].metadata["score"]


def test_embedded_on_a_data_dir_and_closing_gives_up_the_index(embedded_dir: Path) -> None:
    retriever = RagindexRetriever(data_dir=embedded_dir, user_id=1, set_id=1, top_k=2)
    assert isinstance(retriever, BaseRetriever)
    with retriever:
        _check(retriever.invoke(QUERY), top="bees.txt", count=2, sources={"dense", "bm25"})
        _check(asyncio.run(retriever.ainvoke(QUERY)), top="bees.txt", count=2, sources={"dense", "bm25"})
    # closed: the embedded index has no owner, so another engine opens it
    with Engine(Settings(data_dir=embedded_dir)) as engine:
        assert engine.search("queen", user_id=1, set_id=1, mode="bm25").hits


def test_embedded_on_an_open_engine_passes_the_search_options(embedded_dir: Path) -> None:
    with Engine(Settings(data_dir=embedded_dir)) as engine:
        bm25 = RagindexRetriever(engine=engine, set_id=1, mode="bm25", expand="neighbours")
        docs = bm25.invoke("honeybee queen drones")
        _check(docs, top="bees.txt", count=1, sources={"bm25"})
        assert docs[0].metadata["expanded"] is True
        bm25.close()  # the engine is the caller's: still open
        assert engine.search("queen", user_id=1, set_id=1, mode="bm25").hits
        other_tenant = RagindexRetriever(engine=engine, user_id=2, set_id=1)
        assert other_tenant.invoke(QUERY) == []


def test_http_mode_sync_and_async(served: Served) -> None:
    key = served.key(CORPUS_USER)
    retriever = RagindexRetriever(url=served.url, api_key=key, set_id=CORPUS_SET, top_k=3)
    assert key not in repr(retriever)  # the key is a SecretStr
    _check(retriever.invoke(QUERY), top="bees.txt", count=3, sources={"dense", "bm25"})
    _check(asyncio.run(retriever.ainvoke(QUERY)), top="bees.txt", count=3, sources={"dense", "bm25"})
    dense = RagindexRetriever(url=served.url, api_key=key, set_id=CORPUS_SET, mode="dense", top_k=1)
    _check(asyncio.run(dense.ainvoke(QUERY)), top="bees.txt", count=1, sources={"dense"})
    retriever.close()


def test_a_set_the_key_cannot_see_returns_no_documents(served: Served) -> None:
    """Decision: no documents, not an error (sets are per tenant; the service does not reveal others' sets)."""
    stranger = RagindexRetriever(url=served.url, api_key=served.key(CORPUS_USER + 40), set_id=CORPUS_SET)
    assert stranger.invoke(QUERY) == [] and asyncio.run(stranger.ainvoke(QUERY)) == []
    owner = RagindexRetriever(url=served.url, api_key=served.key(CORPUS_USER), set_id=CORPUS_SET)
    assert owner.invoke(QUERY)  # the same set id has documents for its own tenant


def test_errors_are_ragindex_errors(served: Served) -> None:
    with pytest.raises(ValidationError, match="give one target"):
        RagindexRetriever(set_id=1)
    with pytest.raises(ValidationError, match="give one target"):
        RagindexRetriever(url=served.url, data_dir="/tmp/x", set_id=1)
    with pytest.raises(ValidationError, match="key decides the tenant"):
        RagindexRetriever(url=served.url, api_key="k", user_id=2, set_id=1)
    down = RagindexRetriever(url=f"http://127.0.0.1:{free_port()}", api_key="k", set_id=1)
    with pytest.raises(BackendError, match="unreachable"):
        down.invoke(QUERY)
    with pytest.raises(BackendError, match="unreachable"):
        asyncio.run(down.ainvoke(QUERY))
    bad = RagindexRetriever(url=served.url, api_key=served.key(CORPUS_USER), set_id=CORPUS_SET, mode="telepathy")
    with pytest.raises(ValidationError) as caught:
        bad.invoke(QUERY)
    assert caught.value.field == "mode"


def test_without_langchain_core_the_import_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "langchain_core" or m.startswith("langchain_core.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "ragindex.integrations.langchain")
    with pytest.raises(ImportError, match=r"pip install 'ragindex\[langchain\]'") as caught:
        importlib.import_module("ragindex.integrations.langchain")
    assert isinstance(caught.value, MissingExtraError) and isinstance(caught.value, RagindexError)
    assert caught.value.exit_code == 3
