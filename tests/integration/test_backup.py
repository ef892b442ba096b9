"""``ragindex backup`` and ``restore`` (issue 29): a consistent copy under a search load, restored with 0 embedded."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from faults.faultkit import CHUNK_OVERLAP, CHUNK_SIZE, run_cli, write_corpus
from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import ArchiveError, InputError, SetConflictError
from ragindex.records import Record
from ragindex.transfer.backup import backup, restore

QUERIES = ("honeybee queen workers", "congestion window slow start", "sourdough wild yeast")


def _settings(data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir, chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP, light_encoder="off")


def answers(engine: Engine) -> list[list[tuple[str, float]]]:
    return [
        [(h.chunk_id, round(h.score, 5)) for h in engine.search(q, user_id=1, set_id=1, top_k=10).hits] for q in QUERIES
    ]


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Engine]:
    write_corpus(tmp_path / "corpus")
    with Engine(_settings(tmp_path / "live")) as engine:
        engine.ingest([tmp_path / "corpus"])
        yield engine


def test_a_backup_taken_under_a_search_load_restores_with_nothing_embedded(live: Engine, tmp_path: Path) -> None:
    expected = answers(live)
    stop = threading.Event()
    searched: list[int] = []
    errors: list[BaseException] = []

    def load() -> None:
        done = 0
        try:
            while not stop.is_set():
                assert answers(live) == expected
                done += 1
        except BaseException as exc:  # reported by the test below
            errors.append(exc)
        searched.append(done)

    threads = [threading.Thread(target=load) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        report = backup(live, tmp_path / "b1")
        live.upsert([Record(key="late", text="Written after the backup: not in it.")], user_id=1, set_id=2)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert errors == [] and sum(searched) > 0
    assert report.kind == "sqlite" and report.counts["documents"] == 4 and report.counts["vectors"] > 0
    restored = restore(_settings(tmp_path / "restored"), tmp_path / "b1")
    assert restored.verify_ok and restored.embedded == 0 and restored.indexed["dense"] > 0
    with Engine(_settings(tmp_path / "restored")) as engine:
        assert answers(engine) == expected
        assert len(engine.store.list_documents()) == 4  # the record written after the backup is not in it


def test_restore_refuses_a_used_data_dir_and_a_damaged_backup(live: Engine, tmp_path: Path) -> None:
    backup(live, tmp_path / "b1")
    with pytest.raises(InputError, match="exists and is not empty"):
        backup(live, tmp_path / "b1")
    live.close()
    with pytest.raises(SetConflictError, match="--replace"):
        restore(_settings(tmp_path / "live"), tmp_path / "b1")
    done = restore(_settings(tmp_path / "live"), tmp_path / "b1", replace=True)
    assert done.verify_ok and done.embedded == 0
    database = tmp_path / "b1" / "ragindex.db"
    database.write_bytes(database.read_bytes()[:-1] + b"\x00")
    with pytest.raises(ArchiveError, match="checksum"):
        restore(_settings(tmp_path / "other"), tmp_path / "b1")
    with pytest.raises(ArchiveError, match="not a ragindex backup"):
        restore(_settings(tmp_path / "other"), tmp_path)


def test_the_backup_commands(live: Engine, tmp_path: Path) -> None:
    expected = answers(live)
    taken = run_cli(tmp_path / "live", ["backup", str(tmp_path / "b2"), "--json"])  # beside the live process
    assert taken.returncode == 0, taken.stderr
    assert json.loads(taken.stdout)["kind"] == "sqlite"
    back = run_cli(tmp_path / "restored", ["restore", str(tmp_path / "b2"), "--json"])
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["embedded"] == 0
    with Engine(_settings(tmp_path / "restored")) as engine:
        assert answers(engine) == expected
