"""Fusion calibration: pseudo-queries from the set itself, weights recorded, applied, and checked against qrels.

A small real corpus, 60 answers of the Python FAQ with 40 of their questions (``tests/fixtures/pyfaq``): with the
shipped model dense is good at it and equal weights stay; with a tiny random model as the dense encoder dense is
weak, the calibration weighs it down, a hybrid search shows the weights in its scores, and the FAQ's real questions
rank better than with equal weights. Twenty Chinese paragraphs check the ingest's own calibration and its refresh.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragindex import Engine
from ragindex.config import Settings
from ragindex.retrieval import calibration as cal
from ragindex.retrieval.fusion import dbsf
from ragindex.store.records import FusionCalibration

PYFAQ = Path(__file__).resolve().parents[1] / "fixtures" / "pyfaq"

CHINESE = [
    "红烧肉是一道经典的家常菜，五花肉切块后先焯水，再加冰糖炒出糖色，用小火慢炖一个小时。",
    "长城是中国古代的军事防御工程，东起山海关，西至嘉峪关，明朝对长城进行了大规模的修缮。",
    "大熊猫主要生活在四川和陕西的山区竹林中，以竹子为主要食物，每天要花十几个小时进食。",
    "京沪高速铁路连接北京和上海，最高运营时速三百五十公里，乘客四个多小时即可到达。",
    "龙井茶产于杭州西湖一带，属于绿茶，春季采摘的嫩芽经过杀青和炒制，茶汤清澈香气持久。",
    "数据治理流程包括数据标准、数据质量和元数据管理，企业需要明确数据的责任人和使用规范。",
    "黄河发源于青藏高原，流经九个省区，最后注入渤海，是中华文明最主要的发源地之一。",
    "故宫位于北京中轴线的中心，是明清两代的皇家宫殿，现在作为博物院向公众开放。",
    "饺子是北方春节的传统食物，面皮包上猪肉白菜馅，煮熟后蘸醋和蒜泥一起吃。",
    "太极拳是一种传统武术，动作缓慢柔和，讲究以静制动，许多老人每天早晨在公园练习。",
    "端午节有赛龙舟和吃粽子的习俗，用来纪念战国时期的诗人屈原。",
    "西湖位于杭州市区西部，苏堤和白堤把湖面分成几个部分，断桥残雪是著名的景点。",
    "普洱茶产于云南，经过发酵后可以长期存放，存放时间越久味道越醇厚。",
    "敦煌莫高窟开凿在鸣沙山东麓的断崖上，保存了从十六国到元代的大量壁画和彩塑。",
    "中医认为人参可以大补元气，但体质燥热的人不宜长期大量服用。",
    "围棋起源于中国，棋盘有十九条横线和十九条竖线，双方轮流落子争夺地盘。",
    "景德镇以瓷器闻名，青花瓷用钴料在白色瓷胎上绘画，再施透明釉高温烧成。",
    "桂林山水甲天下，漓江两岸的喀斯特峰林倒映在清澈的江水中。",
    "活字印刷术由北宋的毕昇发明，他用胶泥刻字，烧硬后排版印刷，可以反复使用。",
    "冬至这天北半球白昼最短，南方人吃汤圆，北方人吃饺子。",
]


def _records(path: Path, texts: list[str]) -> Path:
    import json

    path.write_text(
        "".join(json.dumps({"_id": f"zh{i}", "text": t}, ensure_ascii=False) + "\n" for i, t in enumerate(texts)),
        encoding="utf-8",
    )
    return path


@pytest.fixture(scope="module")
def english(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    root = tmp_path_factory.mktemp("cal-en")
    settings = Settings(_env_file=None, data_dir=root / "data", json_text_fields=["title", "text"])
    with Engine(settings) as engine:
        engine.ingest([PYFAQ / "corpus.jsonl"])
        yield engine


@pytest.fixture(scope="module")
def random_dense(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    from ragindex.testing.tiny_models import build_tiny_sentence_transformer

    root = tmp_path_factory.mktemp("cal-random")
    model = build_tiny_sentence_transformer(root / "tiny-random", seed=5)
    settings = Settings(
        _env_file=None, data_dir=root / "data", json_text_fields=["title", "text"], dense_model=str(model)
    )
    with Engine(settings) as engine:
        engine.ingest([PYFAQ / "corpus.jsonl"])
        yield engine


def test_pseudo_queries_are_unique_titles_or_short_spans() -> None:
    assert cal.query_of("Why are Python strings immutable", "x") == "Why are Python strings immutable"
    assert cal.query_of("FAQ", "") is None
    text = "Short one. The pdb module is a simple but adequate console-mode debugger for Python. Another."
    assert cal.query_of(None, text) == "is a simple but adequate console-mode"  # the longest's middle
    assert cal.query_of(None, CHINESE[0]) == "块后先焯水，再加"
    assert cal.query_of(None, "ok") is None


def test_choice_keeps_equal_weights_unless_a_source_is_weak_and_weighing_it_down_clearly_helps() -> None:
    equal, down = cal.CANDIDATES[0], (0.25, 1.0)
    scores = dict.fromkeys(cal.CANDIDATES, 0.5) | {down: 0.8}
    assert cal.choose(scores, {"dense": 0.2, "bm25": 0.9}) == down
    assert cal.choose(scores, {"dense": 0.6, "bm25": 0.9}) == equal  # trails, but not by half: not weak
    assert cal.choose(dict.fromkeys(cal.CANDIDATES, 0.5) | {down: 0.52}, {"dense": 0.2, "bm25": 0.9}) == equal
    assert cal.choose(scores, {"dense": 0.9, "bm25": 0.2}) == equal  # bm25 weak, but no bm25-down weighting helps
    assert cal.weak_sources({"dense": 0.2, "bm25": 0.9}) == ["dense"]


def test_refresh_when_missing_for_another_fusion_or_after_the_set_changed_by_half() -> None:
    def calibration(documents: int, fusion: str = "dbsf") -> FusionCalibration:
        return FusionCalibration(1, 1, fusion, {"dense": 1.0, "bm25": 1.0}, documents, {}, None)  # type: ignore[arg-type]

    big = cal.MIN_DOCUMENTS
    assert not cal.needs_refresh(None, big - 1, "dbsf")
    assert cal.needs_refresh(None, big, "dbsf")
    assert cal.needs_refresh(calibration(big, "rrf"), big, "dbsf")
    assert not cal.needs_refresh(calibration(big), int(big * 1.4), "dbsf")
    assert cal.needs_refresh(calibration(big), int(big * 1.6), "dbsf")
    assert cal.needs_refresh(calibration(4 * big), int(big * 1.9), "dbsf")  # shrank by more than half


def test_dbsf_weights_scale_each_source() -> None:
    lists = {"dense": [("a", 0.9), ("b", 0.5), ("c", 0.1)], "bm25": [("c", 9.0), ("b", 5.0), ("a", 1.0)]}
    assert [(f.id, f.score) for f in dbsf(lists)] == [("a", 1.0), ("b", 1.0), ("c", 1.0)]  # mirrored lists: ties
    assert [f.id for f in dbsf(lists, weights={"dense": 0.25})][0] == "c"
    assert [f.id for f in dbsf(lists, weights={"bm25": 0.0})][0] == "a"
    assert dbsf(lists, weights={"dense": 1.0, "bm25": 1.0}) == dbsf(lists)


def test_english_faq_keeps_equal_weights_and_records_what_was_measured(english: Engine) -> None:
    calibration = english.calibrate_fusion(user_id=1, set_id=1)
    assert calibration is not None
    assert calibration.weights == {"dense": 1.0, "bm25": 1.0}
    assert calibration.documents == 60 and calibration.report["queries"] > 40
    assert set(calibration.report["mrr@10"]) == {"dense", "bm25"}
    assert len(calibration.report["candidates"]) == len(cal.CANDIDATES)
    assert english.store.fusion_calibration(1, 1) == calibration
    hit = english.search("Why are Python strings immutable?", user_id=1, set_id=1).hits[0]
    assert all("weight" not in score for score in hit.to_dict()["scores"].values())  # equal weights: as before


def test_the_calibration_s_pseudo_queries_are_not_counted_by_the_score_drift_watch(english: Engine) -> None:
    watch = english.score_watch
    assert watch is not None  # the drift watch is on by default
    watch.flush()
    assert english.calibrate_fusion(user_id=1, set_id=1) is not None  # ~100 searches per source
    assert watch.held_queries() == {}
    english.search("Why are Python strings immutable?", user_id=1, set_id=1)
    held = watch.held_queries()
    assert held and set(held.values()) == {1}  # a user's search is still counted, once per source


def test_a_weak_dense_source_is_weighed_down_shows_its_weight_and_ranks_the_real_questions_better(
    random_dense: Engine,
) -> None:
    from ragindex.eval.runner import run_eval

    query = "Why are Python strings immutable?"
    before = random_dense.search(query, user_id=1, set_id=1, top_k=5)
    assert all("weight" not in s for s in before.hits[0].to_dict()["scores"].values())
    (equal,) = run_eval(random_dense, PYFAQ, "hybrid", top_k=10, set_id=1)

    calibration = random_dense.calibrate_fusion(user_id=1, set_id=1)
    assert calibration is not None
    mrr = calibration.report["mrr@10"]
    assert mrr["dense"] < cal.WEAK_RATIO * mrr["bm25"]  # a random model finds little
    assert calibration.weights["dense"] < calibration.weights["bm25"] == 1.0

    after = random_dense.search(query, user_id=1, set_id=1, top_k=5)
    scores = after.hits[0].to_dict()["scores"]
    assert scores["bm25"]["weight"] == 1.0
    assert all(s["weight"] == calibration.weights[name] for name, s in scores.items())
    (weighed,) = run_eval(random_dense, PYFAQ, "hybrid", top_k=10, set_id=1)  # the real qrels agree
    assert weighed.metrics["ndcg@10"] > equal.metrics["ndcg@10"]
    assert weighed.metrics["mrr@10"] > equal.metrics["mrr@10"]
    rrf = random_dense.search(query, user_id=1, set_id=1, top_k=5, fusion="rrf")  # calibrated for dbsf only
    assert all("weight" not in s for s in rrf.hits[0].to_dict()["scores"].values())


def test_an_ingest_calibrates_a_large_enough_set_and_again_when_it_changed_by_half(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cal, "MIN_DOCUMENTS", 8)
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    settings = Settings(_env_file=None, data_dir=tmp_path / "data", dense_languages="all")
    with Engine(settings) as engine:
        engine.ingest([_records(tmp_path / "few.jsonl", CHINESE[:5])])
        assert engine.store.fusion_calibration(1, 1) is None  # below the minimum
        report = engine.ingest([_records(first, CHINESE[:10])])
        made = engine.store.fusion_calibration(1, 1)
        assert made is not None and made.documents == 15  # few.jsonl's 5 and a.jsonl's 10
        calibrating = report.stage_ms["calibration"]  # the pseudo-query searches count in the ingest's time
        assert calibrating > 0 and report.duration_ms >= sum(report.stage_ms.values())
        engine.ingest([first])  # unchanged: no new calibration
        assert engine.store.fusion_calibration(1, 1) == made
        engine.ingest([_records(second, CHINESE[10:])])  # 15 -> 25 documents
        again = engine.store.fusion_calibration(1, 1)
        assert again is not None and again.documents == 25 and again.created_at >= made.created_at
    off = Settings(_env_file=None, data_dir=tmp_path / "off", fusion_calibration=False)
    with Engine(off) as engine:
        report = engine.ingest([first, second])
        assert engine.store.fusion_calibration(1, 1) is None and "calibration" not in report.stage_ms
