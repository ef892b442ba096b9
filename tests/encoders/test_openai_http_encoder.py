"""OpenAIHttpDenseEncoder against the project's encoder server (/v1/embeddings) started by the test."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from ragindex.encoders.dense.openai_http import OpenAIHttpDenseEncoder, embeddings_url
from ragindex.errors import EncodingError

pytestmark = pytest.mark.integration

MODEL = "sentence-transformers/all-MiniLM-L6-v2"

TEXTS = [
    "The cat sleeps on the warm windowsill.",
    "Volcanic eruptions release ash and lava.",
    "Knead the dough and let it rise.",
    "Quarterly revenue grew by twelve percent.",
    "短文本也可以编码。",
]


def test_embeddings_url_accepts_base_with_or_without_v1() -> None:
    assert embeddings_url("http://h:1") == "http://h:1/v1/embeddings"
    assert embeddings_url("http://h:1/") == "http://h:1/v1/embeddings"
    assert embeddings_url("https://dashscope.aliyuncs.com/compatible-mode/v1") == (
        "https://dashscope.aliyuncs.com/compatible-mode/v1/embeddings"
    )
    assert embeddings_url("http://h:1/v1/embeddings") == "http://h:1/v1/embeddings"


def test_vectors_equal_local_encoder_and_batches_keep_order(encoder_server, local_dense, api_key) -> None:
    before = len(encoder_server.requests)
    with OpenAIHttpDenseEncoder(encoder_server.url, MODEL, api_key=api_key, batch_size=2) as client:
        remote = client.encode_documents(TEXTS)
        queries = client.encode_queries(TEXTS[:1])
        assert client.dimension == 384
        assert client.fingerprint == f"openai:{MODEL}"
        assert client.cache_key == f"openai:{MODEL}|remote"
    local = local_dense.encode_documents(TEXTS)
    assert remote.shape == (5, 384) and remote.dtype == np.float32
    np.testing.assert_allclose(remote, local, atol=1e-5)
    np.testing.assert_allclose(queries, local_dense.encode_queries(TEXTS[:1]), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(remote, axis=1), 1.0, atol=1e-6)
    calls = [r for r in encoder_server.requests[before:] if r[0] == "/v1/embeddings"]
    assert calls == [("/v1/embeddings", 200)] * 4  # 2 + 2 + 1 documents, then 1 query


def test_base_url_with_v1_and_the_bare_model_name(encoder_server, local_dense, api_key) -> None:
    with OpenAIHttpDenseEncoder(f"{encoder_server.url}/v1/", "all-MiniLM-L6-v2", api_key=api_key) as client:
        vectors = client.encode_documents(TEXTS[:2])
    np.testing.assert_allclose(vectors, local_dense.encode_documents(TEXTS[:2]), atol=1e-5)


def test_dimension_comes_from_a_probe_when_not_configured(encoder_server, api_key) -> None:
    with OpenAIHttpDenseEncoder(encoder_server.url, MODEL, api_key=api_key) as client:
        assert client.dimension == 384
        assert client.encode_documents([]).shape == (0, 384)


def test_dimension_mismatch_names_both_numbers(encoder_server, api_key) -> None:
    with (
        OpenAIHttpDenseEncoder(encoder_server.url, MODEL, api_key=api_key, dimensions=128) as client,
        pytest.raises(EncodingError) as info,
    ):
        client.encode_documents(TEXTS[:1])
    assert "384" in info.value.message and "128" in info.value.message


def test_sent_dimensions_unsupported_by_the_model_is_a_permanent_error(encoder_server, api_key) -> None:
    before = len(encoder_server.requests)
    with (
        OpenAIHttpDenseEncoder(
            encoder_server.url, MODEL, api_key=api_key, dimensions=128, send_dimensions=True, backoff=0.01
        ) as client,
        pytest.raises(EncodingError, match="HTTP 400"),
    ):
        assert client.fingerprint == f"openai:{MODEL}@128"
        client.encode_documents(TEXTS[:1])
    assert encoder_server.requests[before:] == [("/v1/embeddings", 400)]


def test_wrong_key_is_401_without_retry_and_never_shown(encoder_server, caplog, api_key) -> None:
    wrong = "sk-wrong-secret-0123456789"
    before = len(encoder_server.requests)
    caplog.set_level(logging.DEBUG)
    with (
        OpenAIHttpDenseEncoder(encoder_server.url, MODEL, api_key=wrong, max_retries=3, backoff=0.01) as client,
        pytest.raises(EncodingError) as info,
    ):
        client.encode_documents(TEXTS[:1])
    assert "401" in str(info.value)
    assert encoder_server.requests[before:] == [("/v1/embeddings", 401)]
    for text in (str(info.value), repr(info.value), str(info.value.to_dict()), caplog.text, repr(client)):
        assert wrong not in text
        assert api_key not in text


def test_missing_key_is_401(encoder_server) -> None:
    with OpenAIHttpDenseEncoder(encoder_server.url, MODEL) as client, pytest.raises(EncodingError, match="401"):
        client.encode_documents(TEXTS[:1])


def test_unknown_model_is_a_permanent_error(encoder_server, api_key) -> None:
    before = len(encoder_server.requests)
    with (
        OpenAIHttpDenseEncoder(encoder_server.url, "text-embedding-3-small", api_key=api_key, backoff=0.01) as client,
        pytest.raises(EncodingError, match="404") as info,
    ):
        client.encode_documents(TEXTS[:1])
    assert "not served" in info.value.message
    assert encoder_server.requests[before:] == [("/v1/embeddings", 404)]
