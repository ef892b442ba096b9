"""An import killed for real at every stage boundary converges when the same command runs again (issue 29).

The source deployment (the fault corpus in set 1, two records in set 2) is exported once per module; each case
runs the real ``ragindex import`` with ``RAGINDEX_FAILPOINTS="import.after_<stage>=kill"`` (it must die by
SIGKILL), then the same command without a failpoint, which must finish with 0 vectors embedded: the target then
holds exactly the archive's sets (the same documents, chunk ids and contents) and verify is clean.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from faultkit import CORPUS, run_cli, settings, write_corpus

from ragindex.engine import Engine
from ragindex.pipeline import faults
from ragindex.records import Record
from ragindex.store.records import TransferScope
from ragindex.transfer.export import export_archive

pytestmark = pytest.mark.integration

IMPORT_POINTS = [p for p in faults.POINTS if p.startswith("import.")]


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[dict[str, object]]]]:
    root = tmp_path_factory.mktemp("source")
    write_corpus(root / "corpus")
    with Engine(settings(root / "data")) as engine:
        engine.ingest([root / "corpus"])
        engine.upsert([Record(key="k1", text="Rivers carry sediment to their deltas.")], user_id=1, set_id=2)
        report = export_archive(engine.store, root / "all.ragindex", TransferScope())
    yield root / "all.ragindex", report.sets


def test_every_import_stage_has_a_failpoint() -> None:
    from ragindex.transfer.importer import STAGES

    assert [f"import.after_{stage}" for stage in STAGES] == IMPORT_POINTS


@pytest.mark.parametrize("point", IMPORT_POINTS)
def test_an_import_killed_at_a_stage_boundary_converges(
    point: str, archive: tuple[Path, list[dict[str, object]]], tmp_path: Path
) -> None:
    path, sets = archive
    target = tmp_path / "target"
    killed = run_cli(target, ["import", str(path), "--json"], failpoints=f"{point}=kill")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    again = run_cli(target, ["import", str(path), "--json"])
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["ok"] and report["embedded"] == 0
    with Engine(settings(target)) as engine:
        assert engine.verify().ok
        for entry in sets:
            digest = engine.store.set_digest(int(entry["user_id"]), int(entry["set_id"]))  # type: ignore[call-overload]
            assert (digest.documents, digest.chunks, digest.digest) == (
                entry["documents"],
                entry["chunks"],
                entry["digest"],
            )
        assert len(engine.store.list_documents()) == len(CORPUS) + 1
