"""The local torch dense model runs an encoder batch in forward passes of ``RAGINDEX_DENSE_BATCH_SIZE`` texts.

The ingest's batch (``RAGINDEX_EMBED_BATCH_SIZE`` chunks per claim, encode and index write) and the model's forward
pass are two sizes: with passes of 32 inside batches of 64, cold ingests took ~20% less time than with passes of 64
(docs/explanation/performance.md). Counted with a forward hook on the real model.
"""

from __future__ import annotations

from typing import Any

import pytest

from ragindex import factory
from ragindex.config.settings import Settings
from ragindex.encoders.dense.sentence_transformers import SentenceTransformerDenseEncoder

pytestmark = pytest.mark.integration

TEXTS = [f"field note {i}: the tide came in over the basalt shelf" for i in range(70)]


def _heavy(settings: Settings) -> SentenceTransformerDenseEncoder:
    heavy = factory.build_dense_encoder(settings).heavy.inner  # type: ignore[attr-defined]
    assert isinstance(heavy, SentenceTransformerDenseEncoder)
    return heavy


def _pass_sizes(encoder: SentenceTransformerDenseEncoder, texts: list[str]) -> list[int]:
    sizes: list[int] = []

    def hook(_module: Any, args: tuple[Any, ...]) -> None:
        sizes.append(int(args[0]["input_ids"].shape[0]))

    handle = encoder._load().register_forward_pre_hook(hook)
    try:
        assert encoder.encode_documents(texts).shape == (len(texts), 384)
    finally:
        handle.remove()
    return sizes


def test_an_encoder_batch_runs_in_passes_of_the_dense_batch_size() -> None:
    settings = Settings(dense_precision="float32")
    assert (settings.dense.embed_batch_size, settings.dense.dense_batch_size) == (64, 32)
    assert _pass_sizes(_heavy(settings), TEXTS[:64]) == [32, 32]
    assert _pass_sizes(_heavy(Settings(dense_precision="float32", dense_batch_size=24)), TEXTS) == [24, 24, 22]
