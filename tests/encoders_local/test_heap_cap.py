"""Every local torch model is built after the heap cap (in `load_once`), shown on the dense encoder, for real."""

from __future__ import annotations

import sys

import pytest

from heapkit import run_probe

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc"),
]

ENCODE = (
    "from ragindex.encoders.dense.sentence_transformers import SentenceTransformerDenseEncoder; "
    "encoder = SentenceTransformerDenseEncoder('sentence-transformers/all-MiniLM-L6-v2', precision='float32'); "
    "result = len(encoder.encode_documents(['the lighthouse keeper logged the fog'] * 64))"
)


def test_the_torch_encoder_serves_large_blocks_from_mmap_after_building_its_model() -> None:
    encoded, mapped = run_probe(ENCODE)
    assert encoded == "64"
    assert mapped >= 4 << 20
