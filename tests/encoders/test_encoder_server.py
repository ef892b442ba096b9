"""The encoder server's routes, called with plain httpx (the contract, not a client of ours)."""

from __future__ import annotations

import base64
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the encoder server needs ragindex[service]")

from ragindex.encoders.server import ThreadedServer, create_encoder_app

pytestmark = pytest.mark.integration

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture
def http(encoder_server, api_key):
    with httpx.Client(base_url=encoder_server.url, headers={"Authorization": f"Bearer {api_key}"}) as client:
        yield client


def test_healthz_is_open_and_names_the_models(encoder_server, local_sparse):
    with httpx.Client(base_url=encoder_server.url) as client:
        answer = client.get("/healthz")
        assert client.get("/v1/models").status_code == 401
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok", "dense": MODEL, "sparse": local_sparse.name}


def test_models_lists_the_dense_model(http):
    data = http.get("/v1/models").json()["data"]
    assert [m["id"] for m in data] == [MODEL]


def test_embeddings_string_input_usage_and_base64(http, local_dense):
    one = http.post("/v1/embeddings", json={"model": MODEL, "input": "hello world"}).json()
    assert one["object"] == "list" and one["model"] == MODEL
    assert one["usage"] == {"prompt_tokens": 2, "total_tokens": 2}
    assert [d["index"] for d in one["data"]] == [0] and one["data"][0]["object"] == "embedding"
    expected = local_dense.encode_documents(["hello world"])[0]
    np.testing.assert_allclose(one["data"][0]["embedding"], expected, atol=1e-6)
    packed = http.post("/v1/embeddings", json={"model": MODEL, "input": ["hello world"], "encoding_format": "base64"})
    vector = np.frombuffer(base64.b64decode(packed.json()["data"][0]["embedding"]), dtype="<f4")
    np.testing.assert_allclose(vector, expected, atol=1e-6)


def test_embeddings_errors_use_the_openai_shape(http):
    answer = http.post("/v1/embeddings", json={"model": "nope", "input": ["x"]})
    assert answer.status_code == 404
    assert answer.json()["error"]["type"] == "invalid_request_error"
    assert "not served" in answer.json()["error"]["message"]
    assert http.post("/v1/embeddings", json={"model": MODEL, "input": ["x"], "dimensions": 8}).status_code == 400
    assert http.post("/v1/embeddings", json={"model": MODEL, "input": [[1, 2, 3]]}).status_code == 422


def test_encode_contract(http, local_dense):
    answer = http.post("/encode", json={"texts": ["a b", "c"], "return_dense": True, "return_sparse": True})
    body = answer.json()
    assert set(body) == {"dense", "sparse"}
    np.testing.assert_allclose(body["dense"], local_dense.encode_documents(["a b", "c"]), atol=1e-6)
    assert len(body["sparse"]) == 2 and all(isinstance(k, str) for k in body["sparse"][0])
    sparse_only = http.post("/encode", json={"texts": ["a b"], "return_dense": False, "return_sparse": True}).json()
    assert set(sparse_only) == {"sparse"}
    colbert = http.post("/encode", json={"texts": ["a"], "return_colbert": True})
    assert colbert.status_code == 400 and "not supported" in colbert.json()["detail"]


def test_wrong_or_missing_key_is_401(encoder_server):
    with httpx.Client(base_url=encoder_server.url) as client:
        assert client.post("/encode", json={"texts": ["a"]}).status_code == 401
        wrong = client.post("/encode", json={"texts": ["a"]}, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"


class SlowDense:
    """The real local encoder behind a one-second pause: a dependency of the server, slowed down."""

    def __init__(self, inner):
        self.inner = inner
        self.fingerprint = inner.fingerprint
        self.cache_key = inner.cache_key
        self.model_name = inner.model_name
        self.dimension = 384

    def encode_documents(self, texts):
        time.sleep(1.0)
        return self.inner.encode_documents(texts)

    encode_queries = encode_documents


def test_encoding_runs_off_the_event_loop(local_dense):
    with ThreadedServer(create_encoder_app(SlowDense(local_dense), None)) as server, httpx.Client() as client:
        pool = ThreadPoolExecutor(1)
        try:
            slow = pool.submit(client.post, f"{server.url}/v1/embeddings", json={"input": ["x"]}, timeout=10)
            time.sleep(0.2)
            started = time.perf_counter()
            assert client.get(f"{server.url}/healthz").status_code == 200
            assert time.perf_counter() - started < 0.5  # answered while the encode sleeps
            assert slow.result().status_code == 200
        finally:
            pool.shutdown()
