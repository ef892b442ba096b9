"""Enabled sources and the source-error policy: parsing, resolution, the failure record (pure logic)."""

from __future__ import annotations

import pydantic
import pytest

from ragindex.config.settings import Settings
from ragindex.config.sources import SOURCES, parse_sources
from ragindex.errors import RetrievalBackendError, RetrievalConfigurationError, RetrievalEncodingError, ValidationError
from ragindex.retrieval.search import SearchRequest
from ragindex.retrieval.sources import (
    OnSourceError,
    SourceFailures,
    enabled_by_setting,
    requested_sources,
    resolve,
    source_error_policy,
)
from ragindex.types import SearchMode, SearchResult

ALL = ("dense", "bm25", "sparse")
NO_SPARSE = ("dense", "bm25")


def test_parse_sources_splits_strips_lowers_and_dedups_in_order() -> None:
    assert SOURCES == ALL
    assert parse_sources(" BM25, dense ,bm25,") == ("bm25", "dense")
    assert parse_sources(["sparse", "dense"]) == ("sparse", "dense")


@pytest.mark.parametrize("value", ["", " , ", []])
def test_parse_sources_refuses_no_source(value: str | list[str]) -> None:
    with pytest.raises(ValueError, match="at least one of dense, bm25, sparse"):
        parse_sources(value)


@pytest.mark.parametrize("value", ["bm25,splade", ["dense", "colbert"]])
def test_parse_sources_refuses_an_unknown_name_listing_the_valid_ones(value: str | list[str]) -> None:
    with pytest.raises(ValueError, match=r"unknown source '(splade|colbert)'; valid: dense, bm25, sparse"):
        parse_sources(value)


def test_the_setting_is_validated_and_normalised_at_start() -> None:
    assert Settings(recall_enabled_sources="BM25 , dense").recall_enabled_sources == "bm25,dense"
    assert Settings().recall_enabled_sources is None
    assert Settings().recall_on_source_error == "fail"
    with pytest.raises(pydantic.ValidationError, match="unknown source 'vector'; valid: dense, bm25, sparse"):
        Settings(recall_enabled_sources="vector")
    with pytest.raises(pydantic.ValidationError, match="must stay enabled"):
        Settings(recall_enabled_sources="")
    with pytest.raises(pydantic.ValidationError, match="recall_on_source_error"):
        Settings(recall_on_source_error="retry")  # type: ignore[arg-type]


def test_the_setting_reaches_the_retrieval_section_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGINDEX_RECALL_ENABLED_SOURCES", "bm25,sparse")
    monkeypatch.setenv("RAGINDEX_RECALL_ON_SOURCE_ERROR", "degrade")
    retrieval = Settings().retrieval
    assert (retrieval.recall_enabled_sources, retrieval.recall_on_source_error) == ("bm25,sparse", "degrade")


def test_a_setting_changed_at_run_time_is_checked_when_a_search_reads_it() -> None:
    assert enabled_by_setting(None) is None
    assert enabled_by_setting("dense,bm25") == NO_SPARSE
    with pytest.raises(RetrievalConfigurationError, match="RAGINDEX_RECALL_ENABLED_SOURCES='dens'.*valid: dense"):
        enabled_by_setting("dens")


def test_a_per_call_override_is_a_validation_error_on_field_sources() -> None:
    assert requested_sources(None) is None
    assert requested_sources("bm25") == ("bm25",)
    with pytest.raises(ValidationError, match="sources: unknown source 'title'") as info:
        requested_sources(["title"])
    assert info.value.field == "sources"
    with pytest.raises(ValidationError, match="sources: no source named"):
        requested_sources([])


def test_source_error_policy() -> None:
    assert source_error_policy("degrade") is OnSourceError.DEGRADE
    with pytest.raises(ValidationError, match="on_source_error: unknown policy 'ignore'; valid: fail, degrade"):
        source_error_policy("ignore")


# --------------------------------------------------------------------------- resolve
def test_hybrid_runs_every_configured_source_unless_the_setting_narrows_it() -> None:
    assert resolve(True, None, ALL, None, None) == ALL
    assert resolve(True, None, ALL, ("sparse", "dense"), None) == ("dense", "sparse")  # hybrid's own order


