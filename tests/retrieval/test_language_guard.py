"""The language guard with the real shipped model (all-MiniLM-L6-v2, English-only) on a small Chinese + English corpus.

A Chinese query in hybrid mode skips dense and ranks the documents as BM25 alone does; an English query is
untouched; dense alone still runs but warns; a model configured to cover Chinese takes part normally.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragindex import Engine
from ragindex.config import Settings
from ragindex.types import SearchResult

DOCS = {
    "hongshaorou.txt": "红烧肉是一道经典的家常菜。五花肉切块后先焯水，再加冰糖炒出糖色，加入酱油和料酒，"
    "用小火慢炖一个小时，直到汤汁浓稠。",
    "changcheng.txt": "长城是中国古代的军事防御工程，东起山海关，西至嘉峪关，全长两万多公里。明朝对长城进行了"
    "大规模的修缮。",
    "xiongmao.txt": "大熊猫主要生活在四川、陕西和甘肃的山区竹林中，以竹子为主要食物，每天要花十几个小时进食。",
    "gaotie.txt": "京沪高速铁路连接北京和上海，全长一千三百多公里，最高运营时速三百五十公里，乘客四个多小时即可到达。",
    "longjing.txt": "龙井茶产于杭州西湖一带，属于绿茶。春季采摘的嫩芽经过杀青和炒制，茶汤清澈，香气持久。",
    "shuju.txt": "数据治理流程包括数据标准、数据质量和元数据管理，企业需要明确数据的责任人和使用规范。",
    "glaciers.txt": "Glaciers carve U-shaped valleys as the ice grinds the bedrock beneath it.",
    "espresso.txt": "Espresso is brewed by forcing hot water through finely ground coffee; a shot uses 18 grams.",
    "tides.txt": "Ocean tides are caused mainly by the gravity of the Moon, and spring tides occur at full moon.",
    "volcano.txt": "A volcano is an opening in the crust where molten rock, ash and gases escape.",
}
CHINESE_QUERIES = {
    "五花肉 小火 慢炖": "hongshaorou.txt",
    "长城 山海关": "changcheng.txt",
    "龙井茶 绿茶 杭州": "longjing.txt",
    "京沪 高速铁路 时速": "gaotie.txt",
}
SKIPPED = "model does not cover han script"


def _engine(root: Path, **settings: object) -> Engine:
    corpus = root / "corpus"
    corpus.mkdir(parents=True)
    for name, text in DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    engine = Engine(Settings(_env_file=None, data_dir=root / "data", **settings))  # type: ignore[arg-type]
    engine.ingest([corpus])
    return engine


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    with _engine(tmp_path_factory.mktemp("guard")) as eng:
        yield eng


def _search(engine: Engine, query: str, mode: str) -> SearchResult:
    return engine.search(query, user_id=1, set_id=1, mode=mode, top_k=len(DOCS))


def _documents(result: SearchResult) -> list[str]:
    order: list[str] = []
    for hit in result.hits:
        if hit.filename not in order:
            order.append(hit.filename)
    return order


@pytest.mark.parametrize(("query", "answer"), CHINESE_QUERIES.items())
def test_a_chinese_query_in_hybrid_ranks_as_bm25_and_reports_dense_skipped(
    engine: Engine, query: str, answer: str
) -> None:
    assert engine.dense.languages == {"latin"}  # the shipped English-only model
    bm25 = _search(engine, query, "bm25")
    assert _documents(bm25)[0] == answer  # the corpus is sound: BM25 finds it
    for fusion in ("rrf", "dbsf"):
        hybrid = engine.search(query, user_id=1, set_id=1, mode="hybrid", fusion=fusion, top_k=len(DOCS))
        assert _documents(hybrid) == _documents(bm25)
        assert hybrid.warnings == ()
        for hit in hybrid.hits:
            assert set(hit.scores) == {"bm25"}
            assert hit.skipped == {"dense": SKIPPED}
            assert hit.to_dict()["scores"]["dense"] == {"skipped": SKIPPED}


def test_an_english_query_is_unaffected(engine: Engine) -> None:
    hybrid = _search(engine, "how is espresso coffee brewed", "hybrid")
    assert hybrid.hits[0].filename == "espresso.txt"
    assert all(hit.skipped == {} for hit in hybrid.hits)
    assert any("dense" in hit.scores for hit in hybrid.hits)
    assert "skipped" not in str(hybrid.to_dict())
    assert "warnings" not in hybrid.to_dict()


def test_dense_alone_still_runs_a_chinese_query_but_warns(engine: Engine) -> None:
    dense = _search(engine, "五花肉 小火 慢炖", "dense")
    assert dense.hits and all("dense" in hit.scores for hit in dense.hits)
    assert len(dense.warnings) == 1 and SKIPPED in dense.warnings[0]
    assert dense.to_dict()["warnings"] == list(dense.warnings)
    assert _search(engine, "how is espresso coffee brewed", "dense").warnings == ()


def test_a_model_configured_to_cover_chinese_takes_part(tmp_path: Path) -> None:
    with _engine(tmp_path, dense_languages="en,zh") as covered:
        hybrid = _search(covered, "五花肉 小火 慢炖", "hybrid")
        assert all(hit.skipped == {} for hit in hybrid.hits)
        assert any("dense" in hit.scores for hit in hybrid.hits)
