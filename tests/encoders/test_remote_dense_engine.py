"""End to end: an Engine whose dense encoder is the OpenAI client pointed at the project's encoder server."""

from __future__ import annotations

import pytest

from ragindex import factory
from ragindex.config.settings import Settings
from ragindex.encoders.checked import CheckedDenseEncoder
from ragindex.encoders.dense.openai_http import OpenAIHttpDenseEncoder
from ragindex.engine import Engine

pytestmark = pytest.mark.integration


def test_engine_ingests_and_searches_through_the_encoder_server(encoder_server, api_key, tmp_files, tmp_path):
    settings = Settings(
        data_dir=tmp_path / "data",
        dense_provider="openai",
        dense_url=encoder_server.url,
        dense_api_key=api_key,
        dense_dimensions=384,
        bucket_count=1,
    )
    before = len(encoder_server.requests)
    with Engine(settings) as engine:
        dense = engine.dense
        assert isinstance(dense, CheckedDenseEncoder) and isinstance(dense.inner, OpenAIHttpDenseEncoder)
        try:
            report = engine.ingest([tmp_files])
            assert not report.failures
            hits = {}
            for query, expected in [
                ("which pets purr and chase mice?", "cats.md"),
                ("lava and magma eruption", "volcanoes.md"),
                ("how do I make dough with yeast", "bread.md"),
            ]:
                result = engine.search(query, user_id=1, set_id=1, mode="dense", top_k=3)
                hits[query] = result.hits[0].filename
                assert result.hits[0].filename == expected, hits
            assert engine.status().collections[0].dense == "openai:sentence-transformers/all-MiniLM-L6-v2"
        finally:
            dense.close()
    assert ("/v1/embeddings", 200) in encoder_server.requests[before:]


def test_factory_builds_the_configured_providers(tmp_path):
    settings = Settings(
        data_dir=tmp_path,
        dense_provider="openai",
        dense_url="http://127.0.0.1:9/v1",
        dense_model="text-embedding-3-large",
        dense_dimensions=256,
        dense_send_dimensions=True,
        sparse_provider="remote_bge_m3",
        bge_m3_service_url="http://127.0.0.1:9",
    )
    dense = factory.build_dense_encoder(settings)
    sparse = factory.build_sparse_provider(settings)
    try:
        assert isinstance(dense, CheckedDenseEncoder) and isinstance(dense.inner, OpenAIHttpDenseEncoder)
        assert dense.fingerprint == "openai:text-embedding-3-large@256"
        assert dense.url == "http://127.0.0.1:9/v1/embeddings"
        assert sparse is not None and sparse.name.startswith("remote_bge_m3:")
    finally:
        dense.close()
        sparse.close()
    http = Settings(data_dir=tmp_path, sparse_provider="bge_m3_http", sparse_http_endpoint="http://127.0.0.1:9")
    provider = factory.build_sparse_provider(http)
    assert provider is not None and provider.name.startswith("bge_m3_http:")
    provider.close()


@pytest.mark.parametrize(
    ("overrides", "setting"),
    [
        ({"dense_provider": "openai"}, "RAGINDEX_DENSE_URL"),
        ({"sparse_provider": "bge_m3_http"}, "RAGINDEX_SPARSE_HTTP_ENDPOINT"),
        ({"sparse_provider": "remote_bge_m3"}, "RAGINDEX_BGE_M3_SERVICE_URL"),
        ({"dense_send_dimensions": True}, "RAGINDEX_DENSE_DIMENSIONS"),
    ],
)
def test_remote_providers_need_their_url(overrides, setting, tmp_path):
    with pytest.raises(ValueError, match=setting):
        Settings(data_dir=tmp_path, **overrides)


def test_engine_with_both_remote_providers_builds_and_searches_sparse(encoder_server, api_key, tmp_files, tmp_path):
    settings = Settings(
        data_dir=tmp_path / "data",
        dense_provider="openai",
        dense_url=encoder_server.url,
        dense_api_key=api_key,
        sparse_provider="remote_bge_m3",
        bge_m3_service_url=encoder_server.url,
        sparse_http_api_key=api_key,
        bm25_enabled=False,
        bucket_count=1,
    )
    with Engine(settings) as engine:
        try:
            report = engine.ingest([tmp_files])
            assert not report.failures
            counts = engine.store.chunk_count_by_status("sparse")
            assert counts == {"SUCCESS": 3}, counts
            # the tiny BGE-M3 is random: only shared tokens score, and these are only in volcanoes.md
            result = engine.search("volcano magma", user_id=1, set_id=1, mode="sparse", top_k=3)
            assert result.hits and result.hits[0].filename == "volcanoes.md"
            hybrid = engine.search("volcano magma", user_id=1, set_id=1, mode="hybrid", top_k=3)
            assert hybrid.hits[0].filename == "volcanoes.md"
            meta = engine.store.list_index_meta()[0]
            assert meta.sparse_model == engine.sparse["sparse"].name
            assert meta.sparse_model.startswith("remote_bge_m3:")
        finally:
            engine.dense.close()
            engine.sparse["sparse"].close()
