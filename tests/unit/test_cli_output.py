"""Terminal safety of the human output and the exit-code documentation (docs/reference/exit-codes.md, cli/app.py)."""

from __future__ import annotations

import io
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

import ragindex.cli.app as cli_app
from ragindex import errors
from ragindex.cli.crash import crash_line, write_crash_log
from ragindex.cli.render import clean, ingest_table, search_table
from ragindex.pipeline.sync import IngestReport
from ragindex.types import Hit, SearchResult, SourceScore

EXIT_CODES_PAGE = Path(__file__).parents[2] / "docs" / "reference" / "exit-codes.md"
HOSTILE = "clear\x1b[2J title\x1b]0;pwned\x07 nul\x00 cr\r del\x7f csi\x9b1m rlo\u202etxt.exe"
# what a terminal may receive from rich: colour/style (SGR) sequences, nothing else
SGR = re.compile(r"\x1b\[[0-9;]*m")


def test_clean_escapes_every_control_character() -> None:
    out = clean(HOSTILE)
    assert out == (r"clear\x1b[2J title\x1b]0;pwned\x07 nul\x00 cr\r del\x7f csi\x9b1m rlo\u202etxt.exe")
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in out)


def test_clean_keeps_text_and_multiline_keeps_line_breaks() -> None:
    text = "数据治理流程 café 🙂 [bold]x[/bold] tab\tline\nend"
    assert clean(text) == "数据治理流程 café 🙂 [bold]x[/bold] tab\\tline\\nend"
    assert clean(text, multiline=True) == text
    assert clean("a\r\nb", multiline=True) == "a\\r\nb"


def _render(renderable: object) -> str:
    buffer = io.StringIO()
    Console(file=buffer, force_terminal=True, color_system="standard", width=200).print(renderable)
    return buffer.getvalue()


def _assert_terminal_safe(output: str) -> None:
    leftover = SGR.sub("", output)
    assert "\x1b" not in leftover and "\x07" not in leftover and "\x00" not in leftover, repr(leftover)


def test_search_output_on_a_terminal_carries_no_foreign_escape_sequence() -> None:
    hit = Hit(
        rank=1,
        chunk_id="c1",
        doc_id=1,
        set_id=1,
        score=0.5,
        source=f"/docs/{HOSTILE}.txt",
        filename=f"{HOSTILE}[red].txt",
        text=f"body {HOSTILE}",
        page=None,
        section=f"§ {HOSTILE}",
        start_line=1,
        end_line=2,
        scores={"dense": SourceScore(score=0.5, rank=1)},
        context=f"before\n{HOSTILE}\nbody {HOSTILE}\nafter",
    )
    result = SearchResult(hits=(hit,), latency_ms={"total": 1.0}, mode="hybrid", warnings=(HOSTILE,))
    for shown in (result, SearchResult(hits=(replace(hit, context=None),), latency_ms={}, mode="dense")):
        output = _render(search_table(HOSTILE, shown))
        _assert_terminal_safe(output)
        assert r"clear\x1b[2J" in output
    assert "[red].txt" in _render(search_table("q", result))  # a file name is never read as markup


def test_ingest_report_lists_failures_escaped() -> None:
    report = IngestReport()
    report.documents["failed"] = 1
    report.failures.append({"source": f"/d/{HOSTILE}.json", "error": f"invalid JSON near {HOSTILE}"})
    report.notes.append(f"skipped empty file {HOSTILE}")
    output = _render(ingest_table(report))
    _assert_terminal_safe(output)
    assert r"failed: /d/clear\x1b[2J" in output and r"note: skipped empty file clear\x1b[2J" in output


def _page_exit_codes() -> dict[int, str]:
    text = EXIT_CODES_PAGE.read_text(encoding="utf-8")
    block = text.split("<!-- exit-codes:begin -->")[1].split("<!-- exit-codes:end -->")[0]
    return {int(m[1]): m[2] for m in re.finditer(r"^\| `(\d+)` \| (.*) \|$", block, re.MULTILINE)}


def _docstring_exit_codes() -> dict[int, str]:
    codes: dict[int, str] = {}
    last = None
    for line in (cli_app.__doc__ or "").splitlines():
        if m := re.match(r"^    (\d+) +(\S.*)$", line):
            last = int(m[1])
            codes[last] = m[2]
        elif last is not None and (m := re.match(r"^ {9}(\S.*)$", line)):
            codes[last] += " " + m[1]
        else:
            last = None
    return codes


def test_docs_page_and_cli_docstring_list_exactly_the_exit_codes_of_the_code() -> None:
    assert _page_exit_codes() == errors.exit_codes()
    assert _docstring_exit_codes() == errors.exit_codes()


def _families(cls: type[errors.RagindexError]) -> list[type[errors.RagindexError]]:
    return [cls, *(sub for child in cls.__subclasses__() for sub in _families(child))]


def test_every_error_class_exits_with_a_documented_code() -> None:
    pytest.importorskip("fastapi")
    import ragindex.pipeline.faults
    import ragindex.service.errors  # its classes join the hierarchy

    documented = errors.exit_codes()
    classes = _families(errors.RagindexError)
    assert {cls.__name__: cls.exit_code for cls in classes if cls.exit_code not in documented} == {}
    assert [cls.__name__ for cls in classes if cls.exit_code == errors.EXIT_MISMATCH] == []  # 1 is verify's alone
    assert ragindex.pipeline.faults.InjectedFault.exit_code == errors.EXIT_CRASH


def test_crash_log_masks_secrets_and_the_line_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        sys, "argv", ["ragindex", "encoder-server", "--api-key", "s3cret", "--token=abc", "--port", "9"]
    )
    try:
        raise RuntimeError("boom\x1b[2J")
    except RuntimeError as exc:
        log = write_crash_log(exc, tmp_path)
        line = crash_line(exc, log)
    assert log is not None and log.parent == tmp_path / "logs" and log.stat().st_mode & 0o077 == 0
    text = log.read_text(encoding="utf-8")
    assert "s3cret" not in text and "abc" not in text and "--api-key *** --token=*** --port 9" in text
    assert "Traceback (most recent call last)" in text and 'raise RuntimeError("boom' in text
    assert str(log) in line and "\n" not in line and "RuntimeError: boom" in line


def test_crash_log_goes_to_the_temp_dir_without_a_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    log = write_crash_log(ValueError("x"), tmp_path / "missing-data-dir")
    assert log is not None and log.parent == tmp_path and log.name.startswith("ragindex-crash-")
    assert not (tmp_path / "missing-data-dir").exists()
