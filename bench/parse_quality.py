"""Table ground truth: cell precision and recall, adjacency precision and recall, and TEDS per table (issue 26).

``python -m bench.run parse-quality`` scores ragindex's pdf loader (and, where the comparison venv exists,
camelot's stream and network modes and pdfplumber's text strategy, run by ``bench/table_baselines.py`` in
``/work/venvs/tables``, made by ``bench/tables_venv.sh``) on the same tables:

* **ICDAR 2013 table competition** (EU and US government documents, cell-level ground truth in ``*-str.xml``), as
  shipped in camelot's test suite (MIT; the dataset itself is the competition's, free for research). Nothing is
  downloaded: point ``RAGINDEX_TABLE_SET`` at a folder holding ``competition-dataset-eu`` / ``-us`` (e.g.
  ``tests/files/tabula/icdar2013-dataset`` of a camelot checkout); without it that part is skipped.
* **Self-made documents** whose tables we know: the reportlab tables of ``tests/tablekit.py`` (stacked rows beside
  a row-spanning label, with and without booktabs rules; dot leaders, wrapped labels and a table continued on the
  next page of a three-column notice; a grid with column rules in its header row only; rows in sections under
  labels set off by space; labels of a number and a unit word) and the LibreOffice report of
  ``tests/fixtures/parsing`` (a ruled table and one without rules).

Scores, per ground-truth table, against the found table on its pages that matches it best (cells compared after
removing whitespace and case): **cells** P/R: the multiset of non-empty cell texts; **adjacency** P/R: the pairs
of horizontally and vertically neighbouring non-empty cells (the ICDAR 2013 structure measure); **TEDS**:
1 - tree edit distance / larger tree, table > rows > cells, cell renames costing their normalised Levenshtein
distance, rows aligned in order (a row-aligned bound of the exact TED). Found tables that match no ground-truth
table count against precision. Totals are micro-averaged over cells.

Then ``bench.ocr_quality.run()``'s rows are appended (the OCR character error rate and pages/s of each scan against
its transcript, see that module), so this one command reproduces every figure of issue 26. ``python -m
bench.parse_quality [TOOL ...] [--no-ocr]`` prints the tables without storing them in docs/benchmarks.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from bench import ocr_quality
from bench.common import save_section

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "parse-quality.json"
VENV = Path(os.environ.get("RAGINDEX_TABLES_VENV", "/work/venvs/tables"))
BASELINES = ("camelot-stream", "camelot-network", "pdfplumber-text", "img2table")

Rows = list[list[str]]


@dataclass
class Truth:
    """One ground-truth table: its file, pages and rows (spanning cells at their first row and column)."""

    name: str
    pdf: Path
    pages: set[int]
    rows: Rows
    source: str


@dataclass
class Found:
    """One table a tool found; ``parts``: its pages' parts when it was merged across pages."""

    pages: set[int]
    rows: Rows
    parts: list[Found] = field(default_factory=list)


@dataclass
class Score:
    """Counts for one ground-truth table."""

    truth_cells: int = 0
    found_cells: int = 0
    cell_hits: int = 0
    truth_pairs: int = 0
    found_pairs: int = 0
    pair_hits: int = 0
    teds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def _norm(text: str) -> str:
    return "".join(text.split()).lower()


def icdar_tables(root: Path) -> list[Truth]:
    """The ICDAR 2013 tables under ``root`` (``*-str.xml`` beside its pdf)."""
    out: list[Truth] = []
    for xml in sorted(root.glob("competition-dataset-*/*-str.xml")):
        pdf = xml.with_name(xml.name.removesuffix("-str.xml") + ".pdf")
        if not pdf.is_file():
            continue
        for table in ET.parse(xml).getroot().iter("table"):
            cells: dict[tuple[int, int], str] = {}
            pages: set[int] = set()
            row_offset = 0
            for region in table.iter("region"):
                pages.add(int(region.get("page", "1")))
                last = row_offset
                for cell in region.iter("cell"):
                    r = int(cell.get("start-row", "0")) + row_offset
                    c = int(cell.get("start-col", "0"))
                    content = " ".join((cell.findtext("content") or "").split())
                    cells[(r, c)] = content
                    last = max(last, r + 1)
                row_offset = last
            if not cells:
                continue
            height = max(r for r, _ in cells) + 1
            width = max(c for _, c in cells) + 1
            rows = [row for r in range(height) if any(row := [cells.get((r, c), "") for c in range(width)])]
            out.append(Truth(f"{pdf.stem}#{table.get('id')}", pdf, pages, rows, "icdar2013"))
    return out


