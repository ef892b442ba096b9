"""Engine.search(..., rerank=True) on the real engine (SQLite, Qdrant Edge, MiniLM) with a tiny cross-encoder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragindex.cli import commands  # noqa: F401 - registers the commands
from ragindex.cli.app import app
from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import RetrievalConfigurationError, ValidationError
from ragindex.retrieval.rerank import MODEL_SETTING, CrossEncoderReranker
from ragindex.retrieval.search import Retriever, SearchRequest, search_mode
from ragindex.types import SearchResult

pytestmark = pytest.mark.integration

DOCS = {
    "glaciers.txt": "Glaciers carve U-shaped valleys as the ice grinds the bedrock beneath it.",
    "rivers.txt": "Rivers cut narrow V-shaped valleys and carry sediment to the sea.",
    "espresso.txt": "Espresso is brewed by forcing hot water through finely ground coffee at nine bars.",
    "tides.txt": "Ocean tides are caused mainly by the gravitational pull of the Moon.",
    "volcano.txt": "A volcano is an opening in the crust where molten rock and gases escape.",
    "cirque.txt": "A cirque is a bowl carved by a glacier at the head of a mountain valley.",
}
QUERY = "how do glaciers shape a valley"


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, tiny_cross_encoder: Path) -> Iterator[Engine]:
    root = tmp_path_factory.mktemp("rerank-engine")
    settings = Settings(_env_file=None, data_dir=root / "data", rerank_model=str(tiny_cross_encoder))
    with Engine(settings) as eng:
        eng.ingest([write_corpus(root / "corpus")])
        yield eng


def expected_ranking(engine: Engine, tiny_cross_encoder: Path) -> list[tuple[str, float]]:
    """Every chunk of the set scored directly by the reranker, best first (the set is far below 50 chunks)."""
    hits = engine.search(QUERY, user_id=1, set_id=1, mode="dense", top_k=100, rerank=False).hits
    assert len(hits) == len(DOCS)
    scores = CrossEncoderReranker(str(tiny_cross_encoder)).rerank(QUERY, [h.text for h in hits])
    return sorted(zip([h.chunk_id for h in hits], scores, strict=True), key=lambda item: -item[1])


def retriever(engine: Engine, reranker: CrossEncoderReranker, *, rerank_candidates: int = 50) -> Retriever:
    return Retriever(
        engine.store,
        lambda: engine.index,
        engine.read_collection,
        lambda: engine.dense,
        engine.sparse,
        bucket_count=engine.settings.bucket_count,
        reranker=lambda: reranker,
        rerank_candidates=rerank_candidates,
    )


def request(
    mode: str = "hybrid", top_k: int = 10, threshold: float | None = None, *, query: str = QUERY, rerank: bool = True
) -> SearchRequest:
    return SearchRequest(
        query=query,
        user_id=1,
        set_id=1,
        doc_ids=None,
        mode=search_mode(mode),
        top_k=top_k,
        score_threshold=threshold,
        fusion="rrf",
        candidates=50,
        rerank=rerank,
    )


def assert_reranked(result: SearchResult) -> None:
    assert result.hits
    assert "rerank" in result.latency_ms
    scores = [h.score for h in result.hits]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    for position, hit in enumerate(result.hits, 1):
        assert hit.rank == position
        assert hit.scores["rerank"].score == hit.score
        assert hit.scores["rerank"].rank == position
        assert set(hit.scores) - {"rerank"}, "the per-source entries are kept"


def test_hybrid_search_reranks_every_candidate_by_the_cross_encoder(engine: Engine, tiny_cross_encoder: Path) -> None:
    result = engine.search(QUERY, user_id=1, set_id=1, rerank=True)
    assert_reranked(result)
    expected = expected_ranking(engine, tiny_cross_encoder)
    assert [h.chunk_id for h in result.hits] == [cid for cid, _ in expected]
    assert [h.score for h in result.hits] == pytest.approx([s for _, s in expected], abs=1e-5)
    assert any({"dense", "bm25"} <= set(h.scores) for h in result.hits)
    plain = engine.search(QUERY, user_id=1, set_id=1)  # rerank_enabled defaults to False
    assert "rerank" not in plain.latency_ms
    assert all("rerank" not in h.scores for h in plain.hits)


def test_single_source_modes_rerank_too_and_top_k_is_respected(engine: Engine) -> None:
    for mode in ("dense", "bm25"):
        result = engine.search(QUERY, user_id=1, set_id=1, mode=mode, top_k=2, rerank=True)
        assert len(result.hits) == 2
        assert_reranked(result)
        assert all(mode in h.scores for h in result.hits)


def test_threshold_applies_to_the_rerank_score_and_must_be_in_0_1(engine: Engine, tiny_cross_encoder: Path) -> None:
    expected = expected_ranking(engine, tiny_cross_encoder)
    cut = (expected[1][1] + expected[2][1]) / 2  # between the 2nd and the 3rd rerank score
    for mode in ("hybrid", "dense"):
        result = engine.search(QUERY, user_id=1, set_id=1, mode=mode, score_threshold=cut, rerank=True)
        assert [h.chunk_id for h in result.hits] == [cid for cid, _ in expected[:2]]
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValidationError, match="score_threshold"):
            engine.search(QUERY, user_id=1, set_id=1, mode="bm25", score_threshold=bad, rerank=True)
    assert engine.search(QUERY, user_id=1, set_id=1, mode="bm25", score_threshold=1000.0).hits == ()  # no rerank


def test_only_rerank_candidates_are_scored(engine: Engine, tiny_cross_encoder: Path) -> None:
    reranker = CrossEncoderReranker(str(tiny_cross_encoder))
    fused = retriever(engine, reranker, rerank_candidates=1000).search(request())
    top3 = retriever(engine, reranker, rerank_candidates=3).search(request())
    assert len(top3.hits) == 3
    assert {h.scores["rerank"].rank for h in top3.hits} == {1, 2, 3}
    unreranked = engine.search(QUERY, user_id=1, set_id=1, rerank=False).hits[:3]
    assert {h.chunk_id for h in top3.hits} == {h.chunk_id for h in unreranked}
    assert len(fused.hits) == len(DOCS)


def test_empty_query_and_unloadable_model(engine: Engine, tmp_path: Path) -> None:
    missing = CrossEncoderReranker(str(tmp_path / "no-such-model"))
    broken = retriever(engine, missing)
    assert broken.search(request(query="  ")).hits == ()
    assert broken.search(request(rerank=False)).hits  # the reranker is never touched without rerank
    assert missing._model is None
    with pytest.raises(RetrievalConfigurationError, match=MODEL_SETTING):
        broken.search(request())


def test_cli_search_rerank_json(tmp_path: Path, tiny_cross_encoder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGINDEX_RERANK_MODEL", str(tiny_cross_encoder))
    data_dir = str(tmp_path / "cli-data")
    runner = CliRunner()
    ingested = runner.invoke(app, ["--data-dir", data_dir, "ingest", str(write_corpus(tmp_path / "corpus"))])
    assert ingested.exit_code == 0, ingested.output
    result = runner.invoke(app, ["--data-dir", data_dir, "search", QUERY, "--rerank", "--top-k", "3", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    hits = payload["hits"]
    assert len(hits) == 3
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert all(0.0 <= h["score"] <= 1.0 and h["scores"]["rerank"]["score"] == h["score"] for h in hits)
    assert "rerank" in payload["latency_ms"]
    plain = runner.invoke(app, ["--data-dir", data_dir, "search", QUERY, "--json"])
    assert all("rerank" not in h["scores"] for h in json.loads(plain.stdout)["hits"])
    monkeypatch.setenv("RAGINDEX_RERANK_MODEL", str(tmp_path / "missing-model"))
    monkeypatch.setenv("RAGINDEX_RERANK_ENABLED", "true")
    failed = runner.invoke(app, ["--data-dir", data_dir, "search", QUERY, "--json"])
    assert failed.exit_code == 3
    assert MODEL_SETTING in failed.output
