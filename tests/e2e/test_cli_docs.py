"""``ragindex docs list|show`` and ``keys list`` on the real engine (SQLite, Qdrant Edge, the shipped model).

One ingest per module (the model loads once): three good files, one bad JSON, and a file whose name and text
carry terminal escapes. Human output must show those escaped; ``--json`` keeps them as they are.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragindex.cli import commands  # noqa: F401 - registers the commands
from ragindex.cli import docs as _docs  # noqa: F401 - docs list, docs show
from ragindex.cli.app import app

pytestmark = pytest.mark.integration

ESC_NAME = "e\x1b[31mvil.txt"
FILES = {
    "bees.txt": "Honeybee colonies have one queen, thousands of female workers and a few male drones.",
    "tcp.txt": "TCP congestion control grows the window by slow start, then by additive increase.",
    "bread.md": "# Sourdough\n\nA starter is flour and water.\n\n## Baking\n\nBake at a high heat with steam.",
    "broken.json": "{not json",
    ESC_NAME: "Clear the screen\x1b[2J and set the title \x1b]0;pwned\x07 please.",
}


def cli(data_dir: Path, *args: str) -> tuple[int, Any]:
    result = CliRunner().invoke(app, ["--data-dir", str(data_dir), *args])
    if "--json" in args and result.exit_code in (0, 8):  # 8: partial, the JSON report lists the failures
        return result.exit_code, json.loads(result.stdout)
    return result.exit_code, result.stdout + result.stderr


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs-cli")
    corpus = root / "corpus"
    corpus.mkdir()
    for name, text in FILES.items():
        (corpus / name).write_text(text, encoding="utf-8")
    code, report = cli(root / "data", "ingest", str(corpus), "--json")
    assert code == 8 and report["documents"]["added"] == 4 and report["documents"]["failed"] == 1, report
    return root / "data"


def by_name(data_dir: Path) -> dict[str, dict[str, Any]]:
    code, page = cli(data_dir, "docs", "list", "--json")
    assert code == 0
    return {d["filename"]: d for d in page["documents"]}


def test_docs_list_filters_and_pages(data_dir: Path) -> None:
    code, page = cli(data_dir, "docs", "list", "--json")
    assert code == 0 and page["next_cursor"] is None
    assert sorted(d["filename"] for d in page["documents"]) == sorted(FILES)

    code, failed = cli(data_dir, "docs", "list", "--status", "failed", "--json")
    assert code == 0 and [d["filename"] for d in failed["documents"]] == ["broken.json"]
    assert failed["documents"][0]["status"] == "FAILED" and "invalid JSON" in failed["documents"][0]["error"]

    seen: list[int] = []
    args = ["docs", "list", "--limit", "2", "--json"]
    pages = 0
    while True:
        code, chunk = cli(data_dir, *args)
        assert code == 0
        seen += [d["doc_id"] for d in chunk["documents"]]
        pages += 1
        if chunk["next_cursor"] is None:
            break
        args = ["docs", "list", "--limit", "2", "--cursor", chunk["next_cursor"], "--json"]
    assert pages == 3 and seen == sorted(d["doc_id"] for d in page["documents"])

    assert cli(data_dir, "docs", "list", "--set-id", "2", "--json")[1]["documents"] == []
    assert cli(data_dir, "docs", "list", "--user-id", "9", "--json")[1]["documents"] == []
    assert cli(data_dir, "docs", "list", "--status", "PENDING")[0] == 2
    code, out = cli(data_dir, "docs", "list", "--cursor", "nope")
    assert code == 2 and "cursor" in out


def test_docs_show_gives_stages_and_chunks(data_dir: Path) -> None:
    docs = by_name(data_dir)
    code, detail = cli(data_dir, "docs", "show", str(docs["bread.md"]["doc_id"]), "--json")
    assert code == 0 and detail["chunks"] is None
    assert detail["document"]["parser"] == "markdown" and detail["document"]["status"] == "SUCCESS"
    assert len(detail["document"]["file_hash"]) == 64 and detail["document"]["size"] == len(FILES["bread.md"])
    stages = {s["stage"]: s for s in detail["stages"]}
    for stage in ("loading", "chunking", "dense", "bm25"):
        assert stages[stage]["status"] == "SUCCESS" and stages[stage]["duration_ms"] is not None, stage
    assert stages["sparse"]["status"] == "SKIPPED"
    chunk_total = detail["document"]["chunk_count"]
    assert detail["counts"]["chunk"] == {"dense": {"SUCCESS": chunk_total}}

    code, rows = cli(data_dir, "docs", "show", str(docs["bread.md"]["doc_id"]), "--chunks", "--json")
    listed = rows["chunks"]
    assert sum(1 for r in listed if r["unit"] == "chunk") == chunk_total
    assert all(r["status"]["dense"] == "SUCCESS" for r in listed if r["unit"] == "chunk")
    assert all(r["status"]["bm25"] == "SUCCESS" for r in listed if r["unit"] == "section")

    code, broken = cli(data_dir, "docs", "show", str(docs["broken.json"]["doc_id"]), "--json")
    assert broken["stages"][0]["status"] == "FAILED" and "invalid JSON" in broken["stages"][0]["error"]

    code, human = cli(data_dir, "docs", "show", str(docs["broken.json"]["doc_id"]))
    assert code == 0 and "loading" in human and "invalid JSON" in human and "no chunks" in human
    code, out = cli(data_dir, "docs", "show", "999999")
    assert code == 7 and "not found" in out


def test_docs_show_parsed_prints_the_markdown_and_json_adds_it(data_dir: Path) -> None:
    docs = by_name(data_dir)
    bread = str(docs["bread.md"]["doc_id"])
    code, markdown = cli(data_dir, "docs", "show", bread, "--parsed")
    assert code == 0 and markdown == FILES["bread.md"] + "\n", "the markdown alone, nothing around it"

    code, detail = cli(data_dir, "docs", "show", bread, "--parsed", "--json")
    assert code == 0 and detail["document"]["doc_id"] == int(bread), "the document's detail, plus `parsed`"
    parsed = detail["parsed"]
    assert parsed["text"] == FILES["bread.md"] and parsed["parser"] == "markdown"
    assert parsed["content_hash"] == detail["document"]["content_hash"] and parsed["chars"] == len(FILES["bread.md"])
    assert set(parsed) >= {"blocks", "pages", "page_count", "metadata", "created_at"}
    assert "parsed" not in cli(data_dir, "docs", "show", bread, "--json")[1]

    code, out = cli(data_dir, "docs", "show", str(docs["broken.json"]["doc_id"]), "--parsed")
    assert code == 7 and "no parsed artifact" in out and "failed to load" in out
    code, out = cli(data_dir, "docs", "show", "999999", "--parsed")
    assert code == 7 and "not found" in out


def test_terminal_escapes_are_shown_escaped_and_json_is_unchanged(data_dir: Path) -> None:
    docs = by_name(data_dir)
    assert ESC_NAME in docs, "JSON keeps the name as it is"
    code, listing = cli(data_dir, "docs", "list")
    assert code == 0 and "\x1b" not in listing and "e\\x1b[31mvil.txt" in listing
    code, shown = cli(data_dir, "docs", "show", str(docs[ESC_NAME]["doc_id"]), "--chunks")
    assert code == 0 and "\x1b" not in shown and "\x07" not in shown
    assert "e\\x1b[31mvil.txt" in shown and "screen\\x1b[2J" in shown and "\\x1b]0;pwned\\x07" in shown
    code, raw = cli(data_dir, "docs", "show", str(docs[ESC_NAME]["doc_id"]), "--chunks", "--json")
    assert any("\x1b[2J" in r["preview"] for r in raw["chunks"])
    code, parsed = cli(data_dir, "docs", "show", str(docs[ESC_NAME]["doc_id"]), "--parsed")
    assert code == 0 and "\x1b" not in parsed and "\x07" not in parsed and "screen\\x1b[2J" in parsed
    code, raw = cli(data_dir, "docs", "show", str(docs[ESC_NAME]["doc_id"]), "--parsed", "--json")
    assert raw["parsed"]["text"] == FILES[ESC_NAME]


def test_keys_list_shows_the_whole_key_id_on_a_narrow_terminal(tmp_path: Path) -> None:
    """The id ``keys revoke`` takes is printed whole even where the table must squeeze its columns."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "60", "RAGINDEX_DATA_DIR": str(tmp_path)}
    command = [sys.executable, "-c", "from ragindex.cli import main; main()"]
    created = [
        json.loads(
            subprocess.run(
                [*command, "keys", "create", "--user-id", "1", "--name", "a rather long label for a key", "--json"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )["key_id"]
        for _ in range(2)
    ]
    listing = subprocess.run([*command, "keys", "list"], env=env, capture_output=True, text=True, check=True).stdout
    assert all(key_id in listing for key_id in created), listing
    revoke = subprocess.run([*command, "keys", "revoke", created[0]], env=env, capture_output=True, text=True)
    assert revoke.returncode == 0