def own_tables(work: Path) -> list[Truth]:
    """The self-made documents (written to ``work``) with their known tables."""
    sys.path.insert(0, str(ROOT / "tests"))
    import tablekit

    out: list[Truth] = []
    work.mkdir(parents=True, exist_ok=True)
    builders = {
        "stacked-booktabs": lambda: tablekit.stacked_table_pdf(rules=True),
        "stacked-no-rules": lambda: tablekit.stacked_table_pdf(rules=False),
        "leaders-continued": tablekit.continued_table_pdf,
        "header-ruled": tablekit.header_ruled_table_pdf,
        "sectioned": tablekit.sectioned_table_pdf,
        "unit-column": tablekit.unit_column_table_pdf,
    }
    for name, build in builders.items():
        data, tables = build()
        path = work / f"{name}.pdf"
        path.write_bytes(data)
        for i, rows in enumerate(tables, 1):
            pages = {1, 2} if name == "leaders-continued" else {1}
            out.append(Truth(f"{name}#{i}", path, pages, rows, "own (reportlab)"))
    report = ROOT / "tests" / "fixtures" / "parsing" / "report.pdf"
    region = [
        ["Region", "Q1", "Q2", "Q3"],
        ["North", "1,204", "1,317", "1,422"],
        ["South", "2,088", "2,151", "2,209"],
        ["East", "1,536", "1,490", "1,612"],
        ["West", "3,743", "3,802", "3,866"],
    ]
    staff = [["Site", "Drivers", "Loaders"], ["Aberdeen", "41", "17"], ["Dundee", "36", "23"], ["Perth", "28", "19"]]
    out.append(Truth("libreoffice-report#1", report, {1}, region, "own (LibreOffice)"))
    out.append(Truth("libreoffice-report#2", report, {1}, staff, "own (LibreOffice)"))
    return out


def ragindex_tables(paths: Sequence[Path]) -> tuple[dict[Path, list[Found]], dict[Path, float]]:
    """The tables of ragindex's pdf loader (a continued table is one), and its seconds per file."""
    from ragindex.loaders.pdf import PdfLoader
    from ragindex.types import BlockKind

    out: dict[Path, list[Found]] = {}
    seconds: dict[Path, float] = {}
    loader = PdfLoader()
    for path in paths:
        started = time.perf_counter()
        doc = loader.load(path, path.read_bytes())[0]
        seconds[path] = time.perf_counter() - started
        found: list[Found] = []
        previous_end = -10
        for block in doc.blocks:
            if block.kind != BlockKind.TABLE:
                continue
            rows = _markdown_rows(doc.text[block.start : block.end])
            page = block.page or 1
            if block.start == previous_end + 1 and found:  # the rows of a table continued on the next page
                merged = found[-1]
                if not merged.parts:
                    merged.parts.append(Found(set(merged.pages), list(merged.rows)))
                merged.parts.append(Found({page}, [merged.rows[0], *rows]))  # scored with its header, too
                merged.rows.extend(rows)
                merged.pages.add(page)
            else:
                found.append(Found({page}, rows))
            previous_end = block.end
        out[path] = found
    return out, seconds


def _markdown_rows(text: str) -> Rows:
    rows = []
    for line in text.split("\n"):
        line = line.strip()
        if not line.startswith("|") or set(line) <= set("|- "):
            continue
        cells = [c.strip().replace("\\|", "|") for c in line[1:-1].split(" | ")]
        rows.append(cells)
    return rows


def baseline_tables(tool: str, paths: Sequence[Path]) -> tuple[dict[Path, list[Found]], dict[Path, float]] | None:
    """A comparison tool's tables, run in its own venv (None when the venv is missing)."""
    python = VENV / "bin" / "python"
    if not python.is_file():
        return None
    proc = subprocess.run(
        # -P: bench/ is not put on sys.path, where bench/collections.py would shadow the standard library
        [str(python), "-P", str(ROOT / "bench" / "table_baselines.py"), tool, *map(str, paths)],
        capture_output=True,
        text=True,
        check=True,
    )
    raw = json.loads(proc.stdout)
    out: dict[Path, list[Found]] = {}
    seconds: dict[Path, float] = {}
    for path in paths:
        entry = raw.get(str(path), {})
        seconds[path] = float(entry.get("seconds", 0.0))
        out[path] = [Found(set(t["pages"]), [[str(c) for c in r] for r in t["rows"]]) for t in entry.get("tables", [])]
    return out, seconds


def _cells(rows: Rows) -> Counter[str]:
    return Counter(n for row in rows for c in row if (n := _norm(c)))


