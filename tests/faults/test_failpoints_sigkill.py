"""Every boundary, killed for real: the ``ragindex`` CLI SIGKILLs itself at a failpoint, then repair converges.

Each case prepares a data dir in this process (a clean ingest where the operation needs one,
and the embedding cache warmed with the real model's vectors, so the subprocess skips the
10 s model load but still passes every failpoint), runs the real CLI with
``RAGINDEX_FAILPOINTS="<point>=kill"`` and requires exit by SIGKILL (-9). The test then opens an
Engine on the same data dir (the dead process's Edge WAL lock must be gone), checks that the
crash left work behind, runs ``repair()`` with the default settings (the dead owner is proven gone by
the embedded index lock: no stale timeout is shortened) and asserts :func:`faultkit.assert_converged`;
after a killed ingest, a plain re-run must finish the corpus. Repair itself is killed too (while
purging, while indexing), and the next repair must still converge.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from faultkit import (
    CHANGED,
    CORPUS,
    INDEX_POINTS,
    NEW_CHUNK_TEXT,
    PURGE_POINTS,
    all_chunks,
    assert_converged,
    chunk_by_text,
    cli_env,
    run_cli,
    settings,
    warm_cache,
    write_corpus,
)

from ragindex.engine import Engine
from ragindex.hashing import sha256_text
from ragindex.pipeline import faults
from ragindex.store.records import ChunkRow

pytestmark = pytest.mark.integration

MATRIX = (
    [("ingest", p) for p in ["chunking.after_truth_write", *INDEX_POINTS]]
    + [("reingest", p) for p in ["chunking.after_truth_write", *PURGE_POINTS]]
    + [("update_chunk", p) for p in INDEX_POINTS]
    + [("update_section", p) for p in INDEX_POINTS if p.startswith("bm25")]
    + [("delete_chunks", p) for p in PURGE_POINTS]
    + [("delete_document", p) for p in PURGE_POINTS]
)


# update_chunk edits a chunk where bm25 is on the chunks too (no sections) for its bm25 cells; update_section edits
# one on the default layout, where its bm25 copy is its section's, which the edit derives again from its chunks
EDITS = ("update_chunk", "update_section")


def _killed(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == -signal.SIGKILL, f"expected SIGKILL, got {proc.returncode}: {proc.stderr[-2000:]}"


def _command(operation: str, corpus: Path, target: ChunkRow | None) -> list[str]:
    if operation in ("ingest", "reingest"):
        return ["ingest", str(corpus), "--json"]
    assert target is not None
    if operation in EDITS:
        return ["update-chunk", target.chunk_id, "--text", NEW_CHUNK_TEXT, "--json"]
    if operation == "delete_chunks":
        return ["delete", "--chunk-id", target.chunk_id, "--json"]
    return ["delete", "--doc-id", str(target.doc_id), "--json"]


@pytest.mark.parametrize(("operation", "point"), MATRIX, ids=[f"{o}-{p}" for o, p in MATRIX])
def test_sigkill_then_repair_converges(tmp_path: Path, operation: str, point: str) -> None:
    corpus, data = tmp_path / "corpus", tmp_path / "data"
    versions = write_corpus(corpus)
    kind = point.split(".")[0]
    skip: set[int] = set()
    target = None
    layout = {"section_max_chars": 0} if operation == "update_chunk" and kind == "bm25" else {}
    env = {"RAGINDEX_SECTION_MAX_CHARS": "0"} if layout else {}
    with Engine(settings(data, **layout)) as engine:
        warm_cache(engine, sorted(corpus.iterdir()), [NEW_CHUNK_TEXT], CHANGED.values())
        if operation != "ingest":
            engine.ingest([corpus])
            assert engine.verify().ok
        if operation in EDITS:
            target = chunk_by_text(engine, "Calvin cycle")
        elif operation.startswith("delete"):
            target = chunk_by_text(engine, "ATP synthase")
        # bees.txt is the first changed file: the kill comes while its replaced chunk is being purged
        old = {chunk_by_text(engine, "Foragers dance").chunk_id} if operation == "reingest" else set()

    if operation == "reingest":
        versions |= write_corpus(corpus, CHANGED)
    if target is not None and operation != "delete_document":
        skip.add(target.doc_id)  # a chunk was edited or deleted on purpose: no coverage check for it
    _killed(run_cli(data, _command(operation, corpus, target), f"{point}=kill", extra_env=env))

    with Engine(settings(data, **layout)) as engine:
        # what the crash left behind (sections included: bm25 is on them)
        chunks = all_chunks(engine, unit=None)
        if kind in ("dense", "bm25"):
            assert any(c.status_of(kind) == "INDEXING" for c in chunks)
        if operation == "ingest" and kind == "chunking":
            # the first document's truth write committed, nothing after it ran
            assert {c.doc_id for c in chunks} == {engine.store.list_documents()[0].doc_id}
        if operation == "reingest":
            assert {r.lifecycle_status for r in engine.store.get_chunks(sorted(old))} == {"REMOVED"}
            assert old <= {r.chunk_id for r in engine.store.removed_unpurged()}
        if operation in EDITS:
            assert target is not None
            assert engine.store.get_chunks([target.chunk_id])[0].content == NEW_CHUNK_TEXT
        if operation.startswith("delete"):
            assert target is not None
            assert engine.store.get_chunks([target.chunk_id])[0].lifecycle_status == "REMOVED"
            hits = engine.search("ATP synthase turbine protons membrane", user_id=1, set_id=1, mode="bm25").hits
            assert target.chunk_id not in {h.chunk_id for h in hits}  # no ghost hit while unpurged
        dry = engine.repair(dry_run=True)
        assert dry.found > 0, dry.to_dict()
        if operation in ("ingest", "reingest"):  # the dead ingest's runs: stuck at once, its owner is gone
            assert dry.stuck_runs > 0 and engine.repair(dry_run=True).stuck_runs == dry.stuck_runs

        report = engine.repair()
        assert report.ok, report.to_dict()
        assert_converged(engine, versions, skip_docs=skip)
        if operation in EDITS:
            assert target is not None
            row = engine.store.get_chunks([target.chunk_id])[0]
            assert row.content == NEW_CHUNK_TEXT and row.lifecycle_status == "ACTIVE"
            hits = engine.search("glaciers moraines boulders", user_id=1, set_id=1, mode="bm25").hits
            assert hits and hits[0].chunk_id == target.chunk_id  # the lexical copy holds the new text
        if operation in ("ingest", "reingest"):
            # re-running the interrupted ingest finishes whatever it never reached
            engine.ingest([corpus])
            assert_converged(engine, versions, files=list(CORPUS))
            current = {d.filename: d.content_hash for d in engine.store.list_documents()}
            assert current == {n: sha256_text((corpus / n).read_text(encoding="utf-8")) for n in CORPUS}


def test_sigkill_with_the_model_loading_and_encoding(tmp_path: Path) -> None:
    """No warmed cache: the subprocess loads the model and encodes, then dies after the encode."""
    corpus, data = tmp_path / "corpus", tmp_path / "data"
    versions = write_corpus(corpus)
    _killed(run_cli(data, ["ingest", str(corpus), "--json"], "dense.after_encode=kill"))
    with Engine(settings(data)) as engine:
        chunks = all_chunks(engine)
        assert chunks and {c.dense_status for c in chunks} == {"INDEXING"}
        # the vectors computed before the kill were committed to the embedding cache
        cached = engine.store.cached_vectors(engine.dense.cache_key, [c.content_hash for c in chunks])
        assert len(cached) == len({c.content_hash for c in chunks})
        engine.repair()
        assert_converged(engine, versions, files=list(CORPUS))


def test_sigkill_in_the_sparse_stage(tmp_path: Path, tiny_bge_m3: Path) -> None:
    """The learned sparse stage (tiny BGE-M3 checkpoint): killed between its index write and SUCCESS."""
    corpus, data = tmp_path / "corpus", tmp_path / "data"
    versions = write_corpus(corpus)
    extra = {"sparse_provider": "bge_m3", "sparse_model": str(tiny_bge_m3)}
    with Engine(settings(data, **extra)) as engine:
        warm_cache(engine, sorted(corpus.iterdir()))
    env = {"RAGINDEX_SPARSE_PROVIDER": "bge_m3", "RAGINDEX_SPARSE_MODEL": str(tiny_bge_m3)}
    _killed(run_cli(data, ["ingest", str(corpus), "--json"], "sparse.before_mark_success=kill", extra_env=env))
    with Engine(settings(data, **extra)) as engine:
        sections = all_chunks(engine, unit="section")  # learned sparse is written onto the section points
        assert {(c.dense_status, c.bm25_status, c.sparse_status) for c in sections} == {(None, "SUCCESS", "INDEXING")}
        engine.repair()
        assert_converged(engine, versions, files=list(CORPUS))


REPAIR_POINTS = ["purge.after_index_delete", "dense.after_index_write", "bm25.before_mark_success"]


@pytest.mark.parametrize("point", REPAIR_POINTS)
def test_sigkill_during_repair_then_repair_again_converges(tmp_path: Path, point: str) -> None:
    """Repair is interrupted too: every chunk FAILED and one deleted chunk unpurged, ``ragindex repair`` killed."""
    corpus, data = tmp_path / "corpus", tmp_path / "data"
    versions = write_corpus(corpus)
    # a bm25 copy waits for its point's dense write only where bm25 is on the chunks (no sections)
    layout = {"section_max_chars": 0} if point.startswith("bm25") else {}
    env = {"RAGINDEX_SECTION_MAX_CHARS": "0"} if layout else {}
    with Engine(settings(data, **layout)) as engine:
        warm_cache(engine, sorted(corpus.iterdir()))
        faults.arm("dense.after_claim")
        engine.ingest([corpus])
        faults.disarm_all()
        target = chunk_by_text(engine, "ATP synthase")
        faults.arm("purge.before_index_delete")
        assert engine.delete_chunks([target.chunk_id]).purge_failed == 1
        faults.disarm_all()
        assert engine.store.removed_unpurged()
    _killed(run_cli(data, ["repair", "--json"], f"{point}=kill", extra_env=env))
    with Engine(settings(data, **layout)) as engine:
        assert engine.repair(dry_run=True).found > 0
        report = engine.repair()
        assert report.ok, report.to_dict()
        assert_converged(engine, versions, skip_docs={target.doc_id})


# the CLI's ingest, with EdgeShard.create wrapped to SIGKILL the process right after the real create
_KILL_AFTER_SHARD_CREATE = """
import os, signal, sys
import qdrant_edge
real_create = qdrant_edge.EdgeShard.create
class EdgeShard:
    load = qdrant_edge.EdgeShard.load
    @staticmethod
    def create(path, config):
        real_create(path, config)
        os.kill(os.getpid(), signal.SIGKILL)
qdrant_edge.EdgeShard = EdgeShard
from ragindex.cli import main
sys.argv = ["ragindex", "ingest", sys.argv[1], "--json"]
main()
"""


def test_sigkill_between_shard_create_and_its_payload_indexes(tmp_path: Path) -> None:
    """The first index write creates the bucket's shard, then its payload indexes; a kill in between
    must not leave a shard without them (tenant filters would scan every point, for ever)."""
    corpus, data = tmp_path / "corpus", tmp_path / "data"
    versions = write_corpus(corpus)
    with Engine(settings(data)) as engine:
        warm_cache(engine, sorted(corpus.iterdir()))
    proc = subprocess.run(
        [sys.executable, "-c", _KILL_AFTER_SHARD_CREATE, str(corpus)],
        env=cli_env(data),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    _killed(proc)
    with Engine(settings(data)) as engine:
        engine.repair()
        assert_converged(engine, versions, files=list(CORPUS))
        collection = engine.read_collection()
        assert collection is not None
        bucket = all_chunks(engine)[0].bucket_id
        shard = engine.index._shard(collection, bucket)
        assert {"user_id", "set_id", "doc_id"} <= set(shard.info().payload_schema)
