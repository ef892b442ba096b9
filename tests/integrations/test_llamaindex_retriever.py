"""``ragindex.integrations.llamaindex.RagindexRetriever`` with the real llama-index-core, embedded and over HTTP."""

from __future__ import annotations

import asyncio
import importlib
import sys
from pathlib import Path

import pytest
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import BackendError, MissingExtraError, ValidationError
from ragindex.integrations.llamaindex import RagindexRetriever
from servekit import CORPUS_SET, CORPUS_USER, Served, free_port

pytestmark = pytest.mark.integration

QUERY = "how does a plant turn light into sugar"


def _check(nodes: list[NodeWithScore], *, count: int, sources: set[str]) -> None:
    assert len(nodes) == count and all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in nodes)
    first = nodes[0]
    meta = first.node.metadata
    assert meta["filename"] == "photosynthesis.txt" and "chloroplasts" in first.node.get_content()
    assert first.node.node_id == meta["chunk_id"] and first.score == meta["score"]
    assert set(meta["scores"]) == sources and meta["doc_id"] > 0 and meta["set_id"] == 1
    assert [n.node.metadata["rank"] for n in nodes] == list(range(1, count + 1))
    # what an LLM sees: the text with where it comes from, not the ids and scores
    shown = first.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "filename: photosynthesis.txt" in shown and "chunk_id" not in shown and "scores" not in shown


def test_embedded_sync_and_async(embedded_dir: Path) -> None:
    with RagindexRetriever(data_dir=embedded_dir, set_id=1, top_k=2) as retriever:
        assert isinstance(retriever, BaseRetriever)
        _check(retriever.retrieve(QUERY), count=2, sources={"dense", "bm25"})
        _check(asyncio.run(retriever.aretrieve(QueryBundle(QUERY))), count=2, sources={"dense", "bm25"})
    with Engine(Settings(data_dir=embedded_dir)) as engine:  # closed: the index has no owner left
        dense = RagindexRetriever(engine=engine, set_id=1, top_k=1, mode="dense", group_by="document")
        _check(dense.retrieve(QUERY), count=1, sources={"dense"})
        assert RagindexRetriever(engine=engine, user_id=3, set_id=1).retrieve(QUERY) == []


def test_http_sync_and_async(served: Served) -> None:
    retriever = RagindexRetriever(url=served.url, api_key=served.key(CORPUS_USER), set_id=CORPUS_SET, top_k=3)
    _check(retriever.retrieve(QUERY), count=3, sources={"dense", "bm25"})
    _check(asyncio.run(retriever.aretrieve(QUERY)), count=3, sources={"dense", "bm25"})
    retriever.close()


def test_a_set_the_key_cannot_see_returns_no_nodes(served: Served) -> None:
    stranger = RagindexRetriever(url=served.url, api_key=served.key(CORPUS_USER + 50), set_id=CORPUS_SET)
    assert stranger.retrieve(QUERY) == [] and asyncio.run(stranger.aretrieve(QUERY)) == []


def test_errors_are_ragindex_errors(served: Served) -> None:
    with pytest.raises(ValidationError, match="give one target"):
        RagindexRetriever(set_id=1)
    down = RagindexRetriever(url=f"http://127.0.0.1:{free_port()}", set_id=1)
    with pytest.raises(BackendError, match="unreachable"):
        down.retrieve(QUERY)
    with pytest.raises(BackendError, match="unreachable"):
        asyncio.run(down.aretrieve(QUERY))


def test_without_llama_index_core_the_import_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "llama_index" or m.startswith("llama_index.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "ragindex.integrations.llamaindex")
    with pytest.raises(MissingExtraError, match=r"pip install 'ragindex\[llamaindex\]'"):
        importlib.import_module("ragindex.integrations.llamaindex")
