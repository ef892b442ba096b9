"""Several index runs and a repair at once on one Engine (issue 3, part 6): no chunk claimed twice, convergence.

Every chunk of a small corpus is left claimable (an ingest whose dense stage failed at
``dense.after_claim``), then four threads run the index stages over the same pending set while a
fifth runs ``repair``, all on one Engine (one SQLite truth store, one Qdrant Edge index, one
model), with small batches so that the claims interleave. The store's claim and finish calls
and the model's document encodes are recorded (wrapped, still the real calls): no chunk may be
held by two claims at once, every content is embedded exactly once, nothing fails, and the end
state converges.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from faultkit import (
    CORPUS,
    NEW_CHUNK_TEXT,
    all_chunks,
    assert_converged,
    chunk_by_text,
    settings,
    warm_cache,
    write_corpus,
)

from ragindex.engine import Engine
from ragindex.pipeline import faults
from ragindex.pipeline.indexer import StageResult
from ragindex.store.records import Claim

pytestmark = pytest.mark.integration

WORKERS = 4


class ClaimLedger:
    """Who holds which (kind, chunk) right now, recorded around the store's real claim and finish calls."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.held: dict[tuple[str, str], str] = {}
        self.claims: Counter[tuple[str, str]] = Counter()
        self.double: list[tuple[str, str]] = []

    def claim(self, real: Callable[..., Claim]) -> Callable[..., Claim]:
        def claim(kind: str, chunk_ids: Sequence[str], **kwargs: Any) -> Claim:
            result = real(kind, chunk_ids, **kwargs)
            with self.lock:
                for cid in result.chunk_ids:
                    if (kind, cid) in self.held:
                        self.double.append((kind, cid))
                    self.held[(kind, cid)] = result.token
                    self.claims[(kind, cid)] += 1
            return result

        return claim

    def finish(self, real: Callable[..., int]) -> Callable[..., int]:
        def finish(claim: Claim, *args: Any, **kwargs: Any) -> int:
            # released before the real call: until it commits the rows are INDEXING, so nobody can claim them
            with self.lock:
                for cid in claim.chunk_ids:
                    if self.held.get((claim.kind, cid)) == claim.token:
                        del self.held[(claim.kind, cid)]
            return real(claim, *args, **kwargs)

        return finish


