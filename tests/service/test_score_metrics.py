"""``/metrics``' search score gauges, read from a real truth store (SQLite) at scrape time."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ragindex.service.metrics import Metrics
from ragindex.store.sql import SqlTruthStore
from ragindex.testing.contracts.score_stats import MODEL, batch

Key = tuple[str, tuple[tuple[str, str], ...]]


def key(name: str, **labels: str) -> Key:
    return name, tuple(sorted({"source": "dense", "fingerprint": MODEL, **labels}.items()))


def scrape(metrics: Metrics) -> dict[Key, float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(metrics.render().decode())
        for sample in family.samples
        if sample.name.startswith("ragindex_search_score")
    }


def test_metrics_show_the_last_closed_window_and_its_shift(tmp_path: Path) -> None:
    store = SqlTruthStore(f"sqlite:///{tmp_path / 'truth.db'}")
    try:
        metrics = Metrics(store, ("dense",), lambda: (0, False), scores=store, max_shift=0.2)
        assert scrape(metrics) == {}  # no search yet: no series

        store.record_scores([batch(2, 0.6)], window_queries=2, keep_windows=5)  # the reference
        first = scrape(metrics)
        assert first[key("ragindex_search_score", metric="top1", quantile="0.5")] == pytest.approx(0.6, rel=0.01)
        assert key("ragindex_search_score_shift") not in first  # nothing to compare with yet

        store.record_scores([batch(2, 0.3)], window_queries=2, keep_windows=5)  # the median halves
        second = scrape(metrics)
        assert second[key("ragindex_search_score_shift")] == pytest.approx(-0.5, abs=0.02)
        assert second[key("ragindex_search_score_drift")] == 1.0
        assert 0.25 < second[key("ragindex_search_score", metric="top10", quantile="0.9")] < 0.31

        store.record_scores([batch(2, 0.55)], window_queries=2, keep_windows=5)  # back near the reference
        assert scrape(metrics)[key("ragindex_search_score_drift")] == 0.0
    finally:
        store.close()