def test_the_setting_ignores_names_that_are_not_configured() -> None:
    assert resolve(True, None, NO_SPARSE, ALL, None) == NO_SPARSE  # the seed's default, set where sparse is not
    with pytest.raises(RetrievalConfigurationError, match="enables none of the configured sources"):
        resolve(True, None, NO_SPARSE, ("sparse",), None)


def test_a_per_call_override_narrows_within_the_setting() -> None:
    assert resolve(True, None, ALL, None, ("bm25",)) == ("bm25",)
    assert resolve(True, None, ALL, ("dense", "bm25"), ("bm25", "dense")) == ("dense", "bm25")
    with pytest.raises(RetrievalConfigurationError, match="source sparse is disabled by .*=dense,bm25") as info:
        resolve(True, None, ALL, ("dense", "bm25"), ("bm25", "sparse"))
    assert info.value.context["source"] == "sparse"
    with pytest.raises(RetrievalConfigurationError, match="sparse search is not enabled; configure a sparse"):
        resolve(True, None, NO_SPARSE, None, ("sparse",))


def test_a_single_mode_whose_source_is_disabled_is_an_error() -> None:
    assert resolve(False, "bm25", ALL, ("bm25",), None) == ("bm25",)
    with pytest.raises(RetrievalConfigurationError, match="dense search is disabled by .*=bm25; enable dense"):
        resolve(False, "dense", ALL, ("bm25",), None)
    with pytest.raises(RetrievalConfigurationError, match="RAGINDEX_BM25_ENABLED=true"):
        resolve(False, "bm25", ("dense",), None, None)


def test_a_request_whose_sources_leave_out_its_single_mode_is_refused() -> None:
    fields = {"query": "q", "user_id": 1, "set_id": 1, "doc_ids": None, "top_k": 5, "score_threshold": None}
    common = {**fields, "fusion": "rrf", "candidates": 10}
    with pytest.raises(ValidationError, match="mode dense searches dense only, which bm25 leaves out"):
        SearchRequest(**common, mode=SearchMode.DENSE, sources=("bm25",))  # type: ignore[arg-type]
    request = SearchRequest(**common, mode=SearchMode.HYBRID, sources=("BM25",), on_source_error="degrade")  # type: ignore[arg-type]
    assert (request.sources, request.on_source_error) == (("bm25",), OnSourceError.DEGRADE)
    with pytest.raises(ValidationError, match="on_source_error"):
        SearchRequest(**common, mode=SearchMode.HYBRID, on_source_error="skip")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- failures
def _encoding() -> RetrievalEncodingError:
    return RetrievalEncodingError("dense query encoding failed: embeddings API unreachable", source="dense")


def test_fail_raises_the_first_failure_at_once() -> None:
    failures = SourceFailures(OnSourceError.FAIL)
    error = _encoding()
    with pytest.raises(RetrievalEncodingError) as info:
        failures.record("dense", error)
    assert info.value is error


def test_degrade_records_the_failure_and_goes_on_while_a_source_is_left() -> None:
    failures = SourceFailures(OnSourceError.DEGRADE)
    failures.record("dense", _encoding())
    failures.check_left(["bm25"])
    assert failures.degraded == {"dense": "dense query encoding failed: embeddings API unreachable"}


def test_degrade_raises_the_first_failure_when_every_source_failed() -> None:
    failures = SourceFailures(OnSourceError.DEGRADE)
    first = _encoding()
    failures.record("dense", first)
    failures.record("bm25", RetrievalBackendError("bm25 search failed: index down", source="bm25"))
    with pytest.raises(RetrievalEncodingError) as info:
        failures.check_left([])
    assert info.value is first
    SourceFailures(OnSourceError.DEGRADE).check_left([])  # nothing failed, nothing to search: not an error here


def test_degraded_is_in_the_json_form_only_when_a_source_was_left_out() -> None:
    plain = SearchResult(hits=(), latency_ms={"total": 1.0}, mode="hybrid")
    assert "degraded" not in plain.to_dict()
    degraded = SearchResult(hits=(), latency_ms={}, mode="hybrid", degraded={"dense": "unreachable"})
    assert degraded.to_dict()["degraded"] == {"dense": "unreachable"}
