"""The language guard's pure parts: script detection, model coverage, the setting, and the JSON of a skipped source."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragindex.config import Settings
from ragindex.encoders.dense.openai_http import OpenAIHttpDenseEncoder
from ragindex.encoders.dense.sentence_transformers import SentenceTransformerDenseEncoder
from ragindex.language import ALL_SCRIPTS, Script, dominant_script, model_scripts, parse_languages, script_counts
from ragindex.types import Hit, SearchResult, SourceScore

LATIN = frozenset({Script.LATIN})


@pytest.mark.parametrize(
    ("text", "script"),
    [
        ("what is the largest moon of jupiter", Script.LATIN),
        ("Où se trouve la gare ?", Script.LATIN),
        ("列出目录内容", Script.HAN),
        ("什么是 Python", Script.HAN),  # 3 Han characters weigh 9, 6 Latin letters 6
        ("pip install 失败", Script.LATIN),  # 10 Latin letters against 2 Han characters (6)
        ("Apache HTTP 服务器性能测试工具", Script.HAN),
        ("東京の天気はどうですか", Script.KANA),
        ("안녕하세요 세계", Script.HANGUL),
        ("Привет, мир", Script.CYRILLIC),
        ("مرحبا بالعالم", Script.ARABIC),
        ("שלום עולם", Script.HEBREW),
        ("नमस्ते दुनिया", Script.DEVANAGARI),
        ("Καλημέρα κόσμε", Script.GREEK),
        ("สวัสดีชาวโลก", Script.THAI),
        ("ⰀⰁⰂ", Script.OTHER),  # Glagolitic: a letter of no listed script
        ("ＡＢＣ ｄｅｆ", Script.LATIN),  # fullwidth Latin
    ],
)
def test_dominant_script(text: str, script: Script) -> None:
    assert dominant_script(text) is script


@pytest.mark.parametrize("text", ["", "   ", "123 456", "!?。，、", "2024-01-01 12:00"])
def test_a_text_without_letters_has_no_script(text: str) -> None:
    assert dominant_script(text) is None
    assert script_counts(text) == {}


def test_script_counts_weigh_han_as_words() -> None:
    assert script_counts("什么是 Python") == {Script.HAN: 9.0, Script.LATIN: 6.0}
    assert script_counts("abc") == {Script.LATIN: 3.0}


def test_only_the_start_of_a_long_text_is_read() -> None:
    assert dominant_script("a" * 600 + "中" * 600) is Script.LATIN


@pytest.mark.parametrize(
    "model",
    [
        "sentence-transformers/all-MiniLM-L6-v2",
        "all-MiniLM-L6-v2",
        "/models/all-mpnet-base-v2/",
        "sentence-transformers/msmarco-distilbert-base-v4",
        "sentence-transformers/multi-qa-MiniLM-L6-cos-v1",
        "intfloat/e5-base-v2",
        "BAAI/bge-small-en-v1.5",
        "thenlper/gte-base",
    ],
)
def test_english_only_model_families_cover_latin(model: str) -> None:
    assert model_scripts(model) == LATIN


@pytest.mark.parametrize(
    "model",
    [
        "BAAI/bge-m3",
        "intfloat/multilingual-e5-small",
        "sentence-transformers/LaBSE",
        "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2",
        "/srv/models/paraphrase-multilingual-mpnet-base-v2",
        "Alibaba-NLP/gte-multilingual-base",
        "moka-ai/m3e-base",
        "BAAI/bge-small-zh-v1.5",  # not known to be English-only
        "text-embedding-3-small",  # a remote API model
        "/data/my-finetune",
    ],
)
def test_multilingual_and_unknown_models_cover_every_script(model: str) -> None:
    assert model_scripts(model) == ALL_SCRIPTS


def test_parse_languages() -> None:
    assert parse_languages("auto") is None
    assert parse_languages(" ALL ") == ALL_SCRIPTS
    assert parse_languages("en,zh") == {Script.LATIN, Script.HAN}
    assert parse_languages("latin, Cyrillic") == {Script.LATIN, Script.CYRILLIC}
    assert parse_languages("ja") == {Script.HAN, Script.KANA}
    with pytest.raises(ValueError, match=r"unknown script or language 'klingon'.*latin, greek"):
        parse_languages("en,klingon")


def test_the_setting_is_validated_and_reaches_the_encoders(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings(_env_file=None).dense.dense_scripts is None
    monkeypatch.setenv("RAGINDEX_DENSE_LANGUAGES", "en,ru")
    assert Settings(_env_file=None).dense.dense_scripts == {Script.LATIN, Script.CYRILLIC}
    monkeypatch.setenv("RAGINDEX_DENSE_LANGUAGES", "nope")
    with pytest.raises(ValidationError, match="dense_languages"):
        Settings(_env_file=None)


def test_encoders_report_their_coverage_without_loading_a_model() -> None:
    shipped = SentenceTransformerDenseEncoder("sentence-transformers/all-MiniLM-L6-v2")
    assert shipped.languages == LATIN
    assert shipped._model is None
    assert shipped.fingerprint == "st:sentence-transformers/all-MiniLM-L6-v2"  # coverage is not in the fingerprint
    assert SentenceTransformerDenseEncoder("all-MiniLM-L6-v2", languages=ALL_SCRIPTS).languages == ALL_SCRIPTS
    remote = OpenAIHttpDenseEncoder("http://127.0.0.1:9", "text-embedding-3-small")
    assert remote.languages == ALL_SCRIPTS
    assert OpenAIHttpDenseEncoder("http://127.0.0.1:9", "m", languages=[Script.LATIN]).languages == LATIN
    remote.close()


def _hit(**extra: object) -> Hit:
    return Hit(
        rank=1,
        chunk_id="c1",
        doc_id=1,
        set_id=1,
        score=0.5,
        source="a.txt",
        filename="a.txt",
        text="t",
        page=None,
        section=None,
        start_line=1,
        end_line=1,
        scores={"bm25": SourceScore(score=3.2, rank=1)},
        **extra,  # type: ignore[arg-type]
    )


def test_to_dict_lists_a_skipped_source_under_scores_and_is_unchanged_otherwise() -> None:
    plain = _hit().to_dict()
    assert plain["scores"] == {"bm25": {"score": 3.2, "rank": 1}}
    skipped = _hit(skipped={"dense": "model does not cover han script"}).to_dict()
    assert skipped["scores"] == {
        "bm25": {"score": 3.2, "rank": 1},
        "dense": {"skipped": "model does not cover han script"},
    }
    assert {k: v for k, v in skipped.items() if k != "scores"} == {k: v for k, v in plain.items() if k != "scores"}


def test_result_warnings_appear_only_when_there_are_some() -> None:
    assert "warnings" not in SearchResult(hits=(), latency_ms={}, mode="dense").to_dict()
    warned = SearchResult(hits=(), latency_ms={}, mode="dense", warnings=("dense: model does not cover han script",))
    assert warned.to_dict()["warnings"] == ["dense: model does not cover han script"]