def test_four_index_runs_and_a_repair_share_one_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = tmp_path / "corpus"
    versions = write_corpus(corpus)
    with Engine(settings(tmp_path / "data", embed_batch_size=2)) as engine:
        faults.arm("dense.after_claim")
        engine.ingest([corpus])
        faults.disarm_all()
        chunks = all_chunks(engine)
        assert {c.dense_status for c in chunks} == {"FAILED"}  # claimable, nothing encoded yet
        contents = {c.content for c in chunks}
        assert len(contents) == len(chunks) >= 16

        store = engine.store
        # the encoder that computes the vectors: the routed encoder hands every ingest to its heavy (torch) one
        # when the light encoder is off, as it is in this suite
        dense = getattr(engine.dense, "heavy", engine.dense)
        ledger = ClaimLedger()
        monkeypatch.setattr(store, "claim", ledger.claim(store.claim))
        monkeypatch.setattr(store, "mark_success", ledger.finish(store.mark_success))
        monkeypatch.setattr(store, "mark_failed", ledger.finish(store.mark_failed))
        encoded: Counter[str] = Counter()
        real_encode = dense.encode_documents

        def encode_documents(texts: Sequence[str]) -> Any:
            with ledger.lock:
                encoded.update(texts)
            return real_encode(texts)

        monkeypatch.setattr(dense, "encode_documents", encode_documents)

        start = threading.Barrier(WORKERS + 1)
        results: list[StageResult] = []
        errors: list[BaseException] = []
        repairs: list[Any] = []

        def worker() -> None:
            try:
                start.wait()
                indexer = engine.indexer()
                results.extend(indexer.run(kind, store.pending_chunks(kind)) for kind in engine.kinds)
            except BaseException as exc:  # surfaced by the assertion below
                errors.append(exc)

        def repairer() -> None:
            try:
                start.wait()
                repairs.append(engine.repair())
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=worker) for _ in range(WORKERS)] + [threading.Thread(target=repairer)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert not any(t.is_alive() for t in threads)
        assert not errors, errors
        assert not ledger.double, f"chunks held by two claims at once: {ledger.double[:5]}"
        assert not [r.failed for r in results if r.failed], "an index batch failed under contention"
        # nothing failed; a repair racing the index runs may end with their work in flight (then it is not ok)
        assert not [r for r in repairs if any(r.index_failed.values()) or r.purge_failed], [
            r.to_dict() for r in repairs
        ]
        indexed = Counter((r.kind, cid) for r in results for cid in r.indexed)
        assert all(n == 1 for n in indexed.values())  # a chunk is indexed by one worker only
        assert len({id(r) for r in results if r.kind == "dense" and r.indexed}) >= 2, "the claims did not interleave"

        # bm25 copies whose dense copy finished after every pending read are left for one more repair
        assert engine.repair().ok
        assert not ledger.double
        assert set(encoded) == contents and set(encoded.values()) == {1}, "a chunk was embedded twice"
        assert_converged(engine, versions, files=list(CORPUS))


@pytest.fixture
def indexed(tmp_path: Path) -> Iterator[tuple[Engine, dict[str, str]]]:
    corpus = tmp_path / "corpus"
    versions = write_corpus(corpus)
    with Engine(settings(tmp_path / "data")) as engine:
        warm_cache(engine, sorted(corpus.iterdir()), [NEW_CHUNK_TEXT])
        engine.ingest([corpus])
        yield engine, versions


def test_an_edit_between_the_pending_read_and_the_claim_is_not_lost(indexed: tuple[Engine, dict[str, str]]) -> None:
    """A worker read the chunk (old content), the chunk was edited, then the worker claimed it.

    The worker must index the content it claimed, not the content it read before the claim.
    """
    engine, versions = indexed
    target = chunk_by_text(engine, "Calvin cycle")
    store = engine.store
    store.reset_status([target.chunk_id], engine.kinds, from_statuses=("SUCCESS",))  # e.g. an explicit reindex
    worker = engine.indexer()
    rows = store.pending_chunks("dense", chunk_ids=[target.chunk_id])  # the worker's read: the old content
    assert store.update_chunk_content(target.chunk_id, NEW_CHUNK_TEXT, engine.kinds)  # the edit's truth write
    for kind in engine.kinds:
        worker.run(kind, rows if kind == "dense" else store.pending_chunks(kind, chunk_ids=[target.chunk_id]))
    engine.update_chunk(target.chunk_id, NEW_CHUNK_TEXT)  # the edit's own index run: finds nothing to do
    assert engine.repair().ok
    assert store.get_chunks([target.chunk_id])[0].content == NEW_CHUNK_TEXT
    assert_converged(engine, versions, skip_docs={target.doc_id})


@pytest.mark.parametrize("change", ["edit", "delete"])
def test_a_change_while_a_worker_writes_the_old_copy_is_not_lost(
    indexed: tuple[Engine, dict[str, str]], change: str
) -> None:
    """A worker claimed the chunk and encoded the old content; the chunk was edited (and re-indexed by
    the edit) or deleted (and purged); then the worker's stale index write landed. Repair converges.
    """
    engine, versions = indexed
    target = chunk_by_text(engine, "Calvin cycle")
    store, index = engine.store, engine.index
    store.reset_status([target.chunk_id], engine.kinds, from_statuses=("SUCCESS",))
    rows = store.pending_chunks("dense", chunk_ids=[target.chunk_id])
    paused, resume = threading.Event(), threading.Event()
    real_upsert = index.upsert_dense

    def upsert_dense(*args: Any, **kwargs: Any) -> None:
        if threading.current_thread().name == "slow-worker":
            paused.set()
            assert resume.wait(60)
        real_upsert(*args, **kwargs)

    errors: list[BaseException] = []

    def slow_worker() -> None:
        try:
            worker = engine.indexer()
            worker.run("dense", rows)
            worker.run("bm25", store.pending_chunks("bm25", chunk_ids=[target.chunk_id]))
        except BaseException as exc:
            errors.append(exc)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(index, "upsert_dense", upsert_dense)
        thread = threading.Thread(target=slow_worker, name="slow-worker")
        thread.start()
        assert paused.wait(60)  # claimed and encoded the old content, about to write it
        if change == "edit":
            result = engine.update_chunk(target.chunk_id, NEW_CHUNK_TEXT)
            assert result.ok, result  # the edit indexed the new content
        else:
            result = engine.delete_chunks([target.chunk_id])
            assert result.purged == 1, result
        resume.set()
        thread.join(60)
    assert not errors, errors
    if change == "delete":  # the late write put the point back: an orphan that verify sees and repair deletes
        assert not engine.verify().ok
    assert engine.repair().ok
    assert_converged(engine, versions, skip_docs={target.doc_id})
