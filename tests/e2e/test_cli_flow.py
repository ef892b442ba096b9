"""The end-to-end behaviour of issue 2 through the real CLI: ingest, rank, no-op, change one file, delete one file.

Runs on the real engine: SQLite, Qdrant Edge, the shipped all-MiniLM-L6-v2 model.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragindex.cli import commands  # noqa: F401 - registers the commands
from ragindex.cli.app import app

pytestmark = pytest.mark.integration

DOCS = {
    "volcanoes.md": (
        "# Volcanoes\n\nA volcano is an opening in the crust where molten rock, ash and gases escape.\n\n"
        "## Eruptions\n\nMagma rises because it is less dense than the surrounding rock. Explosive eruptions "
        "happen when gas-rich, viscous magma fragments; effusive eruptions pour out runny basalt lava.\n\n"
        "## Hazards\n\nPyroclastic flows, lahars and ash fall are the deadliest volcanic hazards."
    ),
    "espresso.txt": (
        "Espresso is brewed by forcing hot water at about nine bars of pressure through finely ground coffee.\n\n"
        "A standard shot uses eighteen grams of coffee and takes twenty-five to thirty seconds. Crema, the "
        "golden foam on top, comes from emulsified oils and carbon dioxide.\n\n"
        "Grind size is the main lever: finer grounds slow the flow and increase extraction.\n\n"
        "Milk drinks start from a shot: a cappuccino adds equal parts steamed milk and foam, a latte mostly "
        "steamed milk with a thin layer of microfoam, and a flat white a double shot with velvety milk.\n\n"
        "Water quality matters more than most people think. Very soft water tastes flat and sour, very hard "
        "water scales the machine and mutes acidity; around 50 to 100 ppm of hardness is a common target.\n\n"
        "Cleaning keeps the taste clean: backflush the group head with detergent weekly and purge the steam "
        "wand after every use so milk proteins never dry inside it."
    ),
    "tides.txt": (
        "Ocean tides are caused mainly by the gravitational pull of the Moon and, to a lesser degree, the Sun.\n\n"
        "Spring tides, with the largest range, occur at new and full moon, when Sun and Moon line up. Neap tides "
        "occur at the quarter moons.\n\nMost coasts see two high tides and two low tides every lunar day."
    ),
}


def cli(*args: str, data_dir: Path) -> tuple[int, Any]:
    result = CliRunner().invoke(app, ["--data-dir", str(data_dir), *args])
    try:
        payload = json.loads(result.stdout) if "--json" in args and result.stdout.strip() else result.stdout
    except json.JSONDecodeError:
        payload = result.stdout
    return result.exit_code, payload


@pytest.fixture
def corpus_files() -> dict[str, str]:
    """``corpus`` (tests/conftest.py) holds these: longer documents, several chunks each."""
    return dict(DOCS)


def top_filename(data_dir: Path, query: str, mode: str = "hybrid") -> str | None:
    code, out = cli("search", query, "--mode", mode, "--json", data_dir=data_dir)
    assert code == 0, out
    return out["hits"][0]["filename"] if out["hits"] else None


def test_ingest_search_noop_change_delete_verify(tmp_path: Path, corpus: Path) -> None:
    data = tmp_path / "data"

    code, first = cli("ingest", str(corpus), "--json", data_dir=data)
    assert code == 0, first
    assert first["documents"]["added"] == 3
    assert first["chunks"]["embedded"] == first["chunks"]["total"] > 0
    assert first["chunks"]["failed"] == 0

    for mode in ("dense", "bm25", "hybrid"):
        assert top_filename(data, "what causes spring tides", mode) == "tides.txt"
    assert top_filename(data, "how long should an espresso shot take") == "espresso.txt"
    code, hits = cli("search", "pyroclastic flows", "--json", data_dir=data)
    hit = hits["hits"][0]
    assert hit["filename"] == "volcanoes.md" and hit["section"] == "Volcanoes"
    assert set(hit["scores"]) == {"dense", "bm25"} and hit["scores"]["bm25"]["rank"] == 1
    assert hit["start_line"] >= 1 and "Pyroclastic" in hit["text"]

    code, noop = cli("ingest", str(corpus), "--json", data_dir=data)
    assert code == 0
    assert noop["documents"]["unchanged"] == 3
    assert noop["chunks"] == {"total": 0, "sections": 0, "embedded": 0, "reused": 0, "removed": 0, "failed": 0}

    # change one paragraph of one file: only its new chunks are embedded
    changed = DOCS["espresso.txt"].replace("eighteen grams", "twenty grams of a darker roast")
    (corpus / "espresso.txt").write_text(changed, encoding="utf-8")
    code, third = cli("ingest", str(corpus), "--json", data_dir=data)
    assert third["documents"] == {**third["documents"], "changed": 1, "unchanged": 2}
    assert 0 < third["chunks"]["embedded"] < third["chunks"]["total"] + 1
    assert third["chunks"]["embedded"] == third["chunks"]["total"] - third["chunks"]["reused"]
    assert third["chunks"]["reused"] >= 1
    code, out = cli("search", "darker roast", "--mode", "bm25", "--json", data_dir=data)
    assert "darker roast" in out["hits"][0]["text"]

    # delete one file: its chunks leave search and the index
    (corpus / "volcanoes.md").unlink()
    code, fourth = cli("ingest", str(corpus), "--json", data_dir=data)
    assert fourth["documents"]["removed"] == 1 and fourth["chunks"]["removed"] > 0
    code, out = cli("search", "pyroclastic flows lahars volcano magma", "--json", data_dir=data)
    assert all(h["filename"] != "volcanoes.md" for h in out["hits"])

    code, report = cli("verify", "--json", data_dir=data)
    assert code == 0 and report["ok"], report
    bucket = report["buckets"][0]
    assert bucket["expected_points"] == bucket["index_points"] > 0

    code, status = cli("status", "--json", data_dir=data)
    assert status["sets"][0]["documents"] == {"SUCCESS": 2, "REMOVED": 1}


def test_noop_run_loads_no_model_and_parses_nothing(tmp_path: Path, corpus: Path) -> None:
    data = tmp_path / "data"
    assert cli("ingest", str(corpus), "--json", data_dir=data)[0] == 0
    script = (
        "import sys, json\n"
        "from ragindex.engine import Engine\n"
        "from ragindex.config.settings import Settings\n"
        f"engine = Engine(Settings(data_dir={str(data)!r}))\n"
        f"report = engine.ingest([{str(corpus)!r}])\n"
        "engine.close()\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'pdfplumber', 'qdrant_edge') if m in sys.modules]\n"
        "print(json.dumps({'heavy': heavy, 'report': report.to_dict()}))\n"
    )
    out = json.loads(subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout)
    assert out["heavy"] == []
    assert out["report"]["documents"]["unchanged"] == 3 and out["report"]["chunks"]["total"] == 0


CLI_IN_SUBPROCESS = (
    "import json, os, sys\n"
    "from ragindex.cli import main\n"
    "from ragindex.encoders import query_warmup\n"
    "sys.argv = ['ragindex', *json.loads(sys.argv[1])]\n"
    "warm_up = query_warmup.QueryWarmUp.__init__\n"
    "before_warm_up = []\n"
    "def started(self, build):\n"  # what the process had imported when the query encoder's warm-up started
    "    before_warm_up.extend(m for m in ('ragindex.engine', 'sqlalchemy') if m in sys.modules)\n"
    "    warm_up(self, build)\n"
    "query_warmup.QueryWarmUp.__init__ = started\n"
    "def report(code):\n"
    "    heavy = [m for m in ('torch', 'sentence_transformers', 'transformers', 'sqlalchemy') if m in sys.modules]\n"
    "    out = {'code': code, 'heavy': heavy, 'before_warm_up': before_warm_up}\n"
    "    sys.stderr.write('\\n' + json.dumps(out) + '\\n')\n"
    "    sys.stderr.flush()\n"
    "_exit = os._exit\n"
    "def exiting(code):\n"  # a search leaves the index open and ends with os._exit (cli.app.leave)
    "    report(code)\n"
    "    _exit(code)\n"
    "os._exit = exiting\n"
    "try:\n"
    "    main()\n"
    "    code = 0\n"
    "except SystemExit as exc:\n"
    "    code = exc.code\n"
    "report(code)\n"
)


def cli_subprocess(*args: str) -> tuple[Any, dict[str, Any]]:
    """Run the CLI in a fresh process: (its JSON output, {'code', 'heavy': the heavy modules it imported,
    'before_warm_up': the engine and SQLAlchemy, if imported when a query encoder's warm-up started})."""
    done = subprocess.run(
        [sys.executable, "-c", CLI_IN_SUBPROCESS, json.dumps(args)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout), json.loads(done.stderr.strip().splitlines()[-1])


def test_search_and_a_small_reingest_never_import_torch(tmp_path: Path, corpus: Path) -> None:
    """The light encoder (ONNX Runtime, exported into the session's ONNX cache by the first ingest) does both.

    A one-shot search also leaves SQLAlchemy out (its store is SQLite through the standard library), and starts
    building its query encoder before it imports the engine.
    """
    data = tmp_path / "data"
    assert cli("ingest", str(corpus), "--json", data_dir=data)[0] == 0
    out, proc = cli_subprocess("--data-dir", str(data), "search", "spring and neap tides", "--mode", "dense", "--json")
    assert proc == {"code": 0, "heavy": [], "before_warm_up": []}
    assert out["hits"][0]["filename"] == "tides.txt"
    (corpus / "tides.txt").write_text(DOCS["tides.txt"] + "\n\nTidal bores run upriver where a funnel-shaped estuary")
    report, proc = cli_subprocess("--data-dir", str(data), "ingest", str(corpus), "--json")
    assert proc == {"code": 0, "heavy": ["sqlalchemy"], "before_warm_up": []}
    assert report["documents"]["changed"] == 1 and report["chunks"]["embedded"] >= 1
    out, proc = cli_subprocess("--data-dir", str(data), "search", "tidal bore estuary", "--mode", "hybrid", "--json")
    assert proc == {"code": 0, "heavy": [], "before_warm_up": []}
    assert out["hits"][0]["filename"] == "tides.txt"


def test_an_int8_ingest_of_any_size_never_imports_torch(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RAGINDEX_DENSE_PRECISION=int8: every chunk through ONNX Runtime's int8 copy, even past the light encoder's
    size limit (0 here: every ingest would be a bulk one for torch), and its vectors keyed by their precision."""
    monkeypatch.setenv("RAGINDEX_DENSE_PRECISION", "int8")
    monkeypatch.setenv("RAGINDEX_LIGHT_ENCODER_MAX_BATCH", "0")
    data = tmp_path / "data"
    report, proc = cli_subprocess("--data-dir", str(data), "ingest", str(corpus), "--json")
    assert proc == {"code": 0, "heavy": ["sqlalchemy"], "before_warm_up": []}
    assert report["chunks"]["embedded"] >= len(DOCS)
    with sqlite3.connect(data / "ragindex.db") as db:
        keys = {key for (key,) in db.execute("SELECT DISTINCT model_key FROM embedding_cache")}
    assert keys == {"st:sentence-transformers/all-MiniLM-L6-v2|int8"}
    out, proc = cli_subprocess("--data-dir", str(data), "search", "spring and neap tides", "--mode", "dense", "--json")
    assert proc["code"] == 0 and "torch" not in proc["heavy"]
    assert out["hits"][0]["filename"] == "tides.txt"


RAGINDEX = [sys.executable, "-c", "from ragindex.cli import main; main()"]


def test_one_shot_searches_started_together_all_answer(tmp_path: Path, corpus: Path) -> None:
    """The embedded index has one owner process at a time: the others wait for it (RAGINDEX_INDEX_LOCK_WAIT, 5 s
    by default) instead of failing with exit code 4, as two of three did."""
    data = tmp_path / "data"
    assert cli("ingest", str(corpus), "--json", data_dir=data)[0] == 0
    query = ["--data-dir", str(data), "search", "spring and neap tides", "--json"]
    procs = [subprocess.Popen([*RAGINDEX, *query], stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    outcomes = [(*proc.communicate(timeout=120), proc.returncode) for proc in procs]
    for out, err, code in outcomes:
        assert code == 0, err.decode()
        assert json.loads(out)["hits"][0]["filename"] == "tides.txt"


def test_a_search_that_waited_in_vain_names_the_holder_and_the_wait(tmp_path: Path, corpus: Path) -> None:
    data = tmp_path / "data"
    assert cli("ingest", str(corpus), "--json", data_dir=data)[0] == 0
    hold = (
        "import sys, time\n"
        "from ragindex.config import Settings\n"
        "from ragindex.engine import Engine\n"
        "engine = Engine(Settings(data_dir=sys.argv[1]))\n"
        "engine.search('tides', user_id=1, set_id=1)\n"  # opens the index: the lock is held from here
        "print('holding', flush=True)\n"
        "time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", hold, str(data)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        env = {**os.environ, "RAGINDEX_INDEX_LOCK_WAIT": "1"}
        done = subprocess.run([*RAGINDEX, "--data-dir", str(data), "search", "tides"], capture_output=True, env=env)
        message = done.stderr.decode()
        assert done.returncode == 4, message
        assert f"in use by process {holder.pid}" in message and "(waited 1 s)" in message, message
    finally:
        holder.kill()
        holder.communicate()


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["search", "x", "--user-id", "0"], "user_id"),
        (["search", "x", "--set-id", "-3"], "set_id"),
        (["search", "x", "--top-k", "0"], "top_k"),
        (["search", "x", "--mode", "dense", "--score-threshold", "1.5"], "score_threshold"),
        (["search", "x", "--mode", "fuzzy"], "mode"),
        (["search", "x", "--fusion", "max"], "fusion"),
        (["ingest", "does/not/exist"], "does not exist"),
        (["ingest", ".", "--user-id", "0"], "user_id"),
    ],
)
def test_bad_input_is_exit_code_2_naming_the_field(tmp_path: Path, args: list[str], field: str) -> None:
    result = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "d"), *args])
    assert result.exit_code == 2, result.output
    assert field in result.output


def test_empty_query_returns_no_hits_without_encoding(tmp_path: Path, corpus: Path) -> None:
    data = tmp_path / "data"
    cli("ingest", str(corpus), "--json", data_dir=data)
    code, out = cli("search", "   ", "--json", data_dir=data)
    assert code == 0 and out["hits"] == [] and "encode" not in out["latency_ms"]


def test_bad_files_are_recorded_and_the_run_goes_on(tmp_path: Path, corpus: Path) -> None:
    data = tmp_path / "data"
    (corpus / "broken.pdf").write_bytes(b"%PDF-1.4\n" + bytes(range(256)) * 4)
    (corpus / "empty.txt").write_bytes(b"")
    (corpus / "latin1.txt").write_bytes("Caf\xe9 au lait with croissants".encode("latin-1"))
    code, out = cli("ingest", str(corpus), "--json", data_dir=data)
    assert code == 8  # partial: the failed file is listed, the others are indexed
    assert out["documents"]["failed"] == 1 and out["documents"]["skipped"] == 1
    assert out["failures"][0]["source"].endswith("broken.pdf")
    assert any("UTF-8" in note for note in out["notes"])
    assert top_filename(data, "croissants", "bm25") == "latin1.txt"
    code, status = cli("status", "--json", data_dir=data)
    assert status["sets"][0]["documents"]["FAILED"] == 1


def test_file_over_the_size_limit_is_refused(tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGINDEX_MAX_FILE_BYTES", "100")
    code, out = cli("ingest", str(corpus), "--json", data_dir=tmp_path / "data")
    assert code == 8 and out["documents"]["failed"] == 3
    assert "over the limit of 100" in out["failures"][0]["error"]
