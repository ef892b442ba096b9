"""Retry policy of the remote encoders against a tiny real HTTP server (stdlib) that fails on purpose.

The server counts requests, so "retried" and "not retried" are observed, not assumed.
"""

from __future__ import annotations

import logging
import socket
import time
from typing import Any

import numpy as np
import pytest

from ragindex.encoders._http import RetryingJsonClient, display_url
from ragindex.encoders.dense.openai_http import OpenAIHttpDenseEncoder
from ragindex.encoders.sparse.bge_m3_http import BgeM3HttpSparseEncoder, RemoteBgeM3Encoder
from ragindex.errors import ConfigurationError, EncodingError
from ragindex.types import SparseVector

pytestmark = pytest.mark.integration


def embeddings_answer(body: Any, dim: int = 3) -> dict[str, Any]:
    """A valid OpenAI answer: input i gets (i+1, 0, ...); data listed in reverse order (order is by index)."""
    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
    data = [{"object": "embedding", "index": i, "embedding": [i + 1.0] + [0.0] * (dim - 1)} for i in range(len(texts))]
    return {"object": "list", "data": data[::-1], "model": body["model"], "usage": {"prompt_tokens": 1}}


def encode_answer(body: Any) -> dict[str, Any]:
    """A valid /encode answer: text i gets sparse {i: 1.0, 1000: 0.01} and dense (3, 4 * i)."""
    n = len(body["texts"])
    out: dict[str, Any] = {"sparse": [{str(i): 1.0, "1000": 0.01} for i in range(n)]}
    if body.get("return_dense"):
        out["dense"] = [[3.0, 4.0 * i] for i in range(n)]
    return out


def failing_first(n_failures: int, status: int, answer: Any) -> Any:
    def script(n: int, path: str, body: Any) -> tuple[int, Any, float]:
        if n <= n_failures:
            return status, {"error": {"message": f"scripted failure {n}"}}, 0.0
        return 200, answer(body), 0.0

    return script


def test_5xx_is_retried_then_succeeds(scripted) -> None:
    server = scripted(failing_first(2, 503, embeddings_answer))
    with OpenAIHttpDenseEncoder(server.url, "m", max_retries=3, backoff=0.01) as client:
        vectors = client.encode_documents(["a", "b", "c"])
    assert server.requests == ["/v1/embeddings"] * 3
    np.testing.assert_allclose(vectors[:, 0], [1.0, 1.0, 1.0])  # unit length after normalisation
    assert client.dimension == 3


def test_answers_are_put_back_in_input_order_by_index(scripted) -> None:
    def script(n: int, path: str, body: Any) -> tuple[int, Any, float]:
        # text "k" gets the unit vector at angle k * 10 degrees; data listed in reverse order
        angles = [np.radians(10 * int(t)) for t in body["input"]]
        data = [{"index": i, "embedding": [float(np.cos(a)), float(np.sin(a))]} for i, a in enumerate(angles)]
        return 200, {"data": data[::-1]}, 0.0

    server = scripted(script)
    with OpenAIHttpDenseEncoder(server.url, "m", batch_size=2) as client:
        vectors = client.encode_documents(["0", "3", "6"])
    radians = np.radians([0, 30, 60])
    np.testing.assert_allclose(vectors, np.stack([np.cos(radians), np.sin(radians)], axis=1), atol=1e-6)
    assert server.requests == ["/v1/embeddings"] * 2


def test_retries_are_bounded_and_linear(scripted) -> None:
    server = scripted(failing_first(100, 502, embeddings_answer))
    started = time.perf_counter()
    with (
        OpenAIHttpDenseEncoder(server.url, "m", max_retries=3, backoff=0.1) as client,
        pytest.raises(EncodingError) as info,
    ):
        client.encode_documents(["a"])
    elapsed = time.perf_counter() - started
    assert server.requests == ["/v1/embeddings"] * 4
    assert "after 4 attempt(s)" in info.value.message and "HTTP 502" in info.value.message
    assert "scripted failure 4" in info.value.message
    assert elapsed >= 0.1 + 0.2 + 0.3


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_4xx_is_permanent(scripted, status: int) -> None:
    server = scripted(failing_first(100, status, embeddings_answer))
    with (
        OpenAIHttpDenseEncoder(server.url, "m", max_retries=3, backoff=0.01) as client,
        pytest.raises(EncodingError, match=f"refused the request: HTTP {status}") as info,
    ):
        client.encode_documents(["a"])
    assert server.requests == ["/v1/embeddings"]
    assert info.value.context["status"] == status


@pytest.mark.parametrize("status", [408, 429])
def test_try_later_4xx_is_retried(scripted, status: int) -> None:
    server = scripted(failing_first(1, status, embeddings_answer))
    with OpenAIHttpDenseEncoder(server.url, "m", max_retries=2, backoff=0.01) as client:
        client.encode_documents(["a"])
    assert server.requests == ["/v1/embeddings"] * 2


def test_retry_after_lengthens_the_wait(scripted) -> None:
    def script(n: int, path: str, body: Any) -> tuple[Any, ...]:
        if n == 1:
            return 429, {"error": {"message": "slow down"}}, 0.0, {"Retry-After": "0.4"}
        return 200, embeddings_answer(body), 0.0

    server = scripted(script)
    started = time.perf_counter()
    with OpenAIHttpDenseEncoder(server.url, "m", max_retries=1, backoff=0.01) as client:
        client.encode_documents(["a"])
    assert time.perf_counter() - started >= 0.4
    assert server.requests == ["/v1/embeddings"] * 2