def _pairs(rows: Rows) -> Counter[tuple[str, str, str]]:
    grid = [[_norm(c) for c in row] for row in rows]
    out: Counter[tuple[str, str, str]] = Counter()
    for row in grid:
        filled = [c for c in row if c]
        out.update((a, b, "h") for a, b in zip(filled, filled[1:], strict=False))
    width = max((len(r) for r in grid), default=0)
    for c in range(width):
        filled = [row[c] for row in grid if c < len(row) and row[c]]
        out.update((a, b, "v") for a, b in zip(filled, filled[1:], strict=False))
    return out


@lru_cache(maxsize=200_000)
def _rename(a: str, b: str) -> float:
    if a == b:
        return 0.0
    if not a or not b:
        return 1.0
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1] / max(len(a), len(b))


def _align(a: Sequence[Any], b: Sequence[Any], cost: Any, size_a: Any, size_b: Any) -> float:
    """Ordered alignment: substitution ``cost(x, y)``, deleting ``x`` costs ``size_a(x)``, inserting ``size_b(y)``."""
    previous = [0.0]
    for y in b:
        previous.append(previous[-1] + size_b(y))
    for x in a:
        current = [previous[0] + size_a(x)]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + size_a(x), current[j - 1] + size_b(y), previous[j - 1] + cost(x, y)))
        previous = current
    return previous[-1]


def teds(truth: Rows, found: Rows) -> float:
    """1 - (row-aligned) tree edit distance / the larger tree's node count, table > rows > cells."""
    a = [[_norm(c) for c in row] for row in truth]
    b = [[_norm(c) for c in row] for row in found]

    def row_cost(x: list[str], y: list[str]) -> float:
        return _align(x, y, _rename, lambda _: 1.0, lambda _: 1.0)

    distance = _align(a, b, row_cost, lambda x: 1.0 + len(x), lambda y: 1.0 + len(y))
    nodes = max(1 + sum(1 + len(r) for r in a), 1 + sum(1 + len(r) for r in b))
    return max(0.0, 1.0 - distance / nodes)


