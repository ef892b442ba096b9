"""The learned sparse stage end to end: SQLite + Qdrant Edge + the local BGE-M3 provider (a tiny checkpoint)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from corpora import THREE_DOCS as CORPUS
from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import FingerprintMismatchError, RetrievalConfigurationError
from ragindex.pipeline import faults

pytestmark = pytest.mark.integration

# corpus (tests/conftest.py): the three shared one-chunk documents, CORPUS
QUERIES = ("queen of the honeybee colony", "how does TCP slow start grow the window")


def sparse_settings(data_dir: Path, model: Path, **extra: Any) -> Settings:
    # every kind on chunks (no sections): these tests drive learned sparse as a partial update of the chunks'
    # points; on the sectioned default it goes onto the section points with bm25 (tests/faults covers that)
    return Settings(section_max_chars=0, data_dir=data_dir, sparse_provider="bge_m3", sparse_model=str(model), **extra)


def dense_view(engine: Engine, query: str) -> list[tuple[str, str, float]]:
    hits = engine.search(query, user_id=1, set_id=1, mode="dense").hits
    return [(h.filename or "", h.text, h.score) for h in hits]


def test_sparse_stage_end_to_end(tmp_path: Path, corpus: Path, tiny_bge_m3: Path) -> None:
    with Engine(Settings(section_max_chars=0, data_dir=tmp_path / "plain")) as plain:
        plain.ingest([corpus])
        expected = {q: dense_view(plain, q) for q in QUERIES}
        assert plain.store.list_index_meta()[0].sparse_model is None

    with Engine(sparse_settings(tmp_path / "sparse", tiny_bge_m3)) as engine:
        assert engine.kinds == ("dense", "bm25", "sparse")
        report = engine.ingest([corpus])
        assert report is not None
        chunks = [c for d in engine.store.list_documents() for c in engine.store.chunks_of_document(d.doc_id)]
        assert len(chunks) == 3
        assert {(c.dense_status, c.bm25_status, c.sparse_status) for c in chunks} == {("SUCCESS",) * 3}

        # every point carries the sparse vector next to bm25 ...
        collection = engine.read_collection()
        assert collection is not None
        for chunk in chunks:
            present = engine.index.vectors_present(collection, chunk.bucket_id)[chunk.chunk_id]
            assert {"dense", "bm25", "sparse"} <= present
        # ... and the partial update left the dense vectors alone: same hits, same scores as without sparse
        for query, want in expected.items():
            got = dense_view(engine, query)
            assert [(f, t) for f, t, _ in got] == [(f, t) for f, t, _ in want]
            assert [s for _, _, s in got] == pytest.approx([s for _, _, s in want], abs=1e-6)

        sparse = engine.search(QUERIES[0], user_id=1, set_id=1, mode="sparse")
        assert sparse.mode == "sparse" and sparse.hits
        assert all(set(h.scores) == {"sparse"} and h.scores["sparse"].score > 0 for h in sparse.hits)

        hybrid = engine.search(QUERIES[0], user_id=1, set_id=1, mode="hybrid")
        assert hybrid.hits
        assert set().union(*(set(h.scores) for h in hybrid.hits)) == {"dense", "bm25", "sparse"}
        assert set(hybrid.hits[0].scores) == {"dense", "bm25", "sparse"}  # the bees chunk: all three sources

        assert engine.verify().ok
        name = engine.sparse["sparse"].name
        assert name == f"bge-m3:{tiny_bge_m3}|top_k=256|min_weight=0"
        assert [m.sparse_model for m in engine.store.list_index_meta()] == [name]

        runs = engine.store.runs()
        assert len(runs) == 3
        for run in runs:
            assert run.status == "SUCCESS"
            assert run.stages["sparse"] == "SUCCESS" and run.stages["dense"] == "SUCCESS"

        assert engine.ingest([corpus]) is not None  # a no-op re-run: nothing pending, still all SUCCESS
        assert engine.store.chunk_count_by_status("sparse") == {"SUCCESS": 3}


def test_another_sparse_config_is_a_fingerprint_mismatch(tmp_path: Path, corpus: Path, tiny_bge_m3: Path) -> None:
    data = tmp_path / "d"
    with Engine(sparse_settings(data, tiny_bge_m3)) as engine:
        engine.ingest([corpus])

    with Engine(sparse_settings(data, tiny_bge_m3, sparse_top_k=8)) as other:
        with pytest.raises(FingerprintMismatchError, match="reindex --into") as info:
            other.search(QUERIES[0], user_id=1, set_id=1)
        assert "top_k=256" in info.value.message and "top_k=8" in info.value.message
        other.ingest([corpus])  # nothing changed: a no-op never opens the collection
        (corpus / "new.txt").write_text("A new file must not get vectors of another sparse model.", encoding="utf-8")
        with pytest.raises(FingerprintMismatchError):
            other.ingest([corpus])

    # turning the provider off keeps the collection readable; only sparse search is refused
    with Engine(Settings(section_max_chars=0, data_dir=data)) as off:
        assert off.search(QUERIES[0], user_id=1, set_id=1, mode="hybrid").hits
        with pytest.raises(RetrievalConfigurationError, match="sparse provider"):
            off.search(QUERIES[0], user_id=1, set_id=1, mode="sparse")

    with Engine(sparse_settings(data, tiny_bge_m3)) as again:  # the original config still opens it
        assert again.search(QUERIES[0], user_id=1, set_id=1, mode="sparse").hits


def test_a_collection_built_before_sparse_adopts_it(
    tmp_path: Path, corpus: Path, tiny_bge_m3: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "d"
    with Engine(
        Settings(section_max_chars=0, data_dir=data)
    ) as before:  # the shards are created without any sparse vector
        before.ingest([corpus])

    (corpus / "tides.txt").write_text("Spring tides follow the new and the full moon.", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="ragindex.engine"), Engine(sparse_settings(data, tiny_bge_m3)) as on:
        on.ingest([corpus])
        meta = on.store.list_index_meta()[0]
        assert meta.sparse_model == on.sparse["sparse"].name
        assert "get their sparse vectors on the next ingest or repair" in caplog.text

        # the ingest backfilled the chunks indexed before sparse was enabled (NULL -> PENDING -> SUCCESS)
        docs = {d.filename: d.doc_id for d in on.store.list_documents()}
        chunks = [c for name in [*CORPUS, "tides.txt"] for c in on.store.chunks_of_document(docs[name])]
        assert {c.sparse_status for c in chunks} == {"SUCCESS"}
        new = on.store.chunks_of_document(docs["tides.txt"])
        hits = on.search("spring tides and the moon", user_id=1, set_id=1, mode="sparse").hits
        assert new[0].chunk_id in {h.chunk_id for h in hits}
        collection = on.read_collection()
        assert collection is not None
        present = on.index.vectors_present(collection, chunks[0].bucket_id)
        assert all("sparse" in present[c.chunk_id] for c in chunks)  # every chunk now has a sparse vector
        assert on.verify().ok


def test_a_search_never_adopts_the_sparse_provider(
    tmp_path: Path, corpus: Path, tiny_bge_m3: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The read path writes nothing: the adoption waits for the next ingest or repair (a read-only store serves)."""
    data = tmp_path / "d"
    with Engine(Settings(section_max_chars=0, data_dir=data)) as before:
        before.ingest([corpus])

    with (
        caplog.at_level(logging.WARNING, logger="ragindex.pipeline.catalog"),
        Engine(sparse_settings(data, tiny_bge_m3)) as on,
    ):
        on.store.engine.dispose()  # every connection from now on is read-only
        event.listen(on.store.engine, "connect", lambda conn, _record: conn.execute("PRAGMA query_only = ON"))
        hybrid = on.search(QUERIES[0], user_id=1, set_id=1)  # dense, bm25 and sparse
        assert hybrid.hits and set(hybrid.hits[0].scores) == {"dense", "bm25"}
        assert on.search(QUERIES[0], user_id=1, set_id=1, mode="sparse").hits == ()  # no sparse vector yet
        assert on.store.list_index_meta()[0].sparse_model is None
    assert caplog.text.count("has no vectors of sparse model") == 1  # said once per process

    with Engine(sparse_settings(data, tiny_bge_m3)) as on:
        on.repair()  # a write path: adopts the provider and gives the chunks their sparse vectors
        assert on.store.list_index_meta()[0].sparse_model == on.sparse["sparse"].name
        assert on.search(QUERIES[0], user_id=1, set_id=1, mode="sparse").hits


