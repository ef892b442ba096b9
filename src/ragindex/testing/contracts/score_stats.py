"""The contract of the score-drift watch's role of the truth store (:class:`~ragindex.store.protocol.ScoreStatsStore`).

A backend's test class lists :class:`ScoreStatsContract` next to
:class:`~ragindex.testing.contracts.truth_store.TruthStoreContract` (same ``store`` fixture), so SQLite,
MySQL/MariaDB and PostgreSQL fill, close, keep and forget windows alike, and batches of concurrent processes add up.
"""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import delete, inspect

from ragindex.sketch import ScoreSketch
from ragindex.store import schema
from ragindex.store.migrations import apply_migrations
from ragindex.store.records import ScoreBatch
from ragindex.store.sql import SqlTruthStore
from ragindex.testing.contracts.truth_store import SecondStore

MODEL = "st:sentence-transformers/all-MiniLM-L6-v2"


def batch(queries: int, top1: float, *, source: str = "dense", fingerprint: str = MODEL) -> ScoreBatch:
    """``queries`` searches whose best score is ``top1`` and whose next nine scores fall from it."""
    first, ten = ScoreSketch(), ScoreSketch()
    for _ in range(queries):
        first.add(top1)
        ten.extend(top1 * (1 - i / 20) for i in range(10))
    return ScoreBatch(source=source, fingerprint=fingerprint, queries=queries, top1=first, top10=ten)


class ScoreStatsContract(SecondStore):
    """Behaviour of the score windows; the subclass provides the ``store`` fixture."""

    def test_batches_fill_a_window_that_closes_and_the_first_closed_is_the_reference(
        self, store: SqlTruthStore
    ) -> None:
        """A window counts batches until ``window_queries``, then closes; the first closed one is the reference."""
        assert store.record_scores([batch(3, 0.6)], window_queries=5, keep_windows=4) == []
        (open_window,) = store.score_windows()
        assert (open_window.window_no, open_window.state, open_window.queries) == (1, "OPEN", 3)
        assert not open_window.is_reference and open_window.closed_at is None

        (closed,) = store.record_scores([batch(4, 0.8)], window_queries=5, keep_windows=4)  # 7 >= 5: one window
        assert (closed.window_no, closed.state, closed.queries, closed.is_reference) == (1, "CLOSED", 7, True)
        assert closed.top1.count == 7 and closed.top10.count == 70
        assert closed.top1.quantile(0.5) == pytest.approx(0.8, rel=0.01)
        assert closed.top1.quantile(0.0) == pytest.approx(0.6, rel=0.01)
        (stored,) = store.score_windows()
        assert stored.state == "CLOSED" and stored.is_reference and stored.closed_at is not None
        assert stored.top1.to_dict() == closed.top1.to_dict()

        assert store.record_scores([batch(1, 0.4)], window_queries=5, keep_windows=4) == []
        after = store.score_windows()
        assert [(w.window_no, w.state, w.queries, w.is_reference) for w in after] == [
            (1, "CLOSED", 7, True),
            (2, "OPEN", 1, False),
        ]
        (second,) = store.record_scores([batch(5, 0.4)], window_queries=5, keep_windows=4)
        assert (second.window_no, second.queries, second.is_reference) == (2, 6, False)

    def test_each_source_and_fingerprint_has_its_own_windows(self, store: SqlTruthStore) -> None:
        """Windows are per (source, fingerprint), also for a fingerprint longer than its column."""
        long_path = "st:/models/" + "very-long-directory-name/" * 30 + "模型"  # over the column's 512 characters
        store.record_scores(
            [
                batch(2, 0.5),
                batch(2, 7.5, source="bm25", fingerprint="qdrant-bm25(k1=1.2)"),
                batch(1, 0.3, fingerprint=long_path),
            ],
            window_queries=2,
            keep_windows=4,
        )
        windows = store.score_windows()
        assert {(w.source, w.fingerprint[:20], w.state) for w in windows} == {
            ("bm25", "qdrant-bm25(k1=1.2)", "CLOSED"),
            ("dense", MODEL[:20], "CLOSED"),
            ("dense", long_path[:20], "OPEN"),
        }
        assert [w.top1.quantile(0.5) for w in store.score_windows(source="bm25")] == [pytest.approx(7.5, rel=0.01)]
        assert len(store.score_windows(source="dense", fingerprint=MODEL)) == 1
        store.record_scores([batch(1, 0.3, fingerprint=long_path)], window_queries=2, keep_windows=4)
        longest = [w for w in store.score_windows(source="dense") if w.fingerprint != MODEL]
        assert [(w.window_no, w.queries) for w in longest] == [(1, 2)]  # the same key, though the column is cut

    def test_the_reference_and_the_last_windows_are_kept(self, store: SqlTruthStore) -> None:
        """Of the closed windows, the reference and the last ``keep_windows`` stay."""
        for n in range(1, 8):
            store.record_scores([batch(2, 0.1 * n)], window_queries=2, keep_windows=3)
        windows = store.score_windows()
        assert [(w.window_no, w.is_reference) for w in windows] == [(1, True), (5, False), (6, False), (7, False)]
        assert windows[0].top1.quantile(0.5) == pytest.approx(0.1, rel=0.01)

    def test_clear_forgets_windows_and_the_next_closed_is_the_reference(self, store: SqlTruthStore) -> None:
        """Clearing (one source, or all) forgets windows; the next closed window is the reference again."""
        store.record_scores(
            [batch(2, 0.5), batch(2, 3.0, source="bm25", fingerprint="b")], window_queries=2, keep_windows=3
        )
        assert store.clear_score_stats(source="dense") == 1
        assert [w.source for w in store.score_windows()] == ["bm25"]
        (again,) = store.record_scores([batch(2, 0.2)], window_queries=2, keep_windows=3)
        assert (again.window_no, again.is_reference) == (1, True)
        assert store.clear_score_stats() == 2
        assert store.score_windows() == []

    def test_batches_of_concurrent_processes_add_up(self, store: SqlTruthStore, second_store: SqlTruthStore) -> None:
        """Two stores (processes) recording at once: every search counted once, windows in order."""
        errors: list[BaseException] = []
        start = threading.Barrier(4)

        def record(target: SqlTruthStore) -> None:
            try:
                start.wait()
                for _ in range(15):
                    target.record_scores([batch(1, 0.5)], window_queries=4, keep_windows=100)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=record, args=(s,)) for s in (store, second_store, store, second_store)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        windows = store.score_windows()
        assert sum(w.queries for w in windows) == 60  # no batch lost or counted twice
        assert [w.window_no for w in windows] == list(range(1, 16))
        assert all(w.queries == 4 and w.state == "CLOSED" for w in windows)
        assert sum(w.top1.count for w in windows) == 60
        assert [w.is_reference for w in windows].count(True) == 1 and windows[0].is_reference

    def test_m012_upgrades_a_store_made_before_it(self, store: SqlTruthStore) -> None:
        """A database migrated up to m011 gets the ``score_stats`` table, once."""
        with store.engine.begin() as conn:
            schema.score_stats.drop(conn)
            conn.execute(delete(schema.schema_migrations).where(schema.schema_migrations.c.name == "m012_score_stats"))
        assert apply_migrations(store.engine) == ["m012_score_stats"]
        with store.engine.connect() as conn:
            assert inspect(conn).has_table("score_stats")
        assert apply_migrations(store.engine) == []
        store.record_scores([batch(1, 0.5)], window_queries=1, keep_windows=1)
        assert len(store.score_windows()) == 1
