"""Write the generated reference pages of the docs site: settings (from the settings models) and CLI (from Typer).

    python scripts/gen_reference.py          # rewrite docs/reference/settings.md and docs/reference/cli.md
    python scripts/gen_reference.py --check  # exit 1 naming each page that differs from the code

tests/unit/test_docs_reference.py runs the check in `make test`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pages() -> dict[Path, Callable[[], str]]:
    """Each generated page and the function that renders it."""
    from ragindex.cli.reference import render_page as cli_page
    from ragindex.config.reference import render_page as settings_page

    return {ROOT / "docs/reference/settings.md": settings_page, ROOT / "docs/reference/cli.md": cli_page}


def main(argv: list[str]) -> int:
    """Write the pages, or with ``--check`` report the stale ones."""
    stale = []
    for path, render in pages().items():
        text = render()
        if "--check" in argv:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path.relative_to(ROOT))
        else:
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{path} is stale: regenerate it with `python scripts/gen_reference.py`", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
