"""Records and filters through the real ``ragindex`` command: ``ingest --as-records``, ``--metadata``,
``delete --key``, ``search --filter``.

Every call is a ``ragindex`` process (this checkout's package) on the embedded default: SQLite, Qdrant Edge and the
shipped model. The records file is a small BEIR-layout ``corpus.jsonl`` written here, with bad lines among the good.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ragindex
from ragindex.errors import EXIT_PARTIAL, InputError, NotFoundError
from ragindex.filters import FilterError
from ragindex.records import RecordError

pytestmark = pytest.mark.integration

CLI = str(Path(sys.executable).with_name("ragindex"))
SRC = str(Path(ragindex.__file__).parents[1])

BEIR = [
    {"_id": "bees", "title": "Honeybees", "text": "A honeybee colony has one queen and thousands of workers.",
     "year": 2019, "lang": "en", "metadata": {"url": "https://example.org/bees"}},
    {"_id": "tcp", "title": "TCP", "text": "TCP congestion control grows its window by slow start.",
     "year": 2021, "lang": "en", "metadata": {}},
    "this line is not JSON",
    {"_id": "bienen", "title": "Bienen", "text": "Ein Bienenvolk hat eine Königin und viele Arbeiterinnen.",
     "year": 2023, "lang": "de", "metadata": {}},
    {"title": "no key", "text": "a record without its _id"},
    {"_id": "bees", "title": "again", "text": "the same key twice in one file"},
    {"_id": 42, "title": "Tides", "text": "Spring tides come at new and full moon, when the Sun and Moon line up.",
     "year": 2024, "lang": "en"},
]  # fmt: skip


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    lines = [row if isinstance(row, str) else json.dumps(row, ensure_ascii=False) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(data: Path, *args: str) -> tuple[int, Any, str]:
    """``ragindex ARGS`` in a clean environment: exit code, stdout (parsed with --json), stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGINDEX_")}
    env.update(RAGINDEX_DATA_DIR=str(data), PYTHONPATH=SRC, OPENBLAS_NUM_THREADS="1")
    if "RAGINDEX_ONNX_CACHE_DIR" in os.environ:
        env["RAGINDEX_ONNX_CACHE_DIR"] = os.environ["RAGINDEX_ONNX_CACHE_DIR"]
    done = subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    out: Any = done.stdout
    if "--json" in args and done.stdout.strip():
        out = json.loads(done.stdout)
    return done.returncode, out, done.stderr


def keys_found(data: Path, query: str, filter_: dict[str, Any] | None = None, *more: str) -> list[str]:
    args = ["search", query, "--top-k", "10", "--json", *more]
    if filter_ is not None:
        args += ["--filter", json.dumps(filter_)]
    code, out, err = run(data, *args)
    assert code == 0, err
    return [hit["source"] for hit in out["hits"]]


@pytest.fixture(scope="module")
def records_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """A data dir holding the BEIR file's records (ingested once), the file, and the first ingest's report."""
    root = tmp_path_factory.mktemp("records-cli")
    corpus = write_jsonl(root / "corpus.jsonl", BEIR)
    data = root / "data"
    code, report, err = run(data, "ingest", str(corpus), "--as-records", "--json")
    assert code == EXIT_PARTIAL, err
    return data, corpus, report