def test_timeout_is_retried_then_raised(scripted) -> None:
    server = scripted(lambda n, path, body: (200, embeddings_answer(body), 0.6))
    with (
        OpenAIHttpDenseEncoder(server.url, "m", timeout=0.15, max_retries=1, backoff=0.01) as client,
        pytest.raises(EncodingError, match=r"after 2 attempt\(s\): timed out after 0.15s"),
    ):
        client.encode_documents(["a"])
    assert server.requests == ["/v1/embeddings"] * 2


def test_unreachable_service_is_an_encoding_error() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with (
        RetryingJsonClient(f"http://127.0.0.1:{port}", max_retries=1, backoff=0.01, service="x") as client,
        pytest.raises(EncodingError, match=r"x at http://127.0.0.1:\d+/p failed after 2 attempt\(s\): ConnectError"),
    ):
        client.post_json("/p", {})


def test_answer_without_embeddings_is_a_permanent_error(scripted) -> None:
    server = scripted(lambda n, path, body: (200, "not an object", 0.0))
    with (
        OpenAIHttpDenseEncoder(server.url, "m", backoff=0.01) as client,
        pytest.raises(EncodingError, match="answered no embeddings for 1 inputs"),
    ):
        client.encode_documents(["a"])
    assert server.requests == ["/v1/embeddings"]


def test_key_is_sent_as_bearer_and_scrubbed_from_errors(scripted, caplog) -> None:
    secret = "sk-live-very-secret-42"

    def script(n: int, path: str, body: Any) -> tuple[int, Any, float]:
        return 500, {"error": {"message": f"upstream echoed {secret}"}}, 0.0

    server = scripted(script)
    caplog.set_level(logging.DEBUG)
    with (
        OpenAIHttpDenseEncoder(server.url, "m", api_key=secret, max_retries=1, backoff=0.01) as client,
        pytest.raises(EncodingError) as info,
    ):
        client.encode_documents(["a"])
    assert server.headers[0]["Authorization"] == f"Bearer {secret}"
    assert "upstream echoed ***" in info.value.message
    assert secret not in str(info.value) and secret not in caplog.text


def test_display_url_drops_credentials_and_query() -> None:
    assert display_url("https://user:pw@host:8443/v1/embeddings?key=abc") == "https://host:8443/v1/embeddings"


def test_remote_bge_m3_retries_5xx_and_returns_dense_and_sparse(scripted) -> None:
    server = scripted(failing_first(2, 500, encode_answer))
    with RemoteBgeM3Encoder(server.url, max_retries=3, backoff=0.01, top_k=5, min_weight=0.05) as encoder:
        sparse, dense = encoder.encode_with_dense(["x", "y"])
    assert server.requests == ["/encode"] * 3
    assert sparse == [SparseVector((0,), (1.0,)), SparseVector((1,), (1.0,))]  # 0.01 < min_weight dropped
    np.testing.assert_allclose(dense, [[1.0, 0.0], [0.6, 0.8]])


def test_remote_bge_m3_4xx_is_permanent(scripted) -> None:
    server = scripted(failing_first(100, 400, encode_answer))
    with (
        RemoteBgeM3Encoder(server.url, max_retries=3, backoff=0.01) as encoder,
        pytest.raises(EncodingError, match="HTTP 400"),
    ):
        encoder.encode_documents(["x"])
    assert server.requests == ["/encode"]


def test_remote_bge_m3_gives_up_after_max_retries(scripted) -> None:
    server = scripted(failing_first(100, 503, encode_answer))
    with (
        RemoteBgeM3Encoder(server.url, max_retries=2, backoff=0.01) as encoder,
        pytest.raises(EncodingError, match=r"remote_bge_m3 service .* failed after 3 attempt\(s\): HTTP 503"),
    ):
        encoder.encode_documents(["x"])
    assert server.requests == ["/encode"] * 3


def test_bge_m3_http_request_body_and_single_attempt(scripted) -> None:
    bodies: list[Any] = []

    def script(n: int, path: str, body: Any) -> tuple[int, Any, float]:
        bodies.append(body)
        return (503, {"detail": "busy"}, 0.0) if n == 3 else (200, encode_answer(body), 0.0)

    server = scripted(script)
    with BgeM3HttpSparseEncoder(server.url, batch_size=2, max_length=128) as encoder:
        vectors = encoder.encode_queries(["a", "b", "c", "d"])
        assert len(vectors) == 4
        with pytest.raises(EncodingError, match=r"after 1 attempt\(s\): HTTP 503: busy"):
            encoder.encode_documents(["e"])
    assert bodies[0] == {
        "texts": ["a", "b"],
        "return_dense": False,
        "return_sparse": True,
        "return_colbert": False,
        "max_length": 128,
        "batch_size": 2,
    }
    assert server.requests == ["/encode"] * 3


def test_malformed_sparse_answer_is_an_encoding_error(scripted) -> None:
    server = scripted(lambda n, path, body: (200, {"sparse": [{"tok": "x"}]}, 0.0))
    with BgeM3HttpSparseEncoder(server.url) as encoder, pytest.raises(EncodingError, match="token ids"):
        encoder.encode_documents(["a"])
    server.script = lambda n, path, body: (200, {"sparse": []}, 0.0)
    with BgeM3HttpSparseEncoder(server.url) as encoder, pytest.raises(EncodingError, match="0 sparse vectors for 1"):
        encoder.encode_documents(["a"])


def test_invalid_client_parameters_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="max_retries"):
        RetryingJsonClient("http://127.0.0.1:9", max_retries=-1)
    with pytest.raises(ConfigurationError, match="RAGINDEX_DENSE_DIMENSIONS"):
        OpenAIHttpDenseEncoder("http://127.0.0.1:9", "m", send_dimensions=True)
    with pytest.raises(ConfigurationError, match="top_k"):
        RemoteBgeM3Encoder("http://127.0.0.1:9", top_k=0)
