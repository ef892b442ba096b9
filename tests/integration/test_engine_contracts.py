"""Engine-level guarantees on the real engines: ghost hits, Chinese BM25, model fingerprints, one index owner."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ragindex.config.settings import Settings
from ragindex.encoders.sparse.bm25 import Bm25SparseEncoder
from ragindex.engine import Engine
from ragindex.errors import FingerprintMismatchError, IndexLockedError

pytestmark = pytest.mark.integration


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def engine(make_engine: Callable[..., Engine]) -> Iterator[Engine]:
    """An engine with nothing ingested (not the shared one over ``corpus``): each test writes its own files."""
    with make_engine() as eng:
        yield eng


def test_removed_chunk_is_never_returned_even_before_its_point_is_purged(engine: Engine, tmp_path: Path) -> None:
    corpus = write(
        tmp_path / "c", {"a.txt": "Glaciers carve U-shaped valleys.", "b.txt": "Rivers carve V-shaped valleys."}
    )
    engine.ingest([corpus])
    hits = engine.search("glaciers valleys", user_id=1, set_id=1, mode="bm25").hits
    target = next(h for h in hits if h.filename == "a.txt")
    # flip the truth only: the index still holds the point (the window before the purge)
    assert engine.store.remove_chunks([target.chunk_id]) == [target.chunk_id]
    collection = engine.read_collection()
    assert collection is not None
    present = engine.index.vectors_present(collection, engine.store.get_chunks([target.chunk_id])[0].bucket_id)
    assert target.chunk_id in present
    for mode in ("dense", "bm25", "hybrid"):
        result = engine.search("glaciers U-shaped valleys", user_id=1, set_id=1, mode=mode)
        assert target.chunk_id not in {h.chunk_id for h in result.hits}
        assert [h.rank for h in result.hits] == list(range(1, len(result.hits) + 1))


def test_ghosts_beyond_the_first_backfill_page_still_leave_top_k_live_hits(engine: Engine, tmp_path: Path) -> None:
    # 30 matching documents and 10 others; the 20 best matches become ghosts (removed in the truth store, points
    # still in the index), more than the first backfill page (top_k + 10) holds: the next page must be read
    files = {f"m{i:02d}.txt": f"Basalt columns form as lava cools, sample {i}." for i in range(30)}
    files |= {f"o{i:02d}.txt": f"Orchards need pollinators, note {i}." for i in range(10)}
    engine.ingest([write(tmp_path / "g", files)])
    ranked = engine.search("basalt columns lava", user_id=1, set_id=1, mode="bm25", top_k=30, group_by="none").hits
    assert len(ranked) == 30
    ghosts = [hit.chunk_id for hit in ranked[:20]]
    assert sorted(engine.store.remove_chunks(ghosts)) == sorted(ghosts)
    for mode in ("bm25", "hybrid"):
        hits = engine.search("basalt columns lava", user_id=1, set_id=1, mode=mode, top_k=5, group_by="none").hits
        assert len(hits) == 5
        assert not {hit.chunk_id for hit in hits} & set(ghosts)


def test_tenants_and_sets_are_isolated(engine: Engine, tmp_path: Path) -> None:
    engine.ingest([write(tmp_path / "u1", {"x.txt": "Saffron is the stigma of a crocus flower."})], user_id=1, set_id=1)
    engine.ingest([write(tmp_path / "u2", {"y.txt": "Saffron rice is yellow."})], user_id=2, set_id=1)
    engine.ingest([write(tmp_path / "s2", {"z.txt": "Saffron costs more than gold by weight."})], user_id=1, set_id=2)
    for user_id, set_id, expected in ((1, 1, "x.txt"), (2, 1, "y.txt"), (1, 2, "z.txt")):
        hits = engine.search("saffron", user_id=user_id, set_id=set_id, mode="hybrid").hits
        assert {h.filename for h in hits} == {expected}
    doc_id = engine.search("saffron", user_id=1, set_id=1).hits[0].doc_id
    assert engine.search("saffron", user_id=1, set_id=1, doc_ids=[doc_id + 100]).hits == ()


def test_chinese_bm25_segments_words() -> None:
    bm25 = Bm25SparseEncoder()
    (doc,) = bm25.encode_documents(["数据治理流程"])
    (query,) = bm25.encode_queries(["数据治理"])
    assert len(doc.indices) == 3  # 数据 / 治理 / 流程, not one token for the whole run
    assert set(query.indices) < set(doc.indices)
    (english,) = bm25.encode_queries(["running parks"])
    (stemmed,) = bm25.encode_queries(["run park"])
    assert english.indices == stemmed.indices


def test_chinese_document_is_found_by_a_partial_phrase(engine: Engine, tmp_path: Path) -> None:
    corpus = write(
        tmp_path / "zh",
        {"gov.txt": "数据治理流程包括数据标准、数据质量和元数据管理。", "cook.txt": "红烧肉需要小火慢炖一个小时。"},
    )
    engine.ingest([corpus])
    assert engine.search("数据质量", user_id=1, set_id=1, mode="bm25").hits[0].filename == "gov.txt"


def test_index_built_with_another_model_is_a_clear_error(tmp_path: Path) -> None:
    data = tmp_path / "data"
    corpus = write(tmp_path / "c", {"a.txt": "Basalt is a volcanic rock."})
    with Engine(Settings(data_dir=data)) as engine:
        engine.ingest([corpus])
    other = Settings(data_dir=data, dense_model=str(tmp_path / "some-other-model"))
    with Engine(other) as engine, pytest.raises(FingerprintMismatchError, match="reindex --into"):
        engine.search("basalt", user_id=1, set_id=1)


def test_an_index_built_with_other_bm25_defaults_keeps_its_parameters(tmp_path: Path) -> None:
    """A release that changes a BM25 default must not break the indexes built before it; a user's setting wins."""
    data = tmp_path / "data"
    corpus = write(tmp_path / "c", {"a.txt": "Basalt is a volcanic rock.", "b.txt": "Granite is an igneous rock."})
    old = Settings(data_dir=data, bm25_k1=1.2, bm25_b=0.75)
    with Engine(old) as engine:
        engine.ingest([corpus])
        before = [
            (h.chunk_id, h.score) for h in engine.search("volcanic basalt", user_id=1, set_id=1, mode="bm25").hits
        ]
    with Engine(Settings(data_dir=data)) as engine:  # today's defaults differ: the collection's own are used
        after = [(h.chunk_id, h.score) for h in engine.search("volcanic basalt", user_id=1, set_id=1, mode="bm25").hits]
        assert engine.ingest([write(corpus, {"c.txt": "Obsidian is volcanic glass."})]).chunks["embedded"] == 1
        assert engine.store.list_index_meta()[0].bm25_config["k1"] == 1.2
    assert after == before
    pinned = Settings(data_dir=data, bm25_k1=1.5)
    with Engine(pinned) as engine, pytest.raises(FingerprintMismatchError, match="reindex --into"):
        engine.search("basalt", user_id=1, set_id=1)


