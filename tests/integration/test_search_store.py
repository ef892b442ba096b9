"""The search store of a one-shot search (SQLite through the standard library) against the full SQL store.

Real engines (SQLite, Qdrant Edge, the shipped model): every search answers the same through either store, the
search path never opens the full store, the score windows written by either are the same windows, and every other
truth-store call is answered by the full store, opened on first use.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import StoreError
from ragindex.sketch import ScoreSketch
from ragindex.store import schema
from ragindex.store.migrations import MIGRATIONS
from ragindex.store.protocol import TruthStore
from ragindex.store.records import NewOwner, ScoreBatch, ScoreWindow
from ragindex.store.search_reads import CHUNKS, DOCUMENTS, INDEX_META
from ragindex.store.sql import SqlTruthStore
from ragindex.store.sql.core import SQLITE_BUSY_S
from ragindex.store.sqlite_search import BUSY_TIMEOUT_S, HEAD_MIGRATIONS, SqliteSearchStore

pytestmark = pytest.mark.integration

GUIDE = """# Beekeeping guide

## The colony

A honeybee colony has one queen, thousands of female workers and a few hundred drones in summer.
The queen lays up to two thousand eggs a day during the spring build-up, and the workers feed the larvae.

## Harvest

Honey is harvested in late summer, once the frames are capped with wax by the workers.
The frames are uncapped with a hot knife, spun in an extractor and the honey is strained into buckets.

## Winter

In winter the bees form a cluster around the queen and shiver their flight muscles to keep it warm.
"""

RECORDS = [
    {"key": "mead", "text": "Mead is made by fermenting honey with water.", "metadata": {"lang": "en", "year": 2021}},
    {"key": "wax", "text": "Beeswax is secreted by young worker bees.", "metadata": {"lang": "en", "year": 2019}},
    {
        "key": "miel",
        "text": "Le miel est récolté en fin d'été par l'apiculteur.",
        "metadata": {"lang": "fr", "year": 2023},
    },
]

SEARCHES: list[tuple[str, dict[str, Any]]] = [
    ("how does the queen keep warm in winter", {}),
    ("honey extractor frames", {"mode": "bm25"}),
    ("honey extractor frames", {"mode": "dense"}),
    ("honey", {"expand": "none", "group_by": "none", "top_k": 20}),
    ("honey", {"group_by": "document"}),
    ("bees", {"filter": '{"lang": "en", "year": {"$gte": 2020}}'}),
    ("bees", {"doc_ids": [1], "score_threshold": 0.0}),
    ("   ", {}),
]


@pytest.fixture
def engine_settings() -> dict[str, Any]:
    # several chunks a section; the scores are saved by close (the background writer would wait an hour)
    return {"chunk_size": 200, "chunk_overlap": 40, "drift_flush_seconds": 3600}


@pytest.fixture
def corpus_files() -> dict[str, str]:
    return {"guide.md": GUIDE}


@pytest.fixture
def indexed(tmp_path: Path, engine_settings: dict[str, Any], corpus: Path) -> Callable[..., Engine]:
    """The guide and the records ingested; returns what opens an Engine on them (``search_only`` or not)."""

    def open_engine(*, search_only: bool = False, **settings: Any) -> Engine:
        return Engine(Settings(data_dir=tmp_path / "d", **engine_settings, **settings), search_only=search_only)

    with open_engine() as engine:
        engine.ingest([corpus])
        engine.upsert(RECORDS)
    return open_engine


def answers(engine: Engine) -> list[Any]:
    out = []
    for query, options in SEARCHES:
        result = engine.search(query, user_id=1, set_id=1, **options).to_dict()
        result.pop("latency_ms")
        out.append(result)
    return out


def test_a_search_only_engine_answers_as_the_full_store_does_without_opening_it(
    indexed: Callable[..., Engine],
) -> None:
    with indexed() as engine:
        expected = answers(engine)
    assert any(a["hits"] for a in expected) and any(h.get("context") for a in expected for h in a["hits"])
    with indexed(search_only=True) as engine:
        store = engine.store
        assert isinstance(store, SqliteSearchStore)
        assert answers(engine) == expected
        assert not store.full_store_open  # every call the search path made was the search store's own
        # neighbours' context reads a document's chunks: a call of the full store, opened for it
        options: dict[str, Any] = {"user_id": 1, "set_id": 1, "expand": "neighbours", "group_by": "none"}
        neighbours = engine.search("honey extractor frames", **options).to_dict()
        assert store.full_store_open
    with indexed() as engine:
        assert engine.search("honey extractor frames", **options).to_dict()["hits"] == neighbours["hits"]


def test_the_scores_of_one_shot_searches_land_in_the_same_windows(indexed: Callable[..., Engine]) -> None:
    """A search-only engine's scores merge into the windows the full store keeps (two searches close a window)."""
    with indexed(search_only=True, drift_window_queries=2) as engine:
        engine.search("honey", user_id=1, set_id=1, mode="dense")
    with indexed(drift_window_queries=2) as engine:
        engine.search("wax", user_id=1, set_id=1, mode="dense")
    with indexed(search_only=True, drift_window_queries=2) as engine:
        engine.search("queen", user_id=1, set_id=1, mode="dense")
    with indexed(drift_window_queries=2) as engine:
        windows = engine.store.score_windows(source="dense")
    assert [(w.window_no, w.state, w.is_reference, w.queries) for w in windows] == [
        (1, "CLOSED", True, 2),
        (2, "OPEN", False, 1),
    ]
    assert windows[0].top1.count == 2 and windows[1].top1.count == 1


