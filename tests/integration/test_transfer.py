"""Export and import between backends (issue 29): the same answers, 0 embedded, and every bad archive refused.

Real engines throughout: SQLite + Qdrant Edge, MariaDB + qdrant-client's local mode, PostgreSQL + Edge, the shipped
dense model. The answers compared are the top-10 ids and scores of hybrid searches over two sets (files and records).
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dbkit import throwaway_database
from faults.faultkit import CHUNK_OVERLAP, CHUNK_SIZE, CORPUS, all_chunks, run_cli, write_corpus
from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import ArchiveError, FingerprintMismatchError, SetConflictError
from ragindex.records import Record
from ragindex.store.records import TransferScope
from ragindex.store.states import RunStatus
from ragindex.transfer.archive import ArchiveReader
from ragindex.transfer.export import export_archive
from ragindex.transfer.importer import Importer

QUERIES = ("honeybee queen workers", "congestion window slow start", "sourdough wild yeast", "rivers and estuaries")
RECORDS = [
    Record(key="rivers", text="Rivers carry sediment to their deltas and estuaries.", metadata={"kind": "geo"}),
    Record(key="glaciers", markdown="# Glaciers\n\nGlaciers carve valleys as they move.", metadata={"kind": "ice"}),
]
COMMON: dict[str, Any] = {"chunk_size": CHUNK_SIZE, "chunk_overlap": CHUNK_OVERLAP, "light_encoder": "off"}


def answers(engine: Engine) -> list[list[tuple[str, float]]]:
    """Top-10 (chunk id, score) of every query, in both sets."""
    out = []
    for set_id in (1, 2):
        for query in QUERIES:
            result = engine.search(query, user_id=1, set_id=set_id, top_k=10)
            out.append([(hit.chunk_id, hit.score) for hit in result.hits])
    return out


def assert_same(expected: list[list[tuple[str, float]]], got: list[list[tuple[str, float]]]) -> None:
    assert [[cid for cid, _ in hits] for hits in got] == [[cid for cid, _ in hits] for hits in expected]
    for hits_expected, hits_got in zip(expected, got, strict=True):
        for (_, a), (_, b) in zip(hits_expected, hits_got, strict=True):
            assert b == pytest.approx(a, abs=1e-5)


@pytest.fixture
def source(tmp_path: Path) -> Iterator[tuple[Engine, Path]]:
    """SQLite + Edge with the fault corpus in set 1 and two records in set 2; and its whole export."""
    folder = tmp_path / "corpus"
    write_corpus(folder)
    with Engine(Settings(data_dir=tmp_path / "src", **COMMON)) as engine:
        engine.ingest([folder])
        engine.upsert(RECORDS, user_id=1, set_id=2)
        archive = tmp_path / "all.ragindex"
        export_archive(engine.store, archive, TransferScope())
        yield engine, archive


def _import(settings: Settings, archive: Path, **options: Any) -> tuple[Any, list[list[tuple[str, float]]]]:
    with Engine(settings) as engine:
        report = Importer(engine, archive, **options).run()
        return report, answers(engine)


def test_the_archive_lists_its_parts_counts_and_models(source: tuple[Engine, Path]) -> None:
    engine, archive = source
    with ArchiveReader(archive) as reader:
        reader.verify()
        manifest = reader.manifest
    assert manifest["format_version"] == 1
    assert manifest["fingerprints"] == [engine.dense.fingerprint]
    assert manifest["counts"]["documents"] == len(CORPUS) + len(RECORDS)
    assert manifest["counts"]["embedding_cache"] > 0
    assert {(s["user_id"], s["set_id"]) for s in manifest["sets"]} == {(1, 1), (1, 2)}
    assert sum(p["rows"] for p in manifest["parts"] if p["table"] == "chunks") == manifest["counts"]["chunks"]


@pytest.mark.mysql
def test_a_set_moves_to_mariadb_and_qdrant_local_and_back(source: tuple[Engine, Path], tmp_path: Path) -> None:
    engine, archive = source
    expected = answers(engine)
    with throwaway_database("mysql") as mysql_url:
        target = Settings(
            data_dir=tmp_path / "mysql",
            database_url=mysql_url,
            index_backend="qdrant",
            qdrant_path=tmp_path / "qdrant",
            **COMMON,
        )
        report, got = _import(target, archive)
        assert report.verify_ok and report.embedded == 0 and report.reused > 0
        assert_same(expected, got)
        with Engine(target) as moved:
            back = export_archive(moved.store, tmp_path / "back.ragindex", TransferScope())
    with ArchiveReader(archive) as reader:
        assert back.sets == reader.manifest["sets"]  # the same documents, chunk ids and contents
    report, got = _import(Settings(data_dir=tmp_path / "home", **COMMON), tmp_path / "back.ragindex")
    assert report.verify_ok and report.embedded == 0
    assert_same(expected, got)


@pytest.mark.postgres
def test_a_set_moves_to_postgres_and_edge_and_back(source: tuple[Engine, Path], tmp_path: Path) -> None:
    engine, _ = source
    expected = answers(engine)
    one_set = export_archive(engine.store, tmp_path / "set2.ragindex", TransferScope(user_id=1, set_id=2))
    assert [(s["user_id"], s["set_id"]) for s in one_set.sets] == [(1, 2)]
    everything = tmp_path / "everything.ragindex"
    export_archive(engine.store, everything, TransferScope(user_id=1), compress=True)  # gzip'd text parts
    with throwaway_database("postgres") as postgres_url:
        target = Settings(data_dir=tmp_path / "pg", database_url=postgres_url, **COMMON)
        report, got = _import(target, everything)
        assert report.verify_ok and report.embedded == 0
        assert_same(expected, got)
        with Engine(target) as moved:
            export_archive(moved.store, tmp_path / "back.ragindex", TransferScope())
    report, got = _import(Settings(data_dir=tmp_path / "home", **COMMON), tmp_path / "back.ragindex")
    assert report.verify_ok and report.embedded == 0
    assert_same(expected, got)


def _rewrite(archive: Path, out: Path, change: Any) -> Path:
    """A copy of ``archive`` with ``change(name, bytes) -> bytes`` applied to each member."""
    with tarfile.open(archive, "r:") as src, tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as dst:
        for member in src.getmembers():
            handle = src.extractfile(member)
            assert handle is not None
            data = change(member.name, handle.read())
            info = tarfile.TarInfo(member.name)
            info.size = len(data)
            dst.addfile(info, io.BytesIO(data))
    return out


def _nothing_written(settings: Settings) -> None:
    with Engine(settings) as engine:
        assert engine.store.list_documents() == []
        assert engine.store.list_index_meta() == []


def test_bad_archives_are_refused_with_nothing_written(source: tuple[Engine, Path], tmp_path: Path) -> None:
    _, archive = source
    target = Settings(data_dir=tmp_path / "target", **COMMON)

    def newer(name: str, data: bytes) -> bytes:
        if name in ("ragindex-export.json", "manifest.json"):
            return json.dumps({**json.loads(data), "format_version": 99}).encode()
        return data

    def damaged(name: str, data: bytes) -> bytes:
        if name.endswith("-chunks.jsonl.gz"):
            return gzip.compress(gzip.decompress(data).replace(b"Honeybee", b"Hornet"))
        if name.endswith("-chunks.jsonl"):
            return data.replace(b"Honeybee", b"Hornet")
        return data

    cases = [
        (_rewrite(archive, tmp_path / "newer.ragindex", newer), ArchiveError, "format version 99"),
        (_rewrite(archive, tmp_path / "damaged.ragindex", damaged), ArchiveError, "checksum mismatch"),
    ]
    for bad, error, words in cases:
        with Engine(target) as engine, pytest.raises(error, match=words):
            Importer(engine, bad).run()
        _nothing_written(target)
    other_model = Settings(data_dir=tmp_path / "target", dense_query_prompt="query: ", **COMMON)
    with Engine(other_model) as engine, pytest.raises(FingerprintMismatchError, match="--reembed"):
        Importer(engine, archive).run()
    _nothing_written(target)


def test_a_set_with_other_content_is_refused_unless_replace(source: tuple[Engine, Path], tmp_path: Path) -> None:
    engine, archive = source
    expected = answers(engine)
    target = Settings(data_dir=tmp_path / "target", **COMMON)
    with Engine(target) as other:
        other.upsert([Record(key="other", text="A different document about volcanoes.")], user_id=1, set_id=2)
        with pytest.raises(SetConflictError, match="--replace"):
            Importer(other, archive).run()
        assert [d.source_uri for d in other.store.list_documents(user_id=1)] == ["other"]
        report = Importer(other, archive, replace=True).run()
        assert report.verify_ok and report.embedded == 0
        assert {s["how"] for s in report.sets} == {"new", "replaced"}
        assert_same(expected, answers(other))
    # the source itself holds the archive's content: accepted, and nothing changes
    report = Importer(engine, archive).run()
    assert report.verify_ok and {s["how"] for s in report.sets} == {"same content"}
    assert_same(expected, answers(engine))


def test_reembed_takes_an_archive_of_another_model_and_embeds_every_chunk_again(
    source: tuple[Engine, Path], tmp_path: Path
) -> None:
    _, archive = source
    other_model = Settings(data_dir=tmp_path / "target", dense_query_prompt="query: ", **COMMON)
    with Engine(other_model) as engine:
        report = Importer(engine, archive, reembed=True).run()
        assert report.verify_ok and report.reused == 0
        dense_units = {row.content_hash for row in all_chunks(engine, unit=None) if row.dense_status is not None}
        assert report.embedded == len(dense_units) > 0  # the archive's vectors (another cache key) are not used
        assert {m.dense_fingerprint for m in engine.store.list_index_meta()} == {engine.dense.fingerprint}
        hits = engine.search("honeybee queen workers", user_id=1, set_id=1, top_k=3).hits
        assert "queen" in hits[0].text.lower()
        again = Importer(engine, archive, reembed=True).run()  # a rerun: the same content, nothing embedded
        assert again.verify_ok and again.embedded == 0 and {s["how"] for s in again.sets} == {"resumed"}


def test_a_document_exported_mid_ingest_is_imported_finished(source: tuple[Engine, Path], tmp_path: Path) -> None:
    engine, _ = source
    folder = tmp_path / "corpus"
    doc = next(d for d in engine.store.list_documents(user_id=1, set_id=1))
    engine.store.set_document_status(doc.doc_id, RunStatus.PROCESSING)  # its rows written, its copies not yet
    archive = tmp_path / "mid-ingest.ragindex"
    export_archive(engine.store, archive, TransferScope())
    with Engine(Settings(data_dir=tmp_path / "target", **COMMON)) as target:
        report = Importer(target, archive).run()
        assert report.verify_ok and report.rows["documents_settled"] == 1
        assert {d.status for d in target.store.list_documents()} == {RunStatus.SUCCESS}
        again = target.ingest([folder])  # the files did not change: nothing parsed again, nothing embedded
        assert again.documents["unchanged"] == len(CORPUS) and again.chunks["embedded"] == 0


def test_the_export_is_one_point_in_time(source: tuple[Engine, Path]) -> None:
    engine, _ = source
    with engine.store.snapshot(TransferScope()) as snap:
        documents = list(snap.rows("documents"))
        engine.upsert([Record(key="late", text="Written while the export ran: not in it.")], user_id=1, set_id=2)
        chunks = list(snap.rows("chunks"))
    doc_ids = {row[0] for row in documents}
    assert len(documents) == len(CORPUS) + len(RECORDS)
    assert all(row[1] in doc_ids for row in chunks)  # chunks.doc_id: every chunk's document is in the snapshot
    assert len(engine.store.list_documents()) == len(documents) + 1


@pytest.mark.postgres
def test_migrate_moves_everything_while_the_source_holds_its_index(source: tuple[Engine, Path], tmp_path: Path) -> None:
    engine, _ = source  # this process owns the source's Edge shards: the migrate command only reads its truth store
    expected = answers(engine)
    with throwaway_database("postgres") as postgres_url:
        args = ["migrate", "--to-database", postgres_url, "--to-index", "qdrant", "--to-qdrant-path"]
        done = run_cli(tmp_path / "src", [*args, str(tmp_path / "qdrant"), "--json"])
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["ok"] and report["embedded"] == 0
        assert report["before"] == report["after"]
        assert [(s["user_id"], s["set_id"]) for s in report["after"]] == [(1, 1), (1, 2)]
        target = Settings(
            data_dir=tmp_path / "unused",
            database_url=postgres_url,
            index_backend="qdrant",
            qdrant_path=tmp_path / "qdrant",
            **COMMON,
        )
        with Engine(target) as moved:
            assert_same(expected, answers(moved))
        again = run_cli(tmp_path / "src", [*args, str(tmp_path / "qdrant"), "--json"])
        assert again.returncode == 0, again.stderr  # the target holds the same content: accepted, nothing changes


def test_migrate_refuses_a_target_with_other_content_unless_replace(
    source: tuple[Engine, Path], tmp_path: Path
) -> None:
    engine, _ = source
    expected = answers(engine)
    target = Settings(data_dir=tmp_path / "target", **COMMON)
    with Engine(target) as other:
        other.upsert([Record(key="other", text="A different document about volcanoes.")], user_id=1, set_id=2)
    args = ["migrate", "--to-database", target.resolved_database_url, "--to-data-dir", str(target.data_dir), "--json"]
    refused = run_cli(tmp_path / "src", args)
    assert refused.returncode == SetConflictError.exit_code, refused.stderr
    assert "--replace" in refused.stderr
    with Engine(target) as other:
        assert [d.source_uri for d in other.store.list_documents()] == ["other"]
    done = run_cli(tmp_path / "src", [*args, "--replace"])
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["embedded"] == 0 and report["before"] == report["after"]
    with Engine(target) as moved:
        assert "other" not in {d.source_uri for d in moved.store.list_documents()}
        assert_same(expected, answers(moved))
