"""``ragindex search --expand --context-chars --group-by`` through the real CLI (SQLite, Qdrant Edge, MiniLM)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragindex.cli import commands  # noqa: F401 - registers the commands
from ragindex.cli.app import app

pytestmark = pytest.mark.integration

LAVA = (
    "# Volcanoes\n\n## Eruptions\n\n"
    + "\n\n".join(
        f"Eruption {i}: the {kind} lava of vent {i} flowed for {i + 2} days before the crater cooled."
        for i, kind in enumerate(["basalt", "andesite", "rhyolite", "dacite", "basalt", "phonolite"])
    )
    + "\n\n## Hazards\n\nPyroclastic flows, lahars and ash fall are the deadliest volcanic hazards.\n"
)


@pytest.fixture
def corpus_files() -> dict[str, str]:
    return {
        "volcano.md": LAVA,
        "tea.txt": "Green tea is steamed or pan-fired soon after picking, which stops oxidation.",
    }


SMALL_CHUNKS = {"RAGINDEX_CHUNK_SIZE": "150", "RAGINDEX_CHUNK_OVERLAP": "30"}


def cli(*args: str, data_dir: Path) -> tuple[int, Any]:
    result = CliRunner().invoke(app, ["--data-dir", str(data_dir), *args], env=SMALL_CHUNKS)
    if "--json" in args and result.exit_code == 0:
        return result.exit_code, json.loads(result.stdout)
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--expand", "paragraph"], "expand"),
        (["--group-by", "chapter"], "group_by"),
        (["--context-chars", "-1"], "context_chars"),
        (["--context-chars", "20001"], "context_chars"),
        (["--context-chars", "lots"], "--context-chars"),
    ],
)
def test_bad_expand_group_by_and_context_chars_exit_2_naming_the_field(
    tmp_path: Path, args: list[str], field: str
) -> None:
    code, out = cli("search", "lava", *args, data_dir=tmp_path / "d")
    assert code == 2, out
    assert field in out


def test_search_expands_and_groups_in_json_and_in_the_human_output(tmp_path: Path, corpus: Path) -> None:
    data = tmp_path / "d"
    code, out = cli("ingest", str(corpus), "--json", data_dir=data)
    assert code == 0, out
    code, body = cli(
        "search",
        "basalt lava flowed from the vent",
        "--expand",
        "neighbours",
        "--context-chars",
        "400",
        "--group-by",
        "document",
        "--top-k",
        "2",
        "--json",
        data_dir=data,
    )
    assert code == 0, body
    hits = body["hits"]
    assert [h["filename"] for h in hits] == ["volcano.md", "tea.txt"]  # one hit per document, top_k filled
    assert all(h["text"] in h["context"] and len(h["context"]) <= max(400, len(h["text"])) for h in hits)
    assert hits[0]["context"] in LAVA
    assert {"group", "expand"} <= set(body["latency_ms"])
    code, plain = cli("search", "basalt lava flowed from the vent", "--expand", "none", "--json", data_dir=data)
    assert code == 0 and all("context" not in h for h in plain["hits"])
    code, text = cli("search", "basalt lava", "--expand", "section", "--group-by", "section", data_dir=data)
    assert code == 0, text
    assert "## Eruptions" in text and "Eruption 3: the dacite lava" in text  # the section around the hit
    assert "merged:" in text
