"""The generated reference pages of the docs site (settings, CLI) equal what the code renders now."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from ragindex.cli.reference import render_page as cli_page

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> object:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "scripts" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("page", ["settings.md", "cli.md"])
def test_generated_reference_page_is_current(page: str) -> None:
    pages = _generator().pages()  # type: ignore[attr-defined]
    path = ROOT / "docs" / "reference" / page
    assert path.read_text(encoding="utf-8") == pages[path](), (
        f"docs/reference/{page} is stale: regenerate it with `python scripts/gen_reference.py`"
    )


def test_cli_reference_names_every_command_and_option() -> None:
    text = cli_page()
    for command in ("ingest", "search", "docs list", "docs show", "keys create", "models prepare", "eval", "watch"):
        assert f"## `ragindex {command}`" in text
    for option in ("`--filter`", "`--as-records`", "`--metadata`", "`--data-dir`", "`--allow-mass-delete`"):
        assert option in text
    assert "`--resume`" not in text  # hidden: accepted and ignored, never documented


def _tables(text: str) -> list[list[str]]:
    tables: list[list[str]] = []
    current: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return tables


def test_no_page_documents_settings_by_hand() -> None:
    """A table of settings with their defaults exists once, generated: a hand-kept copy would drift from the code."""
    generated = ROOT / "docs" / "reference" / "settings.md"
    pages = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    by_hand = [
        f"{page.relative_to(ROOT)}: {table[0]}"
        for page in pages
        if page != generated
        for table in _tables(page.read_text(encoding="utf-8"))
        if "default" in table[0].lower() and any(row.startswith("| `RAGINDEX_") for row in table[2:])
    ]
    assert by_hand == [], "link to docs/reference/settings.md instead"


def test_readme_is_a_front_page_whose_links_resolve() -> None:
    """README.md stays short (the manual is the docs site) and every relative link in it names a file that exists."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250, "README.md is the front page: put the manual's text under docs/"
    targets = {m[1].split("#")[0] for m in re.finditer(r"\]\(([^)\s]+)\)", text) if "://" not in m[1]}
    assert targets and [t for t in sorted(targets) if not (ROOT / t).exists()] == []
