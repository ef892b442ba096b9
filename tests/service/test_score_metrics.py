"""``/metrics``' search score gauges, read from a real truth store (SQLite) at scrape time."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.service.app import create_app
from ragindex.service.keys import create_key
from ragindex.service.metrics import Metrics
from ragindex.service.settings import ServiceSettings
from ragindex.store.sql import SqlTruthStore
from ragindex.testing.contracts.score_stats import MODEL, batch
from service.conftest import ServerThread

Key = tuple[str, tuple[tuple[str, str], ...]]


def key(name: str, **labels: str) -> Key:
    return name, tuple(sorted({"source": "dense", "fingerprint": MODEL, **labels}.items()))


def parse(text: str) -> dict[Key, float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.startswith("ragindex_search_score")
    }


def scrape(metrics: Metrics) -> dict[Key, float]:
    return parse(metrics.render().decode())


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


def test_searches_of_the_service_reach_its_metrics(tmp_path: Path, corpus: Path) -> None:
    """The service's engine watches its searches; its own thread saves them; ``/metrics`` shows the window."""
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path / "data",
        drift_window_queries=2,
        drift_flush_seconds=0.2,
    )
    with Engine(settings) as engine:
        engine.ingest([corpus])
    app = create_app(settings, ServiceSettings(_env_file=None, warm_up=False))  # type: ignore[call-arg]
    server = ServerThread(app)
    server.start()
    try:
        api_key = str(create_key(app.state.service.store, user_id=1)["key"])
        admin = {"Authorization": f"Bearer {create_key(app.state.service.store, user_id=1, admin=True)['key']}"}
        headers = {"Authorization": f"Bearer {api_key}"}
        with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
            for query in ("queen of the honeybee colony", "TCP slow start"):
                response = client.post("/v1/search", json={"query": query, "set_id": 1, "mode": "dense"})
                assert response.status_code == 200 and response.json()["hits"]
            deadline, scores = time.monotonic() + 60, {}
            while time.monotonic() < deadline:  # saved by the watch's thread, not by the searches
                scores = parse(client.get("/metrics", headers=admin).text)
                if scores.get(key("ragindex_search_score_searches")) == 2:
                    break
                time.sleep(0.1)
        assert scores[key("ragindex_search_score_searches")] == 2
        assert scores[key_of("top1", "0.5")] > 0.3  # each query's own document
        assert scores[key_of("top10", "0.1")] < scores[key_of("top1", "0.1")]  # and the unrelated ones below it
        assert key("ragindex_search_score_shift") not in scores  # the reference is the only closed window
    finally:
        server.stop()


def key_of(metric: str, quantile: str) -> Key:
    return key("ragindex_search_score", metric=metric, quantile=quantile)
