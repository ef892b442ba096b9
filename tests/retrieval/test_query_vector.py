"""Search by a caller's query vector (``Engine.search(vector=...)``) with the real shipped model and Qdrant Edge.

The dense source searches with the given vector instead of encoding the text; the text, when given, feeds the
lexical sources. A vector the engine would compute itself gives the engine's own answer; another query's vector
gives that query's dense answer; anything the dense index cannot use is refused naming the field.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ragindex import Engine
from ragindex.config import Settings
from ragindex.errors import ValidationError
from ragindex.types import SearchResult

DOCS = {
    "glaciers.txt": "Glaciers carve U-shaped valleys as the ice grinds the bedrock beneath it.",
    "espresso.txt": "Espresso is brewed by forcing hot water through finely ground coffee; a shot uses 18 grams.",
    "tides.txt": "Ocean tides are caused mainly by the gravity of the Moon, and spring tides occur at full moon.",
    "volcano.txt": "A volcano is an opening in the crust where molten rock, ash and gases escape.",
    "bread.txt": "Sourdough bread rises slowly because wild yeast and lactic bacteria ferment the dough.",
    "bees.txt": "Honey bees communicate the direction of flowers to the hive with a waggle dance.",
    "changcheng.txt": "长城是中国古代的军事防御工程，东起山海关，西至嘉峪关，全长两万多公里。",
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    root = tmp_path_factory.mktemp("vector")
    corpus = root / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    with Engine(Settings(_env_file=None, data_dir=root / "data")) as eng:  # type: ignore[call-arg]
        eng.ingest([corpus])
        yield eng


def _ranked(result: SearchResult) -> list[tuple[str, float]]:
    return [(hit.chunk_id, round(hit.score, 4)) for hit in result.hits]


def _vector(engine: Engine, text: str) -> np.ndarray:
    return np.asarray(engine.dense.encode_queries([text])[0], dtype=np.float32)


@pytest.mark.parametrize("query", ["why does bread rise", "what moves the sea twice a day", "hot coffee"])
def test_the_engines_own_vector_gives_the_engines_own_answer(engine: Engine, query: str) -> None:
    vector = _vector(engine, query)
    for mode in ("dense", "hybrid"):
        by_text = engine.search(query, user_id=1, set_id=1, mode=mode, top_k=5)
        # a list or an array, at any length: the vector is scaled to unit length as the encoder's are
        for given in (
            vector.tolist(),
            vector * 3.5,
            vector.astype(np.float64) * 1e300,
            vector.astype(np.float64) * 1e-300,
        ):
            by_vector = engine.search(query, user_id=1, set_id=1, mode=mode, top_k=5, vector=given)
            assert _ranked(by_vector) == _ranked(by_text)
            assert by_vector.hits[0].scores.keys() == by_text.hits[0].scores.keys()


def test_the_vector_decides_the_dense_ranking_and_the_text_the_lexical_one(engine: Engine) -> None:
    bees = _vector(engine, "insects that dance to tell where food is")
    dense = engine.search("", user_id=1, set_id=1, mode="dense", top_k=3, vector=bees)
    assert dense.hits[0].filename == "bees.txt"
    assert _ranked(dense) == _ranked(
        engine.search("insects that dance to tell where food is", user_id=1, set_id=1, mode="dense", top_k=3)
    )
    # hybrid: the dense list follows the vector (bees), BM25 follows the text (volcano): both documents come first
    hybrid = engine.search("volcano molten rock", user_id=1, set_id=1, mode="hybrid", top_k=2, vector=bees)
    assert {hit.filename for hit in hybrid.hits} == {"bees.txt", "volcano.txt"}
    by_name = {hit.filename: hit for hit in hybrid.hits}
    assert by_name["bees.txt"].scores["dense"].rank == 1
    assert by_name["volcano.txt"].scores["bm25"].rank == 1


def test_a_vector_is_not_dropped_by_the_language_guard(engine: Engine) -> None:
    """The guard drops dense for a query text the model cannot read; a given vector is no such text."""
    glaciers = _vector(engine, "ice carving valleys")
    by_text = engine.search("长城 山海关", user_id=1, set_id=1, mode="hybrid", top_k=3)
    assert by_text.hits[0].skipped == {"dense": "model does not cover han script"}
    hybrid = engine.search("长城 山海关", user_id=1, set_id=1, mode="hybrid", top_k=3, vector=glaciers)
    assert {hit.filename for hit in hybrid.hits[:2]} == {"changcheng.txt", "glaciers.txt"}
    assert all(not hit.skipped for hit in hybrid.hits)


@pytest.mark.parametrize(
    ("options", "field", "words"),
    [
        ({"vector": [0.1] * 383, "mode": "dense"}, "vector", "383 dimensions"),
        ({"vector": [0.1] * 384 + [0.2], "mode": "dense"}, "vector", "gives 384"),
        ({"vector": [0.0] * 384, "mode": "dense"}, "vector", "all zeros"),
        ({"vector": [float("nan")] + [0.1] * 383, "mode": "dense"}, "vector", "finite"),
        ({"vector": [10**400] + [1] * 383, "mode": "dense"}, "vector", "finite"),
        ({"vector": np.ones((2, 192)), "mode": "dense"}, "vector", "1-D array"),
        ({"vector": [True] * 384, "mode": "dense"}, "vector", "flat list"),
        ({"vector": [[0.1] * 384], "mode": "dense"}, "vector", "flat list"),
        ({"vector": ["0.1"] * 384, "mode": "dense"}, "vector", "flat list"),
        ({"vector": "0.1 0.2", "mode": "dense"}, "vector", "list of numbers"),
        ({"vector": [], "mode": "dense"}, "vector", "empty"),
        ({"vector": [0.1] * 384, "mode": "bm25"}, "vector", "mode bm25"),
        ({"vector": [0.1] * 384, "mode": "hybrid", "sources": ["bm25"]}, "vector", "leave out dense"),
        ({"vector": [0.1] * 384, "mode": "hybrid"}, "query", "give query with the vector"),
        ({"vector": [0.1] * 384, "mode": "dense", "rerank": True}, "rerank", "query text"),
    ],
)
def test_a_vector_the_dense_index_cannot_use_is_refused_naming_the_field(
    engine: Engine, options: dict[str, object], field: str, words: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        engine.search("", user_id=1, set_id=1, **options)  # type: ignore[arg-type]
    assert caught.value.context["field"] == field
    assert words in caught.value.message


def test_a_vector_search_leaves_the_score_watch_alone(tmp_path: Path) -> None:
    """The score-drift watch samples the engine's own encodes: a caller's vector may come from anywhere."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    seen: list[str] = []
    with Engine(Settings(_env_file=None, data_dir=tmp_path / "data")) as engine:  # type: ignore[call-arg]
        engine.ingest([corpus])
        assert engine.score_watch is not None
        observe = engine.score_watch.observe
        engine.score_watch.observe = lambda source, *rest: (seen.append(source), observe(source, *rest))[1]  # type: ignore[method-assign]
        engine.search("bees", user_id=1, set_id=1, mode="hybrid", vector=_vector(engine, "bees"))
        assert seen == []
        engine.search("bees", user_id=1, set_id=1, mode="hybrid")
        assert "dense" in seen