def score(truths: Sequence[Truth], found: dict[Path, list[Found]]) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Per-table rows and the micro-averaged totals of one tool."""
    used: set[int] = set()
    rows: list[dict[str, Any]] = []
    totals = Counter[str]()
    for truth in truths:
        t_cells, t_pairs = _cells(truth.rows), _pairs(truth.rows)
        best: tuple[float, int, Found] | None = None
        for table in found.get(truth.pdf, []):
            # a table merged across pages is matched whole, or by the part on the truth's page (where the truth
            # cuts it per page)
            for candidate in [table, *table.parts]:
                if not candidate.pages & truth.pages:
                    continue
                hits = sum((_cells(candidate.rows) & t_cells).values())
                f1 = 2 * hits / max(sum(_cells(candidate.rows).values()) + sum(t_cells.values()), 1)
                if best is None or f1 > best[0]:
                    best = (f1, id(table), candidate)
        s = Score(truth_cells=sum(t_cells.values()), truth_pairs=sum(t_pairs.values()))
        if best is not None and best[0] > 0:
            used.add(best[1])
            f_cells, f_pairs = _cells(best[2].rows), _pairs(best[2].rows)
            s.found_cells, s.found_pairs = sum(f_cells.values()), sum(f_pairs.values())
            s.cell_hits = sum((f_cells & t_cells).values())
            s.pair_hits = sum((f_pairs & t_pairs).values())
            s.teds = teds(truth.rows, best[2].rows)
        rows.append(
            {
                "table": truth.name,
                "source": truth.source,
                "cell_p": s.cell_hits / s.found_cells if s.found_cells else 0.0,
                "cell_r": s.cell_hits / s.truth_cells if s.truth_cells else 0.0,
                "adj_p": s.pair_hits / s.found_pairs if s.found_pairs else 0.0,
                "adj_r": s.pair_hits / s.truth_pairs if s.truth_pairs else 0.0,
                "teds": s.teds,
            }
        )
        for key in ("truth_cells", "found_cells", "cell_hits", "truth_pairs", "found_pairs", "pair_hits"):
            totals[key] += getattr(s, key)
        totals["teds"] += s.teds  # type: ignore[assignment]
    pdfs = {t.pdf for t in truths}
    for pdf in pdfs:  # tables found where the ground truth has none count against precision
        for candidate in found.get(pdf, []):
            if id(candidate) not in used:
                totals["found_cells"] += sum(_cells(candidate.rows).values())
                totals["found_pairs"] += sum(_pairs(candidate.rows).values())
                totals["unmatched_tables"] += 1
    summary = {
        "tables": len(truths),
        "cell_precision": totals["cell_hits"] / max(totals["found_cells"], 1),
        "cell_recall": totals["cell_hits"] / max(totals["truth_cells"], 1),
        "adjacency_precision": totals["pair_hits"] / max(totals["found_pairs"], 1),
        "adjacency_recall": totals["pair_hits"] / max(totals["truth_pairs"], 1),
        "teds_mean": totals["teds"] / max(len(truths), 1),
        "unmatched_found_tables": totals["unmatched_tables"],
    }
    return rows, summary


def run(tools: Sequence[str] = ("ragindex", *BASELINES), *, ocr: bool = True) -> dict[str, Any]:
    """Score every tool on every set, then (``ocr``) the OCR scans; write docs/parse-quality.json; return it all."""
    work = Path(os.environ.get("RAGINDEX_BENCH_DIR", "/tmp/ragindex-bench")) / "parse-quality"
    sets: dict[str, list[Truth]] = {"own": own_tables(work)}
    icdar = os.environ.get("RAGINDEX_TABLE_SET")
    if icdar and Path(icdar).is_dir():
        sets["icdar2013"] = icdar_tables(Path(icdar))
    load_start = os.getloadavg()
    results: dict[str, Any] = {"loadavg_at_start": [round(x, 2) for x in load_start], "sets": {}}
    for set_name, truths in sets.items():
        paths = sorted({t.pdf for t in truths})
        per_set: dict[str, Any] = {"documents": len(paths), "tables": len(truths), "tools": {}}
        for tool in tools:
            got = ragindex_tables(paths) if tool == "ragindex" else baseline_tables(tool, paths)
            if got is None:
                continue
            found, seconds = got
            table_rows, summary = score(truths, found)
            summary["seconds"] = round(sum(seconds.values()), 2)
            per_set["tools"][tool] = {"summary": summary, "tables": table_rows}
            sys.stderr.write(f"{set_name} {tool}: {json.dumps(summary)}\n")
        results["sets"][set_name] = per_set
    if ocr:
        results["ocr"] = ocr_quality.run()
    results["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    OUT.write_text(json.dumps(results, indent=1) + "\n")
    return results


def markdown(results: dict[str, Any]) -> str:
    """The summary tables of ``results`` as markdown (docs/parsing.md)."""
    lines = []
    for set_name, per_set in results["sets"].items():
        lines += [
            f"**{set_name}** ({per_set['documents']} pdfs, {per_set['tables']} tables)",
            "",
            "| tool | cell P | cell R | adjacency P | adjacency R | TEDS (mean) | extra tables | seconds |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for tool, entry in per_set["tools"].items():
            s = entry["summary"]
            lines.append(
                f"| {tool} | {s['cell_precision']:.3f} | {s['cell_recall']:.3f} | {s['adjacency_precision']:.3f} "
                f"| {s['adjacency_recall']:.3f} | {s['teds_mean']:.3f} | {s['unmatched_found_tables']} "
                f"| {s['seconds']:.1f} |"
            )
        lines.append("")
    if results.get("ocr"):
        lines += ["**OCR scans** (character error rate against the transcript; `bench/ocr_quality.py`)", ""]
        lines += [*ocr_quality.table(results["ocr"]), ""]
    return "\n".join(lines)


def bench_parse_quality() -> dict[str, Any]:
    """The ``parse-quality`` section of ``python -m bench.run``."""
    results = run()
    sys.stdout.write(markdown(results) + "\n")
    summaries = {  # the per-table rows stay in docs/parse-quality.json
        name: {**per_set, "tools": {tool: {"summary": e["summary"]} for tool, e in per_set["tools"].items()}}
        for name, per_set in results["sets"].items()
    }
    save_section("parse-quality", {**results, "sets": summaries, "command": "python -m bench.run parse-quality"})
    return results


def render(section: dict[str, Any]) -> list[str]:
    """The section of docs/benchmarks.md."""
    return [
        "Tables against ground truth (ICDAR 2013 where `RAGINDEX_TABLE_SET` points at it, and the self-made set), "
        "then the OCR scans. Targets (issue 26): cell P and R >= 0.95; CER <= 0.03 (English two-column scan), "
        "<= 0.05 (Chinese low-resolution scan).",
        "",
        *markdown(section).split("\n"),
        f"Command: `{section['command']}`.",
        *([f"Note: {section['note']}"] if section.get("note") else []),
    ]


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--no-ocr"]
    print(markdown(run(args or ("ragindex", *BASELINES), ocr="--no-ocr" not in sys.argv)))
