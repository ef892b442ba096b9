"""Tables found by camelot (stream and network modes), pdfplumber (text strategy) and img2table, as JSON on stdout.

Runs in the comparison venv made by ``bench/tables_venv.sh`` (never in the project's venv):
``/work/venvs/tables/bin/python bench/table_baselines.py TOOL PDF...`` prints
``{"pdf": [{"pages": [1], "rows": [[...], ...]}, ...], ...}``; a file the tool fails on maps to ``{"error": ...}``.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def _camelot(path: str, flavor: str) -> list[dict[str, Any]]:
    import camelot

    tables = camelot.read_pdf(path, flavor=flavor, pages="all")
    return [{"pages": [int(t.page)], "rows": [[str(c) for c in row] for row in t.df.values.tolist()]} for t in tables]


def _pdfplumber(path: str) -> list[dict[str, Any]]:
    import pdfplumber

    out = []
    settings = {"vertical_strategy": "text", "horizontal_strategy": "text"}
    with pdfplumber.open(path) as pdf:
        for number, page in enumerate(pdf.pages, 1):
            out.extend(
                {"pages": [number], "rows": [[c or "" for c in row] for row in rows]}
                for rows in page.extract_tables(settings)
            )
            page.close()
    return out


def _img2table(path: str) -> list[dict[str, Any]]:
    from img2table.document import PDF

    pages = PDF(src=path).extract_tables(borderless_tables=True, implicit_columns=True, implicit_rows=True)
    return [
        {
            "pages": [int(page) + 1],
            "rows": [["" if c is None or c != c else str(c) for c in row] for row in t.df.values.tolist()],
        }
        for page, tables in pages.items()
        for t in tables
    ]


def main(argv: list[str]) -> int:
    tool, paths = argv[0], argv[1:]
    out: dict[str, Any] = {}
    for path in paths:
        started = time.perf_counter()
        try:
            if tool.startswith("camelot-"):
                tables = _camelot(path, tool.removeprefix("camelot-"))
            elif tool == "pdfplumber-text":
                tables = _pdfplumber(path)
            elif tool == "img2table":
                tables = _img2table(path)
            else:
                raise SystemExit(f"unknown tool {tool}")
            out[path] = {"tables": tables, "seconds": time.perf_counter() - started}
        except Exception as exc:  # a tool that fails on a file scores nothing on it
            out[path] = {"error": f"{type(exc).__name__}: {exc}"[:300], "seconds": time.perf_counter() - started}
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