def test_a_failed_sparse_stage_has_its_own_status_and_repair_converges(
    tmp_path: Path, corpus: Path, tiny_bge_m3: Path
) -> None:
    with Engine(sparse_settings(tmp_path / "d", tiny_bge_m3)) as engine:
        faults.arm("sparse.after_encode")
        try:
            engine.ingest([corpus])
        finally:
            faults.disarm_all()
        chunks = engine.store.pending_chunks("sparse")
        assert len(chunks) == 3
        assert {(c.dense_status, c.bm25_status, c.sparse_status) for c in chunks} == {("SUCCESS", "SUCCESS", "FAILED")}
        assert all("InjectedFault" in (c.last_error or "") for c in chunks)
        assert {r.stages["sparse"] for r in engine.store.runs()} == {"FAILED"}
        assert engine.search(QUERIES[0], user_id=1, set_id=1, mode="sparse").hits == ()  # dense, bm25 still serve
        assert engine.search(QUERIES[0], user_id=1, set_id=1, mode="dense").hits

        engine.repair()
        assert engine.store.chunk_count_by_status("sparse") == {"SUCCESS": 3}
        assert engine.store.chunk_count_by_status("dense") == {"SUCCESS": 3}
        assert engine.verify().ok
        assert engine.search(QUERIES[0], user_id=1, set_id=1, mode="sparse").hits
