"""Enabled sources and graceful degradation with a real remote encoder that stops mid-run (seed 000 §9.3, §9.4).

An Engine (and the HTTP service, and the CLI) embeds through the project's encoder server; BM25 is local. Once the
server is stopped, ``fail`` raises the encoder error and ``degrade`` answers from BM25 naming ``dense`` as degraded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import (
    RetrievalConfigurationError,
    RetrievalEncodingError,
    SourceUnavailableError,
    ValidationError,
)

pytestmark = pytest.mark.integration

QUERY = "which pets purr and chase mice?"
USER = {"user_id": 1, "set_id": 1}


@pytest.fixture
def encoder(local_dense: Any) -> Iterator[Any]:
    """A dense-only encoder server of this test alone, so that the test may stop it (``stop`` is idempotent)."""
    served = pytest.importorskip("ragindex.encoders.server", reason="the encoder server needs ragindex[service]")
    local_dense.encode_queries(["load the model before the first request"])
    server = served.ThreadedServer(served.create_encoder_app(local_dense, None)).start()
    yield server
    server.stop()


@pytest.fixture
def full_encoder(local_dense: Any, local_sparse: Any) -> Iterator[Any]:
    """An encoder server of this test alone serving dense and learned sparse vectors."""
    served = pytest.importorskip("ragindex.encoders.server", reason="the encoder server needs ragindex[service]")
    local_dense.encode_queries(["load the model before the first request"])
    server = served.ThreadedServer(served.create_encoder_app(local_dense, local_sparse)).start()
    yield server
    server.stop()


def remote(url: str, data_dir: Path, **extra: Any) -> Settings:
    """Dense through the encoder server, no retries (a stopped server fails at once), BM25 local."""
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=data_dir,
        dense_provider="openai",
        dense_url=url,
        dense_max_retries=0,
        dense_timeout=120,  # the server's model may still load on a busy machine; a stopped server refuses at once
        bucket_count=1,
        reconcile_interval_seconds=0,
        **{"dense_dimensions": 384, **extra},
    )


def test_engine_fails_or_degrades_when_the_encoder_server_stops(encoder, tmp_files, tmp_path):
    with Engine(remote(encoder.url, tmp_path / "data")) as engine:
        assert not engine.ingest([tmp_files]).failures
        both = engine.search(QUERY, **USER, top_k=3)
        assert both.hits[0].filename == "cats.md"
        assert set(both.hits[0].scores) == {"dense", "bm25"} and not both.degraded

        encoder.stop()
        with pytest.raises(RetrievalEncodingError) as info:  # the default policy: fail
            engine.search(QUERY, **USER, top_k=3)
        assert info.value.context["source"] == "dense"
        assert "embeddings API" in info.value.message and (info.value.exit_code, info.value.http_status) == (5, 502)

        result = engine.search(QUERY, **USER, top_k=3, on_source_error="degrade")
        assert result.hits and result.hits[0].filename == "cats.md"
        assert all(set(hit.scores) == {"bm25"} for hit in result.hits)
        assert list(result.degraded) == ["dense"]
        assert result.degraded["dense"].startswith("dense query encoding failed: embeddings API at ")
        assert result.to_dict()["degraded"] == result.degraded

        with pytest.raises(RetrievalEncodingError):  # every source of the search failed: raised even under degrade
            engine.search(QUERY, **USER, mode="dense", on_source_error="degrade")
        assert engine.search(QUERY, **USER, mode="bm25").hits[0].filename == "cats.md"  # never needs the encoder

        engine.settings.recall_on_source_error = "degrade"  # the default is read from the live settings object
        assert list(engine.search(QUERY, **USER).degraded) == ["dense"]
        with pytest.raises(RetrievalEncodingError):  # and a per-call policy overrides it
            engine.search(QUERY, **USER, on_source_error="fail")


def test_enabled_sources_and_per_call_overrides_apply_at_run_time(encoder, tmp_files, tmp_path):
    with Engine(remote(encoder.url, tmp_path / "data")) as engine:
        assert not engine.ingest([tmp_files]).failures
        dense_only = engine.search(QUERY, **USER, top_k=3, sources=["dense"])
        assert dense_only.mode == "hybrid" and dense_only.hits[0].filename == "cats.md"
        assert all(set(hit.scores) == {"dense"} for hit in dense_only.hits)

        encoder.stop()
        # narrowed to bm25 the search never calls the stopped encoder, so even `fail` answers
        narrowed = engine.search(QUERY, **USER, top_k=3, sources="bm25")
        assert all(set(hit.scores) == {"bm25"} for hit in narrowed.hits) and not narrowed.degraded

        engine.settings.recall_enabled_sources = "bm25"  # what an operator sets while the encoder is down
        hybrid = engine.search(QUERY, **USER, top_k=3)
        assert hybrid.hits[0].filename == "cats.md" and not hybrid.degraded
        assert all(set(hit.scores) == {"bm25"} for hit in hybrid.hits)
        with pytest.raises(SourceUnavailableError, match="dense search is disabled by RAGINDEX_RECALL_ENABLED"):
            engine.search(QUERY, **USER, mode="dense")
        with pytest.raises(SourceUnavailableError, match="source dense is disabled by RAGINDEX_RECALL_ENABLED"):
            engine.search(QUERY, **USER, sources=["bm25", "dense"])
        with pytest.raises(SourceUnavailableError, match="sparse search is not enabled"):
            engine.search(QUERY, **USER, sources=["sparse"])

        engine.settings.recall_enabled_sources = "bm25,colbert"  # an invalid value set at run time
        with pytest.raises(RetrievalConfigurationError, match="unknown source 'colbert'; valid: dense, bm25, sparse"):
            engine.search(QUERY, **USER)
        engine.settings.recall_enabled_sources = None
        with pytest.raises(ValidationError, match="sources: unknown source 'colbert'; valid: dense, bm25, sparse"):
            engine.search(QUERY, **USER, sources=["bm25", "colbert"])
        with pytest.raises(ValidationError, match="sources: no source named"):
            engine.search(QUERY, **USER, sources=[])
        with pytest.raises(ValidationError, match="mode bm25 searches bm25 only"):
            engine.search(QUERY, **USER, mode="bm25", sources=["dense"])


def test_every_failed_source_is_named_and_an_engine_started_while_the_server_is_down_degrades(
    full_encoder, tmp_files, tmp_path
):
    sparse = {"sparse_provider": "remote_bge_m3", "bge_m3_service_url": full_encoder.url, "bge_m3_max_retries": 0}
    with Engine(remote(full_encoder.url, tmp_path / "data", **sparse)) as engine:
        assert not engine.ingest([tmp_files]).failures
        three = engine.search("volcano magma", **USER, top_k=3)
        assert three.hits[0].filename == "volcanoes.md" and set(three.hits[0].scores) == {"dense", "bm25", "sparse"}
        full_encoder.stop()
        result = engine.search("volcano magma", **USER, top_k=3, on_source_error="degrade")
        assert list(result.degraded) == ["dense", "sparse"]
        assert result.degraded["sparse"].startswith("sparse query encoding failed: remote_bge_m3 service at ")
        assert result.hits[0].filename == "volcanoes.md" and set(result.hits[0].scores) == {"bm25"}
        assert not engine.search("volcano magma", **USER, sources="bm25").degraded
        with pytest.raises(RetrievalEncodingError, match="^sparse query encoding failed"):
            engine.search("volcano magma", **USER, sources="sparse,bm25")

    # a fresh process that never reached the server (no configured dimension: the first search asks for it)
    settings = remote(full_encoder.url, tmp_path / "data", dense_dimensions=None, **sparse)
    with Engine(settings) as engine:
        with pytest.raises(RetrievalEncodingError, match="^dense query encoding failed"):
            engine.search("volcano magma", **USER)
        result = engine.search("volcano magma", **USER, on_source_error="degrade")
        assert list(result.degraded) == ["dense", "sparse"] and result.hits[0].filename == "volcanoes.md"


def test_service_degrades_over_http_and_counts_it_in_metrics(encoder, tmp_files, tmp_path):
    pytest.importorskip("fastapi", reason="the service needs ragindex[service]")
    from ragindex.encoders.server import ThreadedServer
    from ragindex.service.app import create_app
    from ragindex.service.keys import create_key
    from ragindex.service.settings import ServiceSettings

    settings = remote(encoder.url, tmp_path / "data")
    with Engine(settings) as engine:  # ingest first: the service then owns the index
        assert not engine.ingest([tmp_files]).failures
    app = create_app(settings, ServiceSettings(_env_file=None))  # type: ignore[call-arg]
    with ThreadedServer(app, startup_timeout=120) as server:
        key = create_key(app.state.service.store, user_id=1)["key"]
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:

            def search(**fields: Any) -> httpx.Response:
                return client.post("/v1/search", json={"query": QUERY, "set_id": 1, "top_k": 3, **fields})

            ok = search()
            assert ok.status_code == 200, ok.text
            assert "degraded" not in ok.json() and set(ok.json()["hits"][0]["scores"]) == {"dense", "bm25"}

            encoder.stop()
            failed = search()
            assert failed.status_code == 502, failed.text
            assert failed.json()["error"] == "RetrievalEncodingError"
            assert failed.json()["context"]["source"] == "dense"

            degraded = search(on_source_error="degrade")
            assert degraded.status_code == 200, degraded.text
            body = degraded.json()
            assert list(body["degraded"]) == ["dense"] and "embeddings API" in body["degraded"]["dense"]
            assert body["hits"][0]["filename"] == "cats.md"
            assert all(set(hit["scores"]) == {"bm25"} for hit in body["hits"])

            narrowed = search(sources=["bm25"])
            assert narrowed.status_code == 200 and "degraded" not in narrowed.json()

            for bad in ({"sources": ["colbert"]}, {"sources": []}, {"on_source_error": "ignore"}):
                refused = search(**bad)
                assert refused.status_code == 422, (bad, refused.text)
                assert refused.json()["context"]["field"].split(".")[0] == next(iter(bad))
            assert "'dense', 'bm25' or 'sparse'" in search(sources=["colbert"]).json()["message"]
            mismatch = search(mode="dense", sources=["bm25"])
            assert mismatch.status_code == 422 and mismatch.json()["context"]["field"] == "sources"
            unconfigured = search(sources=["sparse"])  # a source this deployment lacks: the request's fault, not 500
            assert unconfigured.status_code == 422 and unconfigured.json()["error"] == "SourceUnavailableError"
            assert "configure a sparse provider" in unconfigured.json()["message"]

            admin = create_key(app.state.service.store, user_id=1, admin=True)["key"]
            metrics = client.get("/metrics", headers={"Authorization": f"Bearer {admin}"}).text
            assert 'ragindex_search_degraded_total{source="dense"} 1.0' in metrics
            assert 'ragindex_search_degraded_total{source="bm25"} 0.0' in metrics


def test_cli_search_sources_and_degradation(encoder, tmp_files, tmp_path, monkeypatch):
    from ragindex.cli import commands  # noqa: F401 - registers the commands
    from ragindex.cli.app import app

    for name, value in {
        "DENSE_PROVIDER": "openai",
        "DENSE_URL": encoder.url,
        "DENSE_DIMENSIONS": "384",
        "DENSE_MAX_RETRIES": "0",
        "BUCKET_COUNT": "1",
    }.items():
        monkeypatch.setenv(f"RAGINDEX_{name}", value)
    data = ["--data-dir", str(tmp_path / "data")]
    runner = CliRunner()

    def cli(*args: str) -> Any:
        return runner.invoke(app, [*data, *args])

    assert cli("ingest", str(tmp_files), "--json").exit_code == 0
    both = cli("search", QUERY, "--sources", "bm25,dense", "--json")
    assert both.exit_code == 0, both.output
    assert set(json.loads(both.stdout)["hits"][0]["scores"]) == {"dense", "bm25"}

    encoder.stop()
    degraded = cli("search", QUERY, "--sources", "bm25,dense", "--on-source-error", "degrade", "--json")
    assert degraded.exit_code == 0, degraded.output
    assert list(json.loads(degraded.stdout)["degraded"]) == ["dense"]
    human = cli("search", QUERY, "--on-source-error", "degrade")
    assert human.exit_code == 0 and "degraded: dense left out: dense query encoding failed" in human.stdout
    assert cli("search", QUERY).exit_code == 5  # fail: the encoding error's exit code
    assert cli("search", QUERY, "--sources", "bm25").exit_code == 0
    unknown = cli("search", QUERY, "--sources", "bm25,title")
    assert unknown.exit_code == 2 and "unknown source 'title'" in unknown.output