def batch(source: str, scores: list[float], queries: int = 1) -> ScoreBatch:
    top1, top10 = ScoreSketch(), ScoreSketch()
    top1.extend(scores[:queries])
    top10.extend(scores)
    return ScoreBatch(source=source, fingerprint="model-x" * 100, queries=queries, top1=top1, top10=top10)


def comparable(windows: list[ScoreWindow]) -> list[tuple[Any, ...]]:
    return [
        (w.source, w.fingerprint, w.window_no, w.state, w.is_reference, w.queries, w.top1.to_dict(), w.top10.to_dict())
        for w in windows
    ]


def test_record_scores_keeps_the_windows_the_sql_store_keeps(tmp_path: Path) -> None:
    """The same batches through the SQL store alone, and alternating with the search store: the same windows."""
    batches = [batch("dense", [0.9, 0.5, 0.4]), batch("bm25", [7.0, 3.0]), batch("dense", [0.7, 0.6], 2)]
    batches += [batch("dense", [0.2 + i / 20]) for i in range(10)]
    results: dict[str, list[tuple[Any, ...]]] = {}
    for name, alternate in (("sql", False), ("mixed", True)):
        url = f"sqlite:///{tmp_path / name}.db"
        full = SqlTruthStore(url)
        lite = SqliteSearchStore.open(url, lambda: SqlTruthStore(f"sqlite:///{tmp_path / 'unused.db'}"))
        assert lite is not None
        closed = []
        for i, each in enumerate(batches):
            store = lite if alternate and i % 2 else full
            closed += store.record_scores([each], window_queries=3, keep_windows=2)
        results[name] = comparable(full.score_windows())
        results[name + " closed"] = comparable(closed)
        lite.close()
        full.close()
    assert results["mixed"] == results["sql"]
    assert results["mixed closed"] == results["sql closed"]
    # dense: the reference (1), windows 2-4 closed (3 searches each) of which the last two are kept, then the open one
    dense = [(n, state, ref) for source, _, n, state, ref, *_ in results["sql"] if source == "dense"]
    assert dense == [(1, "CLOSED", True), (3, "CLOSED", False), (4, "CLOSED", False), (5, "OPEN", False)]


def test_every_other_call_is_the_full_stores(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'truth.db'}"
    full = SqlTruthStore(url)
    lite = SqliteSearchStore.open(url, lambda: SqlTruthStore(url))
    assert lite is not None
    as_store: TruthStore = lite  # its __getattr__ answers the rest
    assert not lite.full_store_open
    assert as_store.status_counts() == full.status_counts()
    assert lite.full_store_open
    members = [name for name in dir(TruthStore) if not name.startswith("_")]
    assert all(callable(getattr(as_store, name)) for name in members if name not in ("owner_id", "dialect", "name"))
    # a claim owner registered through it is the full store's, and is dropped through it
    me = as_store.register_owner(NewOwner(host="h", host_key="k", pid=1, process_started=1.0, command="t"), 60.0)
    assert lite.owner_id == me and [o.owner_id for o in full.list_owners()] == [me]
    assert lite.drop_owner() == {"dense": [], "bm25": [], "sparse": []}
    assert lite.owner_id is None and full.list_owners() == []
    lite.close()
    full.close()


def test_it_opens_only_an_up_to_date_store(tmp_path: Path) -> None:
    def never() -> TruthStore:
        raise AssertionError("not built")

    assert SqliteSearchStore.open(f"sqlite:///{tmp_path / 'missing.db'}", never) is None
    assert SqliteSearchStore.open("sqlite:///:memory:", never) is None
    assert SqliteSearchStore.open("postgresql://localhost/test", never) is None
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database" * 100)
    assert SqliteSearchStore.open(f"sqlite:///{garbage}", never) is None
    url = f"sqlite:///{tmp_path / 'old.db'}"
    SqlTruthStore(url).close()
    with sqlite3.connect(tmp_path / "old.db") as conn:
        conn.execute("DELETE FROM schema_migrations WHERE name = ?", (HEAD_MIGRATIONS[-1],))
    assert SqliteSearchStore.open(url, never) is None  # the full store migrates it first
    SqlTruthStore(url).close()
    store = SqliteSearchStore.open(url, never)
    assert store is not None
    with sqlite3.connect(tmp_path / "old.db") as conn:
        conn.execute("DROP TABLE fusion_calibrations")
    with pytest.raises(StoreError, match="no such table: fusion_calibrations"):
        store.fusion_calibration(1, 1)
    store.close()


def test_what_it_repeats_of_the_sql_store_is_the_same() -> None:
    assert tuple(name for name, _ in MIGRATIONS) == HEAD_MIGRATIONS
    assert BUSY_TIMEOUT_S == SQLITE_BUSY_S
    assert (schema.chunks.name, schema.documents.name, schema.index_meta.name) == (CHUNKS, DOCUMENTS, INDEX_META)
