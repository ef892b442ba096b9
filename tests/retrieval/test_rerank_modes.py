"""The ``+rerank`` suffix of eval modes and the rerank settings (no model involved)."""

from __future__ import annotations

import pytest

from ragindex.config.settings import Settings
from ragindex.errors import ValidationError
from ragindex.eval.runner import parse_modes
from ragindex.retrieval.search import SearchRequest
from ragindex.types import SearchMode


def test_any_mode_takes_the_rerank_suffix() -> None:
    specs = parse_modes("hybrid+rerank,hybrid:dbsf+rerank,dense+rerank,hybrid")
    assert [(s.name, s.mode, s.fusion, s.rerank) for s in specs] == [
        ("hybrid+rerank", "hybrid", None, True),
        ("hybrid:dbsf+rerank", "hybrid", "dbsf", True),
        ("dense+rerank", "dense", None, True),
        ("hybrid", "hybrid", None, False),
    ]
    for bad in ("hybrid+boost", "hybrid+", "bm25:rrf+rerank", "lexical+rerank"):
        with pytest.raises(ValidationError):
            parse_modes(bad)


def test_rerank_settings_defaults_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(_env_file=None)
    assert settings.rerank_model == "BAAI/bge-reranker-v2-m3"
    assert (settings.rerank_enabled, settings.rerank_candidates) == (False, 50)
    assert (settings.rerank_batch_size, settings.rerank_max_length, settings.rerank_device) == (32, 512, "cpu")
    monkeypatch.setenv("RAGINDEX_RERANK_ENABLED", "true")
    monkeypatch.setenv("RAGINDEX_RERANK_CANDIDATES", "20")
    assert (Settings(_env_file=None).rerank_enabled, Settings(_env_file=None).rerank_candidates) == (True, 20)
    monkeypatch.setenv("RAGINDEX_RERANK_CANDIDATES", "0")
    with pytest.raises(ValueError, match="rerank_candidates"):
        Settings(_env_file=None)


def test_threshold_with_rerank_is_a_probability() -> None:
    fields = {"query": "q", "user_id": 1, "set_id": 1, "doc_ids": None, "top_k": 3, "fusion": "rrf", "candidates": 5}
    bm25 = SearchMode.BM25
    assert SearchRequest(**fields, mode=bm25, score_threshold=0.7, rerank=True).score_threshold == 0.7
    assert SearchRequest(**fields, mode=bm25, score_threshold=7.0, rerank=False).score_threshold == 7.0
    with pytest.raises(ValidationError, match=r"\[0, 1\]"):
        SearchRequest(**fields, mode=bm25, score_threshold=7.0, rerank=True)
