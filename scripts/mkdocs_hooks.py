"""MkDocs hooks: optional pages of other branches, and the Sphinx roles of the docstrings the API pages render."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

# pages written on other branches; until one lands, its nav entry is dropped and links to it become plain text
OPTIONAL_PAGES = ("moving-to-servers.md",)


def _missing(config: Any) -> set[str]:
    return {page for page in OPTIONAL_PAGES if not (Path(config["docs_dir"]) / page).exists()}


def _prune(nav: list[Any], missing: set[str]) -> list[Any]:
    kept: list[Any] = []
    for item in nav:
        if isinstance(item, dict):
            (title, value), *_ = item.items()
            if isinstance(value, list):
                kept.append({title: _prune(value, missing)})
            elif value not in missing:
                kept.append(item)
        elif item not in missing:
            kept.append(item)
    return kept


def on_config(config: Any) -> Any:
    """Drop the nav entries of optional pages not written yet."""
    missing = _missing(config)
    if missing and config["nav"]:
        config["nav"] = _prune(config["nav"], missing)
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Turn links to optional pages not written yet into their plain text."""
    for name in _missing(config):
        markdown = re.sub(r"\[([^\]]+)\]\((?:\.\./)*" + re.escape(name) + r"(#[^)]*)?\)", r"\1", markdown)
    return markdown


# a docstring's :class:`~ragindex.x.Name` arrives as ":class:<code>~ragindex.x.Name</code>": show it as `Name`
_ROLE = re.compile(r":(?:class|meth|func|attr|data|mod|exc|obj):<code>(~?)([\w.]+)(?: &lt;[\w.]+&gt;)?</code>")


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """Render the Sphinx cross-reference roles of docstrings as code (the short name for a ``~`` reference)."""
    return _ROLE.sub(lambda m: f"<code>{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}</code>", html)
