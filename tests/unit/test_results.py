"""The typed results of the Engine's management calls: ``to_dict()`` is the JSON the CLI prints and the service answers.

The literal dicts below are the shapes those calls returned before they were typed (key order included), so a
change to a wire format shows up here, not in a client.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from ragindex.results import (
    ChunkUpdate,
    CollectionStatus,
    DeleteResult,
    ReindexResult,
    SetStatus,
    StaleRelease,
    StatusReport,
)


def test_status_report_round_trips_the_stores_counts() -> None:
    counts = {
        "sets": [
            {
                "user_id": 1,
                "set_id": 2,
                "documents": {"SUCCESS": 3, "FAILED": 1},
                "chunks": {"dense": {"SUCCESS": 5}, "bm25": {"SUCCESS": 4, "PENDING": 1}, "sparse": {}},
            }
        ]
    }
    report = StatusReport.from_counts(counts, [CollectionStatus("ragindex", "ACTIVE", "st:minilm:384")])
    out = report.to_dict()
    assert out == {**counts, "collections": [{"collection": "ragindex", "state": "ACTIVE", "dense": "st:minilm:384"}]}
    assert list(out) == ["sets", "collections"]
    assert list(out["sets"][0]) == ["user_id", "set_id", "documents", "chunks"]
    assert type(out["sets"][0]["chunks"]["bm25"]) is dict  # plain JSON types, not the read-only views
    json.dumps(out)
    assert report.set_status(1, 2) == report.sets[0]
    assert report.set_status(1, 3) is None


def test_the_results_are_frozen_and_their_mappings_read_only() -> None:
    source = {"SUCCESS": 1}
    status = SetStatus(user_id=1, set_id=1, documents=source, chunks={"dense": source})
    source["FAILED"] = 2  # a copy was taken
    assert status.documents == {"SUCCESS": 1}
    with pytest.raises(TypeError):
        status.documents["FAILED"] = 2  # type: ignore[index]
    with pytest.raises(TypeError):
        status.chunks["dense"]["FAILED"] = 2  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        status.user_id = 2  # type: ignore[misc]


def test_chunk_update_shape_and_ok() -> None:
    update = ChunkUpdate(
        chunk_id="c1",
        content_changed=True,
        reembedded=False,
        metadata_updated=False,
        statuses={"dense": "FAILED", "bm25": None},
        embedded=1,
        reused=0,
        failed={"dense": "boom"},
    )
    out = update.to_dict()
    assert list(out) == [
        "chunk_id",
        "content_changed",
        "reembedded",
        "metadata_updated",
        "statuses",
        "embedded",
        "reused",
        "failed",
        "section_id",
        "section_statuses",
        "ok",
    ]
    assert out["ok"] is False and out["statuses"] == {"dense": "FAILED", "bm25": None}
    assert out["section_id"] is None and out["section_statuses"] == {}
    fixed = dataclasses.replace(update, statuses={"dense": "SUCCESS", "bm25": None}, failed={})
    assert fixed.ok and fixed.to_dict()["ok"] is True
    # with sections the lexical copy is the section's: a section copy not written yet is not ok
    sectioned = dataclasses.replace(fixed, section_id="s1", section_statuses={"dense": None, "bm25": "PENDING"})
    assert not sectioned.ok and sectioned.to_dict()["section_statuses"] == {"dense": None, "bm25": "PENDING"}


def test_delete_result_shape() -> None:
    result = DeleteResult(
        removed=2,
        purged=1,
        purge_failed=1,
        doc_ids=[7],  # type: ignore[arg-type]  # any sequence is kept as a tuple
        chunk_ids=("a", "b"),
        errors=("index down",),
        next_action="ragindex repair",
    )
    assert result.doc_ids == (7,) and not result.ok
    assert result.to_dict() == {
        "removed": 2,
        "purged": 1,
        "purge_failed": 1,
        "doc_ids": [7],
        "chunk_ids": ["a", "b"],
        "errors": ["index down"],
        "next_action": "ragindex repair",
    }
    keys = ["removed", "purged", "purge_failed", "doc_ids", "chunk_ids", "errors", "next_action"]
    assert list(result.to_dict()) == keys


def test_reindex_result_shape() -> None:
    result = ReindexResult(
        chunks=2,
        chunk_ids=("a", "b"),
        indexed={"dense": 2, "bm25": 1},
        failed={"dense": 0, "bm25": 1},
        failed_ids=("b",),
        errors=("bm25: boom",),
        embedded=0,
        reused=2,
    )
    assert not result.ok
    assert list(result.to_dict()) == [
        "chunks",
        "chunk_ids",
        "indexed",
        "failed",
        "failed_ids",
        "errors",
        "embedded",
        "reused",
    ]
    assert result.to_dict()["failed_ids"] == ["b"]


def test_stale_release_lists_indexed_and_failed_only_when_it_indexed() -> None:
    nothing = StaleRelease(released={"dense": 0, "bm25": 0}, chunk_ids=())
    assert nothing.to_dict() == {"released": {"dense": 0, "bm25": 0}, "chunk_ids": []}
    some = StaleRelease(released={"dense": 1}, chunk_ids=("a",), indexed={"dense": 1}, failed={"dense": 0})
    assert list(some.to_dict()) == ["released", "chunk_ids", "indexed", "failed"]
