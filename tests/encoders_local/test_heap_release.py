"""The torch encoders give the heap back after each batch of documents, never after queries.

What a release does is tested on the real glibc in tests/unit/test_heap.py; here, that the encoders release where
they should: counted around the real function, on the real model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import ragindex.encoders.dense.sentence_transformers as dense_module
import ragindex.encoders.sparse.bge_m3 as sparse_module
from ragindex.encoders.dense.sentence_transformers import SentenceTransformerDenseEncoder
from ragindex.encoders.heap import release_heap
from ragindex.encoders.sparse.bge_m3 import BgeM3SparseEncoder

pytestmark = pytest.mark.integration


def _counted(monkeypatch: pytest.MonkeyPatch, module: object) -> list[bool]:
    released: list[bool] = []

    def counted() -> bool:
        released.append(release_heap())
        return released[-1]

    monkeypatch.setattr(module, "release_heap", counted)
    return released


def test_a_batch_of_documents_releases_the_heap_and_queries_do_not(monkeypatch: pytest.MonkeyPatch) -> None:
    released = _counted(monkeypatch, dense_module)
    encoder = SentenceTransformerDenseEncoder("sentence-transformers/all-MiniLM-L6-v2", precision="float32")
    texts = ["the lighthouse keeper logged the fog"] * 8
    assert encoder.encode_queries(texts).shape == (8, 384)
    assert released == []
    assert encoder.encode_documents(texts).shape == (8, 384)
    assert encoder.encode_documents(texts[:3]).shape == (3, 384)
    assert released == [True, True]


def test_bge_m3_releases_after_documents_not_queries(monkeypatch: pytest.MonkeyPatch, tiny_bge_m3: Path) -> None:
    released = _counted(monkeypatch, sparse_module)
    encoder = BgeM3SparseEncoder(str(tiny_bge_m3), batch_size=4, max_length=32)
    assert len(encoder.encode_queries(["tides and the moon"])) == 1
    assert released == []
    assert len(encoder.encode_documents(["tides and the moon", "basalt columns"])) == 2
    assert released == [True]
