"""CrossEncoderReranker on a real (tiny, locally built) cross-encoder: sigmoid of the logits, once, in order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragindex.errors import RetrievalConfigurationError, RetrievalEncodingError
from ragindex.retrieval.rerank import MODEL_SETTING, CrossEncoderReranker, sigmoid

pytestmark = pytest.mark.integration

QUERY = "how do glaciers shape valleys"
TEXTS = [
    "Glaciers carve U-shaped valleys as the ice grinds the bedrock.",
    "Espresso is brewed by forcing hot water through finely ground coffee.",
    "Rivers cut V-shaped valleys.",
    "Tides are caused by the Moon.",
    "A cirque is a bowl carved by a glacier at the head of a valley, and moraines mark where the ice stopped.",
]


def direct_logits(path: Path, query: str, texts: list[str]) -> np.ndarray:
    """The model's raw logits computed with plain transformers (no sentence-transformers involved)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(str(path), local_files_only=True)
    model.eval()
    features = tokenizer(
        [query] * len(texts), texts, padding=True, truncation=True, max_length=512, return_tensors="pt"
    )
    with torch.inference_mode():
        logits = model(**features).logits
    return np.asarray(logits.squeeze(-1).float().numpy(), dtype=np.float64)


def test_scores_are_the_sigmoid_of_the_raw_logits_applied_once(tiny_cross_encoder: Path) -> None:
    reranker = CrossEncoderReranker(str(tiny_cross_encoder), batch_size=2)
    scores = reranker.rerank(QUERY, TEXTS)
    logits = direct_logits(tiny_cross_encoder, QUERY, TEXTS)
    assert len(scores) == len(TEXTS)
    assert all(0.0 <= s <= 1.0 for s in scores)
    np.testing.assert_allclose(scores, 1.0 / (1.0 + np.exp(-logits)), atol=1e-5)
    np.testing.assert_allclose(reranker.logits(QUERY, TEXTS), logits, atol=1e-4)
    # sentence-transformers' own default activation for one label is already a sigmoid: we bypass it
    import torch

    model = reranker._load()
    assert isinstance(model.activation_fn, torch.nn.Sigmoid)
    twice = 1.0 / (1.0 + np.exp(-(1.0 / (1.0 + np.exp(-logits)))))
    assert not np.allclose(scores, twice, atol=1e-3)
    assert len(set(np.round(scores, 6))) == len(TEXTS)  # the tiny model does tell the texts apart


def test_batching_and_input_order_do_not_change_scores(tiny_cross_encoder: Path) -> None:
    reference = CrossEncoderReranker(str(tiny_cross_encoder), batch_size=64).rerank(QUERY, TEXTS)
    for batch_size in (1, 3):
        batched = CrossEncoderReranker(str(tiny_cross_encoder), batch_size=batch_size).rerank(QUERY, TEXTS)
        np.testing.assert_allclose(batched, reference, atol=1e-5)
    reversed_scores = CrossEncoderReranker(str(tiny_cross_encoder)).rerank(QUERY, TEXTS[::-1])
    np.testing.assert_allclose(reversed_scores[::-1], reference, atol=1e-5)


def test_one_model_per_process_and_nothing_loaded_for_no_texts(tiny_cross_encoder: Path) -> None:
    idle = CrossEncoderReranker(str(tiny_cross_encoder), max_length=256)
    assert idle.rerank(QUERY, []) == []
    assert idle._model is None
    first, second = CrossEncoderReranker(str(tiny_cross_encoder)), CrossEncoderReranker(str(tiny_cross_encoder))
    first.load()
    second.load()
    assert first._model is second._model
    assert first.name == f"ce:{tiny_cross_encoder}"


def test_a_model_that_cannot_be_loaded_names_the_setting(tmp_path: Path) -> None:
    reranker = CrossEncoderReranker("ragindex-tests/no-such-reranker")
    with pytest.raises(RetrievalConfigurationError, match=MODEL_SETTING) as info:
        reranker.rerank(QUERY, TEXTS)
    assert info.value.context["setting"] == MODEL_SETTING
    empty = tmp_path / "empty-model-dir"
    empty.mkdir()
    with pytest.raises(RetrievalConfigurationError, match=MODEL_SETTING):
        CrossEncoderReranker(str(empty)).load()


def test_a_failing_forward_pass_is_an_encoding_error(tiny_cross_encoder: Path) -> None:
    # the tiny model has 512 positions: a 1024-token pair overflows its position embeddings
    reranker = CrossEncoderReranker(str(tiny_cross_encoder), max_length=1024)
    with pytest.raises(RetrievalEncodingError, match="rerank"):
        reranker.rerank(QUERY, ["glacier " * 2000])


def test_invalid_construction_is_a_configuration_error() -> None:
    with pytest.raises(RetrievalConfigurationError):
        CrossEncoderReranker("x", batch_size=0)
    with pytest.raises(RetrievalConfigurationError):
        CrossEncoderReranker("x", max_length=1)


def test_sigmoid_is_stable_at_the_extremes() -> None:
    out = sigmoid(np.array([-1e4, -2.0, 0.0, 2.0, 1e4]))
    np.testing.assert_allclose(out, [0.0, 1 / (1 + np.exp(2.0)), 0.5, 1 / (1 + np.exp(-2.0)), 1.0], atol=1e-12)
