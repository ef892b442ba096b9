"""The bge_m3_http and remote_bge_m3 providers against the project's encoder server (/encode)."""

from __future__ import annotations

import numpy as np
import pytest

from ragindex.encoders.sparse.bge_m3_http import BgeM3HttpSparseEncoder, RemoteBgeM3Encoder
from ragindex.encoders.sparse.cleaning import clean_lexical_weights
from ragindex.errors import EncodingError
from ragindex.types import SparseVector

pytestmark = pytest.mark.integration

TEXTS = [
    "BGE-M3 learns one weight per token.",
    "Sparse vectors keep the lexical signal.",
    "数据治理流程",
    "a",
    "Retrieval augmented generation needs good recall over many documents and formats.",
]


def raw_weights(sparse, texts, batch_size):
    """What the server's sparse encoder produced, as the /encode contract carries it (in the client's batches)."""
    out = []
    for start in range(0, len(texts), batch_size):
        batch = texts[start : start + batch_size]
        raw = getattr(sparse, "lexical_weights", None)
        if raw is not None:
            out += raw(batch)
        else:
            out += [dict(zip(v.indices, v.values, strict=True)) for v in sparse.encode_documents(batch)]
    return out


@pytest.mark.parametrize(("top_k", "min_weight"), [(10_000, 0.0), (3, 0.0), (10_000, 0.6)])
def test_bge_m3_http_equals_cleaning_of_the_server_output(encoder_server, local_sparse, api_key, top_k, min_weight):
    with BgeM3HttpSparseEncoder(
        encoder_server.url, top_k=top_k, min_weight=min_weight, batch_size=2, api_key=api_key
    ) as encoder:
        documents = encoder.encode_documents(TEXTS)
        queries = encoder.encode_queries(TEXTS[:2])
    raw = raw_weights(local_sparse, TEXTS, 2)
    expected = [clean_lexical_weights(w, top_k=top_k, min_weight=min_weight) for w in raw]
    assert documents == expected
    assert queries == expected[:2]
    assert all(isinstance(v, SparseVector) and list(v.indices) == sorted(set(v.indices)) for v in documents)
    if top_k == 3:
        assert max(len(v.indices) for v in documents) == 3
    if min_weight:
        assert all(min(v.values) >= min_weight for v in documents if v.values)


def test_remote_bge_m3_sparse_and_dense_from_one_call(encoder_server, local_sparse, local_dense, api_key):
    before = len(encoder_server.requests)
    with RemoteBgeM3Encoder(encoder_server.url, top_k=8, min_weight=0.0, api_key=api_key) as encoder:
        sparse_only = encoder.encode_documents(TEXTS)
        sparse, dense = encoder.encode_with_dense(TEXTS)
        assert encoder.name == "remote_bge_m3:BAAI/bge-m3|top_k=8|min_weight=0"
    expected = [clean_lexical_weights(w, top_k=8, min_weight=0.0) for w in raw_weights(local_sparse, TEXTS, 32)]
    assert sparse_only == expected
    assert sparse == expected
    assert dense.dtype == np.float32
    np.testing.assert_allclose(dense, local_dense.encode_documents(TEXTS), atol=1e-5)
    assert encoder_server.requests[before:] == [("/encode", 200)] * 2


def test_names_identify_provider_model_and_cleaning():
    encoder = BgeM3HttpSparseEncoder("http://127.0.0.1:9", top_k=64, min_weight=0.01, model="my/bge-m3")
    with encoder:
        assert encoder.name == "bge_m3_http:my/bge-m3|top_k=64|min_weight=0.01"
        assert "127.0.0.1:9" in repr(encoder)


def test_server_without_sparse_names_the_setting(dense_only_server):
    with (
        BgeM3HttpSparseEncoder(dense_only_server.url) as encoder,
        pytest.raises(EncodingError, match="HTTP 400: .*RAGINDEX_SPARSE_PROVIDER=bge_m3"),
    ):
        encoder.encode_documents(["x"])


def test_empty_input_makes_no_request(encoder_server, api_key):
    before = len(encoder_server.requests)
    with RemoteBgeM3Encoder(encoder_server.url, api_key=api_key) as encoder:
        assert encoder.encode_documents([]) == []
        sparse, dense = encoder.encode_with_dense([])
    assert sparse == [] and dense.shape[0] == 0
    assert encoder_server.requests[before:] == []
