"""The torch encoders give the heap back after each batch of documents, never after queries.

What a release does is tested on the real glibc in tests/unit/test_heap.py; here, that the encoders release where
they should: counted around the real function, on the real model.
"""

from __future__ import annotations

import pytest

import ragindex.encoders.dense.sentence_transformers as dense_module
from ragindex.encoders.dense.sentence_transformers import SentenceTransformerDenseEncoder
from ragindex.encoders.heap import release_heap

pytestmark = pytest.mark.integration


def test_a_batch_of_documents_releases_the_heap_and_queries_do_not(monkeypatch: pytest.MonkeyPatch) -> None:
    released: list[bool] = []

    def counted() -> bool:
        released.append(release_heap())
        return released[-1]

    monkeypatch.setattr(dense_module, "release_heap", counted)
    encoder = SentenceTransformerDenseEncoder("sentence-transformers/all-MiniLM-L6-v2", precision="float32")
    texts = ["the lighthouse keeper logged the fog"] * 8
    assert encoder.encode_queries(texts).shape == (8, 384)
    assert released == []
    assert encoder.encode_documents(texts).shape == (8, 384)
    assert encoder.encode_documents(texts[:3]).shape == (3, 384)
    assert released == [True, True]
