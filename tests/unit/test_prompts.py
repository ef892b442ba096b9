"""Prompt resolution of asymmetric dense models: settings, the model's own config, the family default, none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragindex.config.settings import Settings
from ragindex.encoders.prompts import (
    BGE_EN_QUERY,
    BGE_ZH_QUERY,
    E5_INSTRUCT_QUERY,
    NO_PROMPTS,
    Prompts,
    family_prompts,
    model_config_prompts,
    resolve_prompts,
)


@pytest.mark.parametrize(
    ("model", "query", "document"),
    [
        ("intfloat/e5-small-v2", "query: ", "passage: "),
        ("intfloat/e5-large", "query: ", "passage: "),
        ("intfloat/multilingual-e5-base", "query: ", "passage: "),
        ("/models/Xenova/multilingual-e5-small/", "query: ", "passage: "),  # a local copy: the last component
        ("intfloat/multilingual-e5-large-instruct", E5_INSTRUCT_QUERY, ""),
        ("intfloat/e5-mistral-7b-instruct", E5_INSTRUCT_QUERY, ""),
        ("BAAI/bge-small-en-v1.5", BGE_EN_QUERY, ""),
        ("BAAI/bge-large-en", BGE_EN_QUERY, ""),
        ("BAAI/bge-base-zh-v1.5", BGE_ZH_QUERY, ""),
        ("nomic-ai/nomic-embed-text-v1.5", "search_query: ", "search_document: "),
    ],
)
def test_known_families_resolve_by_name(model: str, query: str, document: str) -> None:
    prompts = resolve_prompts(model)
    assert (prompts.query, prompts.document) == (query, document)
    assert prompts.source.startswith("family ")


@pytest.mark.parametrize(
    "model",
    [
        "sentence-transformers/all-MiniLM-L6-v2",
        "all-MiniLM-L6-v2",
        "BAAI/bge-m3",  # symmetric: BGE-M3 retrieval takes no instruction
        "BAAI/bge-reranker-v2-m3",
        "thenlper/gte-base",
        "text-embedding-3-small",
        "my-e5-finetune",  # "e5" inside a name is not the family
    ],
)
def test_symmetric_and_unknown_models_get_no_prompts(model: str) -> None:
    assert family_prompts(model) is None
    prompts = resolve_prompts(model)
    assert prompts == NO_PROMPTS and not prompts and prompts.fingerprint_suffix == ""


def test_the_bge_zh_instruction_is_the_official_one() -> None:
    # FlagEmbedding's query_instruction_for_retrieval for bge-*-zh: full-width colon at the end
    assert BGE_ZH_QUERY == "为这个句子生成表示以用于检索相关文章：" and BGE_ZH_QUERY.endswith("\uff1a")


def write_config(model_dir: Path, prompts: object) -> Path:
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "config_sentence_transformers.json").write_text(json.dumps({"prompts": prompts}), encoding="utf-8")
    return model_dir


def test_the_models_own_prompts_come_before_the_family(tmp_path: Path) -> None:
    model_dir = write_config(tmp_path / "e5-small-v2", {"query": "Q: ", "passage": "P: ", "classification": "C: "})
    prompts = resolve_prompts("intfloat/e5-small-v2", model_dir=model_dir)
    assert (prompts.query, prompts.document, prompts.source) == ("Q: ", "P: ", "model config")


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        ({"query": "q: ", "document": "d: ", "passage": "p: "}, ("q: ", "d: ")),  # encode_document's order
        ({"query": "q: ", "corpus": "c: "}, ("q: ", "c: ")),
        ({"query": "q: "}, ("q: ", None)),
        ({"query": "", "passage": ""}, ("", "")),  # declared empty: "none", not "not said"
        ({}, (None, None)),
        ([], (None, None)),
    ],
)
def test_model_config_prompts(tmp_path: Path, declared: object, expected: tuple[str | None, str | None]) -> None:
    assert model_config_prompts(write_config(tmp_path / "m", declared)) == expected


def test_a_missing_or_broken_config_declares_nothing(tmp_path: Path) -> None:
    assert model_config_prompts(None) == (None, None)
    assert model_config_prompts(tmp_path) == (None, None)
    (tmp_path / "config_sentence_transformers.json").write_text("{not json", encoding="utf-8")
    assert model_config_prompts(tmp_path) == (None, None)


def test_a_side_declared_empty_by_the_model_does_not_fall_back_to_the_family(tmp_path: Path) -> None:
    model_dir = write_config(tmp_path / "multilingual-e5-small", {"query": ""})
    prompts = resolve_prompts("multilingual-e5-small", model_dir=model_dir)
    assert (prompts.query, prompts.document) == ("", "passage: ")  # the document side: the family's
    assert prompts.source == "query: model config, document: family e5"


def test_settings_override_each_side_and_empty_means_none(tmp_path: Path) -> None:
    model_dir = write_config(tmp_path / "m", {"query": "Q: ", "passage": "P: "})
    assert resolve_prompts("m", query="", document="", model_dir=model_dir) == NO_PROMPTS
    only_query = resolve_prompts("intfloat/e5-base-v2", query="search: ")
    assert (only_query.query, only_query.document) == ("search: ", "passage: ")
    assert only_query.source == "query: settings, document: family e5"


def test_the_fingerprint_suffix_names_both_prompts_but_not_their_source() -> None:
    e5 = Prompts("query: ", "passage: ", "family e5")
    assert e5 == Prompts("query: ", "passage: ", "settings") and hash(e5) == hash(Prompts("query: ", "passage: "))
    assert e5.fingerprint_suffix.startswith("|prompts=") and len(e5.fingerprint_suffix) == len("|prompts=") + 12
    suffixes = {p.fingerprint_suffix for p in (e5, Prompts("query: ", ""), Prompts("", "query: "), Prompts("q", "p"))}
    assert len(suffixes) == 4
    long = Prompts("x" * 5000, "")  # a long instruction still fits the 255-character cache key column
    assert len(long.fingerprint_suffix) == len(e5.fingerprint_suffix)


def test_prompts_go_in_front_of_each_text() -> None:
    prompts = Prompts("query: ", "passage: ")
    assert prompts.queries(["a", "b"]) == ["query: a", "query: b"]
    assert prompts.documents(["a"]) == ["passage: a"]
    assert NO_PROMPTS.queries(("a",)) == ["a"]


def test_settings_declare_the_prompts_unset_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (Settings().dense_query_prompt, Settings().dense_document_prompt) == (None, None)
    monkeypatch.setenv("RAGINDEX_DENSE_QUERY_PROMPT", "")
    monkeypatch.setenv("RAGINDEX_DENSE_DOCUMENT_PROMPT", "passage: ")
    dense = Settings().dense
    assert (dense.dense_query_prompt, dense.dense_document_prompt) == ("", "passage: ")
