"""LangChain's own standard suites (langchain-tests) on ragindex's VectorStore and retriever, embedded and over HTTP.

Every test of ``VectorStoreIntegrationTests`` (its sync and async halves) and ``RetrieversIntegrationTests`` runs
as published: nothing is skipped by overriding a ``has_*`` property. The async tests run under the anyio plugin on
asyncio, like the rest of the suite. Each vector-store test gets an empty store: a fresh set, of one shared data
dir embedded (a data dir's engine is shared per process, see ragindex.shared), of a tenant of its own over HTTP.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import RetrieversIntegrationTests, VectorStoreIntegrationTests

from ragindex.config.settings import Settings
from ragindex.integrations.langchain import RagindexRetriever, RagindexVectorStore
from ragindex.shared import SharedEngine, shared_engine
from servekit import CORPUS_SET, CORPUS_USER, Served

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

_sets = itertools.count(100)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def store_settings(tmp_path_factory: pytest.TempPathFactory, onnx_cache_dir: Path) -> Iterator[Settings]:
    """Settings of a data dir whose shared engine stays open for the module (one model load, not one per test)."""
    root = tmp_path_factory.mktemp("lc-standard")
    settings = Settings(_env_file=None, data_dir=root / "data", onnx_cache_dir=onnx_cache_dir)
    lease: SharedEngine = shared_engine(settings)
    try:
        yield settings
    finally:
        lease.close()


class TestRagindexVectorStoreEmbedded(VectorStoreIntegrationTests):
    """The store on a data dir (the process's shared engine), a fresh set per test."""

    @pytest.fixture
    def vectorstore(self, store_settings: Settings) -> Iterator[VectorStore]:
        with RagindexVectorStore(settings=store_settings, set_id=next(_sets)) as store:
            yield store


class TestRagindexRetrieverEmbedded(RetrieversIntegrationTests):
    """The retriever on the THREE_DOCS data dir (tests/integrations/conftest.py)."""

    @pytest.fixture(autouse=True)
    def _data_dir(self, embedded_dir: Path) -> None:
        self._dir = embedded_dir

    @property
    def retriever_constructor(self) -> type[RagindexRetriever]:
        return RagindexRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"data_dir": self._dir, "set_id": 1, "top_k": 2}

    @property
    def retriever_query_example(self) -> str:
        return "how many queens does a honeybee colony have"

    @property
    def num_results_arg_name(self) -> str:
        return "top_k"

    @pytest.fixture
    def retriever(self) -> Iterator[BaseRetriever]:
        """The suite's retriever, closed after the test (its lease on the shared engine given back)."""
        with RagindexRetriever(**self.retriever_constructor_params) as retriever:
            yield retriever


HTTP_USER = CORPUS_USER + 60  # a tenant of its own: its sets are empty until a test writes one


class TestRagindexVectorStoreHTTP(VectorStoreIntegrationTests):
    """The store over the real ``ragindex serve`` (tests/servekit.py), a fresh set per test."""

    @pytest.fixture
    def vectorstore(self, served: Served) -> Iterator[VectorStore]:
        with RagindexVectorStore(url=served.url, api_key=served.key(HTTP_USER), set_id=next(_sets)) as store:
            yield store


class TestRagindexRetrieverHTTP(RetrieversIntegrationTests):
    """The retriever over the real service, on its corpus set."""

    @pytest.fixture(autouse=True)
    def _service(self, served: Served) -> None:
        self._params = {"url": served.url, "api_key": served.key(CORPUS_USER), "set_id": CORPUS_SET, "top_k": 2}

    @property
    def retriever_constructor(self) -> type[RagindexRetriever]:
        return RagindexRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return self._params

    @property
    def retriever_query_example(self) -> str:
        return "how many queens does a honeybee colony have"

    @property
    def num_results_arg_name(self) -> str:
        return "top_k"

    @pytest.fixture
    def retriever(self) -> Iterator[BaseRetriever]:
        """The suite's retriever, closed after the test (its lease on the shared engine given back)."""
        with RagindexRetriever(**self.retriever_constructor_params) as retriever:
            yield retriever