def test_a_beir_corpus_is_upserted_under_its_ids_and_bad_lines_fail_alone(
    records_dir: tuple[Path, Path, dict[str, Any]],
) -> None:
    data, corpus, report = records_dir
    assert report["documents"]["added"] == 4 and report["documents"]["failed"] == 3
    assert report["chunks"]["embedded"] == report["chunks"]["total"] > 0
    by_line = {f["source"]: f for f in report["failures"]}
    assert set(by_line) == {f"{corpus}#line {n}" for n in (3, 5, 6)}
    assert all(f["path"] == str(corpus) and f["stage"] == "LOADING" for f in report["failures"])
    assert "line 3: invalid JSON" in by_line[f"{corpus}#line 3"]["error"]
    assert "no record key (field '_id')" in by_line[f"{corpus}#line 5"]["error"]
    assert "duplicate record key 'bees' (first at line 1)" in by_line[f"{corpus}#line 6"]["error"]

    # documents are named by the records' keys (a number's key is its JSON spelling), not <path>#<id>
    assert set(keys_found(data, "bees tides congestion")) == {"bees", "tcp", "bienen", "42"}
    # metadata: every other scalar field (the nested BEIR "metadata" object is left out)
    assert keys_found(data, "honeybee colony queen", {"lang": "de"}) == ["bienen"]
    assert set(keys_found(data, "honeybee colony queen", {"year": {"$gte": 2021}})) == {"tcp", "bienen", "42"}
    code, _, err = run(data, "search", "bees", "--filter", '{"metadata": {"$exists": true}}')
    assert code == 2 and "unknown field 'metadata'" in err

    code, again, err = run(data, "ingest", str(corpus), "--key-field", "_id", "--json")  # --key-field: records too
    assert code == EXIT_PARTIAL, err
    assert again["documents"]["unchanged"] == 4 and again["documents"]["failed"] == 3
    assert again["chunks"]["embedded"] == 0


def test_field_options_pick_key_text_title_and_metadata(tmp_path: Path) -> None:
    rows = [
        {"id": "a1", "name": "Espresso", "body": "Espresso is brewed at nine bars.", "author": "ann", "year": 2020,
         "lang": "it"},
        {"id": "a2", "name": "Tea", "body": "Green tea steeps at eighty degrees.", "author": "bob", "year": 2022,
         "lang": "zh"},
    ]  # fmt: skip
    corpus = write_jsonl(tmp_path / "notes.ndjson", rows)
    data = tmp_path / "data"
    code, report, err = run(
        data,
        "ingest",
        str(corpus),
        "--key-field",
        "id",
        "--text-field",
        "body",
        "--title-field",
        "name",
        "--metadata-fields",
        "author,year",
        "--metadata",
        "team=drinks",
        "--json",
    )
    assert code == 0, err
    assert report["documents"]["added"] == 2 and report["failures"] == []
    assert keys_found(data, "how hot for tea", {"author": "bob", "team": "drinks"}) == ["a2"]
    assert keys_found(data, "coffee", {"year": {"$lt": 2021}}) == ["a1"]
    code, _, err = run(data, "search", "tea", "--filter", '{"lang": "zh"}')  # not among --metadata-fields
    assert code == 2 and "unknown field 'lang'" in err
    code, out, err = run(data, "search", "espresso", "--mode", "bm25", "--json")
    assert out["hits"][0]["source"] == "a1" and out["hits"][0]["text"].startswith("Espresso is brewed")


def test_a_metadata_type_clash_is_exit_2_before_anything_is_written(tmp_path: Path) -> None:
    corpus = write_jsonl(
        tmp_path / "clash.jsonl",
        [
            {"_id": "c1", "text": "Alpha particles are helium nuclei.", "year": 2020},
            {"_id": "c2", "text": "Gamma rays are photons.", "year": "unknown"},
        ],
    )
    data = tmp_path / "data"
    code, _, err = run(data, "ingest", str(corpus), "--as-records")
    assert code == RecordError.exit_code == 2
    assert f"{corpus}: line 2: record 'c2': metadata field 'year' holds numbers" in err
    assert "nothing was written" in err
    code, status, _ = run(data, "status", "--json")
    assert code == 0 and all(not s.get("documents") for s in status.get("sets", [])), status


def test_record_mode_refuses_folders_other_suffixes_and_sync_options(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"_id": "x", "text": "some text"}])
    (tmp_path / "notes.txt").write_text("plain text", encoding="utf-8")
    data = tmp_path / "data"
    code, _, err = run(data, "ingest", str(tmp_path), "--as-records")
    assert code == 2 and "is a folder; --as-records reads record files" in err
    code, _, err = run(data, "ingest", str(tmp_path / "notes.txt"), "--as-records")
    assert code == 2 and "notes.txt: --as-records reads .json, .jsonl, .ndjson files" in err
    code, _, err = run(data, "ingest", str(corpus), "--as-records", "--keep-missing")
    assert code == 2 and "--keep-missing syncs files; it does not go with --as-records" in err


