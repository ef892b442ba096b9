"""The CLI as ``pip install ragindex`` (no extra) gives it: every extra's modules are blocked in the process and its
parser children (a ``sitecustomize`` sets ``sys.modules[name] = None``), and ingest and search still work on the
embedded default while what needs an extra says which one. ``scripts/wheel-smoke.sh`` checks the real wheel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ragindex
from ragindex._optional import EXTRAS

pytestmark = pytest.mark.integration

SRC = str(Path(ragindex.__file__).parents[1])
EXAMPLES = Path(__file__).parents[2] / "examples"
BLOCKED = sorted({m for modules in EXTRAS.values() for m in modules} | {"redis", "pika"})


@pytest.fixture
def lean_env(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(f"import sys\nsys.modules.update(dict.fromkeys({BLOCKED!r}))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGINDEX_")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(site), SRC]),
        RAGINDEX_DATA_DIR=str(tmp_path / "data"),
        RAGINDEX_LIGHT_ENCODER="off",
        OPENBLAS_NUM_THREADS="1",
    )
    return env


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from ragindex.cli import main; sys.argv[0] = 'ragindex'; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )


def test_the_block_holds(lean_env: dict[str, str]) -> None:
    probe = subprocess.run(
        [sys.executable, "-c", "import fastapi"], env=lean_env, capture_output=True, text=True, check=False
    )
    assert probe.returncode == 1 and "ModuleNotFoundError" in probe.stderr


def test_ingest_and_search_without_extras_and_the_extras_named(lean_env: dict[str, str], tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("photosynthesis.md", "history_of_printing.txt", "bicycle_maintenance.docx"):
        (corpus / name).write_bytes((EXAMPLES / name).read_bytes())

    ingest = run(lean_env, "ingest", str(corpus), "--json")
    assert ingest.returncode == 8, ingest.stderr  # partial: the docx alone failed
    report = json.loads(ingest.stdout)
    assert report["documents"]["added"] == 2 and report["documents"]["failed"] == 1
    (failure,) = report["failures"]
    assert failure["source"].endswith("bicycle_maintenance.docx")
    assert "needs the 'parsing' extra" in failure["error"] and "pip install 'ragindex[parsing]'" in failure["error"]

    search = run(lean_env, "search", "how do plants turn light into sugar", "--top-k", "2", "--json")
    assert search.returncode == 0, search.stderr
    assert json.loads(search.stdout)["hits"][0]["filename"] == "photosynthesis.md"

    for args, extra in ((("serve",), "service"), (("worker",), "workers"), (("encoder-server",), "service")):
        refused = run(lean_env, *args)
        assert refused.returncode == 3, (args, refused.stderr)
        assert f"pip install 'ragindex[{extra}]'" in refused.stderr, (args, refused.stderr)
        assert "Traceback" not in refused.stderr

    mysql = {"RAGINDEX_DATABASE_URL": "mysql+pymysql://root@127.0.0.1:3306/x"}
    qdrant = {"RAGINDEX_INDEX_BACKEND": "qdrant", "RAGINDEX_QDRANT_URL": "http://127.0.0.1:6333"}
    for settings, args, extra in ((mysql, ("status",), "mysql"), (qdrant, ("verify",), "server")):
        refused = run({**lean_env, **settings}, *args)
        assert refused.returncode == 3 and f"pip install 'ragindex[{extra}]'" in refused.stderr, refused.stderr