def test_second_process_gets_a_clear_error_naming_the_owner(engine: Engine, tmp_path: Path) -> None:
    engine.ingest([write(tmp_path / "c", {"a.txt": "Quartz is hard."})])
    script = (
        "from ragindex.engine import Engine\n"
        "from ragindex.config.settings import Settings\n"
        "from ragindex.errors import IndexLockedError\n"
        f"engine = Engine(Settings(data_dir={str(engine.settings.data_dir)!r}))\n"
        "try:\n"
        "    engine.search('quartz', user_id=1, set_id=1, mode='bm25')\n"
        "except IndexLockedError as exc:\n"
        "    print('LOCKED', exc.exit_code, exc.message)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.startswith("LOCKED 4")
    assert "by process" in out and "one owner process" in out
    assert IndexLockedError.exit_code == 4


def test_a_kind_enabled_later_is_backfilled_by_the_next_ingest(tmp_path: Path) -> None:
    data = tmp_path / "data"
    corpus = write(tmp_path / "c", {"a.txt": "Obsidian is volcanic glass.", "b.txt": "Granite is coarse."})
    with Engine(Settings(data_dir=data, bm25_enabled=False)) as engine:
        engine.ingest([corpus])
        assert engine.store.chunk_count_by_status("bm25") == {}
    with Engine(Settings(data_dir=data)) as engine:
        report = engine.ingest([corpus])
        # sections (the BM25 unit) exist only with a lexical kind: the documents are re-chunked, nothing re-embedded
        assert report.documents["rechunked"] == 2 and report.chunks["embedded"] == 0
        assert engine.store.chunk_count_by_status("bm25") == {"SUCCESS": 2}
        assert engine.search("obsidian", user_id=1, set_id=1, mode="bm25").hits[0].filename == "a.txt"
        assert engine.verify().ok


def test_a_chunk_whose_claims_keep_going_stale_stops_at_max_attempts(engine: Engine, tmp_path: Path) -> None:
    """A chunk that kills every worker encoding it must not be retried forever by automatic repair."""
    corpus = write(tmp_path / "c", {"a.txt": "Poison pill text."})
    engine.ingest([corpus])
    (chunk,) = engine.store.chunks_of_document(engine.store.list_documents()[0].doc_id)
    engine.store.reset_status([chunk.chunk_id], ["dense"], from_statuses=["SUCCESS"])
    for attempt in (1, 2):
        claim = engine.store.claim("dense", [chunk.chunk_id])  # a worker takes it ... and dies
        assert claim.complete
        assert engine.store.release_stale("dense", -1, max_attempts=2) == [chunk.chunk_id]
        (row,) = engine.store.get_chunks([chunk.chunk_id])
        assert row.attempts == attempt
        assert row.dense_status == ("PENDING" if attempt == 1 else "FAILED")
        assert "went stale" in (row.last_error or "")
    assert engine.store.pending_chunks("dense", max_attempts=2) == []  # automatic retries stop here
    engine.reindex_failed([chunk.chunk_id])  # an explicit reindex still retries it
    assert engine.store.get_chunks([chunk.chunk_id])[0].dense_status == "SUCCESS"


def test_repair_brings_a_document_failed_at_an_index_stage_back_to_success(engine: Engine, tmp_path: Path) -> None:
    from ragindex.pipeline import faults

    corpus = write(tmp_path / "c", {"a.txt": "Mica splits into thin sheets.", "b.txt": "Talc is the softest mineral."})
    faults.arm("dense.after_encode")
    try:
        engine.ingest([corpus])
    finally:
        faults.disarm_all()
    assert {d.status for d in engine.store.list_documents()} == {"FAILED"}
    dry = engine.repair(dry_run=True)
    assert dry.recovered_documents == 0  # nothing is written by a dry run, so nothing recovers yet
    report = engine.repair()
    assert report.recovered_documents == 2
    assert {d.status for d in engine.store.list_documents()} == {"SUCCESS"}
    assert engine.verify().ok