def test_metadata_options_label_every_file_and_bad_values_are_exit_2(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "bees.txt").write_text("Honeybee colonies have one queen and many workers.", encoding="utf-8")
    (folder / "tcp.md").write_text("# TCP\n\nCongestion control starts slowly.", encoding="utf-8")
    data = tmp_path / "data"
    labels = ("--metadata", "team=search", "--metadata", "year=2024")
    code, first, err = run(data, "ingest", str(folder), *labels, "--json")
    assert code == 0 and first["documents"]["added"] == 2, err
    filename = {"$in": ["bees.txt", "tcp.md"]}
    assert len(keys_found(data, "queen", {"team": "search", "year": 2024, "filename": filename})) == 2
    assert keys_found(data, "queen", {"year": {"$gt": 2024}}) == []

    code, same, err = run(data, "ingest", str(folder), *labels, "--json")
    assert code == 0 and same["documents"]["unchanged"] == 2, err
    # a new value: the unchanged files are parsed again to record it, and nothing is embedded
    code, moved, err = run(data, "ingest", str(folder), "--metadata", "team=ranking", "--json")
    assert code == 0 and moved["documents"]["changed"] == 2 and moved["chunks"]["embedded"] == 0, err
    assert len(keys_found(data, "queen", {"team": "ranking"})) == 2
    assert keys_found(data, "queen", {"team": "search"}) == []

    code, _, err = run(data, "ingest", str(folder), "--metadata", "year=soon")
    assert code == 2 and "metadata field 'year' holds numbers in this set; got the string 'soon'" in err
    code, _, err = run(data, "ingest", str(folder), "--metadata", "team")
    assert code == 2 and "--metadata takes KEY=VALUE" in err
    code, _, err = run(data, "ingest", str(folder), "--metadata", "a=1", "--metadata", "a=2")
    assert code == 2 and "--metadata a is given twice" in err
    code, _, err = run(data, "ingest", str(folder), "--metadata", "bad name=1")
    assert code == 2 and "metadata field 'bad name'" in err


def test_delete_by_key_and_a_key_that_names_nothing(tmp_path: Path) -> None:
    rows = [{"_id": "k1", "text": "Volcanoes erupt molten rock."}, {"_id": "k2", "text": "Glaciers carve valleys."}]
    corpus = write_jsonl(tmp_path / "c.jsonl", rows)
    data = tmp_path / "data"
    code, _, err = run(data, "ingest", str(corpus), "--as-records", "--json")
    assert code == 0, err
    code, result, err = run(data, "delete", "--key", "k1", "--json")
    assert code == 0, err
    assert result["removed"] >= 1 and len(result["doc_ids"]) == 1 and result["missing"] == []
    assert keys_found(data, "volcano glacier") == ["k2"]

    code, result, err = run(data, "delete", "--key", "k1", "--key", "nope", "--key", "k2", "--json")
    assert code == NotFoundError.exit_code == 7
    assert result["missing"] == ["k1", "nope"] and len(result["doc_ids"]) == 1
    assert "not found: no document of user 1, set 1 has the key 'k1', 'nope'" in err
    assert keys_found(data, "volcano glacier") == []
    code, _, err = run(data, "delete", "--key", "k2", "--doc-id", "1")
    assert code == 2 and "give exactly one of" in err


def test_a_bad_filter_is_exit_2_naming_the_problem(records_dir: tuple[Path, Path, dict[str, Any]]) -> None:
    data, _, _ = records_dir
    assert issubclass(FilterError, InputError) and FilterError.exit_code == 2
    cases = {
        '{"year": ': "filter: not valid JSON",
        '{"yeer": 2020}': "unknown field 'yeer'",
        '{"year": {"$gte": "soon"}}': "year",
        '{"year": {"$near": 1}}': "$near",
        "[1, 2]": "a filter is a JSON object",
    }
    for given, words in cases.items():
        code, out, err = run(data, "search", "bees", "--filter", given, "--json")
        assert code == 2, (given, err)
        assert out == "" and err.startswith("error: ") and words in err, (given, err)
