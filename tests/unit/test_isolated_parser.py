"""Parsing in a child process: a hang, a crash, MemoryError or a RecursionError costs one file, and the next parses.

The misbehaving loaders of ``loaderkit`` stand in for third-party parsers; the real loaders and real files are
used wherever a real file can misbehave (deep JSON, binary bytes). The timeouts here are short on purpose: these
are tests of the kill-and-replace mechanism, not of the default (120 s).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from loaderkit import MisbehavingLoader
from ragindex.errors import ConfigurationError, DocumentLoadError, ParseTimeoutError, UnsupportedFormatError
from ragindex.loaders.isolated import IsolatedParser
from ragindex.loaders.registry import LoaderRegistry


def write(folder: Path, name: str, data: str | bytes) -> Path:
    path = folder / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


@pytest.fixture
def parser() -> IsolatedParser:
    with IsolatedParser(LoaderRegistry(extra=[MisbehavingLoader()]), timeout=5) as isolated:
        yield isolated


def load(parser: IsolatedParser, path: Path) -> list[str]:
    return [d.text for d in parser.load(path, path.read_bytes())]


def test_documents_come_back_from_one_child(parser: IsolatedParser, tmp_path: Path) -> None:
    text = write(tmp_path, "a.txt", "plain text")
    records = write(tmp_path, "r.jsonl", '{"_id": "1", "text": "one"}\n{"_id": "2", "text": "two"}\n')
    assert load(parser, text) == ["plain text"]
    docs = parser.load(records, records.read_bytes())
    assert [(d.source_uri, d.text) for d in docs] == [(f"{records}#1", "one"), (f"{records}#2", "two")]
    assert parser.started == 1


def test_deep_json_is_a_load_error_and_the_child_goes_on(parser: IsolatedParser, tmp_path: Path) -> None:
    deep = write(tmp_path, "deep.json", "[" * 100_000 + "]" * 100_000)
    with pytest.raises(DocumentLoadError, match=r"deep\.json: RecursionError"):
        load(parser, deep)
    assert load(parser, write(tmp_path, "after.txt", "still parsing")) == ["still parsing"]
    assert parser.started == 1, "an exception in a loader does not cost the child"


def test_a_loader_error_keeps_its_class_and_message(parser: IsolatedParser, tmp_path: Path) -> None:
    with pytest.raises(DocumentLoadError, match=r"bad\.json: invalid JSON") as caught:
        load(parser, write(tmp_path, "bad.json", "{not json"))
    assert caught.value.context["path"].endswith("bad.json")


def test_memory_error_is_the_files_error(parser: IsolatedParser, tmp_path: Path) -> None:
    with pytest.raises(DocumentLoadError, match=r"x\.oom: MemoryError"):
        load(parser, write(tmp_path, "x.oom", "x"))
    assert parser.started == 1


def test_the_memory_guard_fails_a_runaway_parse_alone(tmp_path: Path) -> None:
    registry = LoaderRegistry(extra=[MisbehavingLoader()])
    with IsolatedParser(registry, timeout=30, memory_mb=512) as guarded:
        with pytest.raises(DocumentLoadError, match=r"big\.hog: MemoryError"):
            load(guarded, write(tmp_path, "big.hog", str(2 * 1024**3)))
        assert load(guarded, write(tmp_path, "small.hog", str(64 * 1024**2))) == [f"held {64 * 1024**2} bytes"]
        assert guarded.started == 1


def test_real_pdfs_and_ocr_parse_under_the_default_memory_guard(tmp_path: Path) -> None:
    from test_pdf_layout import _report_pdf, _scan

    from ragindex.config import Settings
    from ragindex.loaders.registry import build_registry

    settings = Settings()
    report = _report_pdf()
    with IsolatedParser(build_registry(settings.loading), timeout=120, memory_mb=settings.parse_memory_mb) as guarded:
        (text,) = guarded.load(tmp_path / "r.pdf", report)
        (scanned,) = guarded.load(tmp_path / "s.pdf", _scan(report))
    assert "| West | 3,743 | 3,802 |" in text.text
    assert "Quarterly Depot Report" in " ".join(scanned.text.split())


def test_a_hang_is_killed_at_the_timeout_and_a_fresh_child_parses_the_next(tmp_path: Path) -> None:
    with IsolatedParser(LoaderRegistry(extra=[MisbehavingLoader()]), timeout=1) as parser:
        with pytest.raises(ParseTimeoutError, match=r"x\.hang: parsing took longer than 1 s.*RAGINDEX_PARSE_TIMEOUT"):
            load(parser, write(tmp_path, "x.hang", "x"))
        assert load(parser, write(tmp_path, "ok.txt", "fine")) == ["fine"]
        assert parser.started == 2


@pytest.mark.parametrize(("name", "death"), [("x.crash", "killed by SIGSEGV"), ("x.exit", "exit code 3")])
def test_a_dying_child_fails_the_file_only(parser: IsolatedParser, tmp_path: Path, name: str, death: str) -> None:
    with pytest.raises(DocumentLoadError, match=f"the parser process died while parsing it \\({death}\\)"):
        load(parser, write(tmp_path, name, "x"))
    assert load(parser, write(tmp_path, "ok.txt", "fine")) == ["fine"]
    assert parser.started == 2


def test_stdout_of_a_parser_cannot_corrupt_the_reply(parser: IsolatedParser, tmp_path: Path) -> None:
    assert load(parser, write(tmp_path, "x.chatty", "said")) == ["said"]
    assert load(parser, write(tmp_path, "y.txt", "next")) == ["next"]


def test_unsupported_suffix_is_refused_without_a_child(parser: IsolatedParser, tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFormatError):
        load(parser, write(tmp_path, "x.xyz", "x"))
    assert parser.started == 0


def test_timeout_zero_parses_in_this_process(tmp_path: Path) -> None:
    with IsolatedParser(LoaderRegistry(), timeout=0) as parser:
        assert load(parser, write(tmp_path, "a.txt", "here")) == ["here"]
        assert parser.started == 0


def test_close_ends_the_child(tmp_path: Path) -> None:
    parser = IsolatedParser(LoaderRegistry(), timeout=5)
    load(parser, write(tmp_path, "a.txt", "x"))
    child = parser._child
    assert child is not None and child.poll() is None
    parser.close()
    assert child.poll() == 0


class ParentOnlyLoader:
    """A loader whose module exists only in this process (like one defined in a script run as ``__main__``)."""

    name = "parent-only"
    suffixes = (".only",)

    def load(self, path: Path, data: bytes) -> list[object]:
        return []


def test_a_loader_the_child_cannot_import_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    import types

    module = types.ModuleType("ragindex_tests_parent_only")
    module.ParentOnlyLoader = ParentOnlyLoader
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(ParentOnlyLoader, "__module__", module.__name__)
    with (
        IsolatedParser(LoaderRegistry(extra=[ParentOnlyLoader()]), timeout=5) as parser,
        pytest.raises(ConfigurationError, match=r"did not start: ModuleNotFoundError.*PARSE_TIMEOUT_SECONDS=0"),
    ):
        load(parser, write(tmp_path, "a.txt", "x"))


def test_the_child_dies_with_an_ingest_killed_mid_parse(tmp_path: Path) -> None:
    """SIGKILL of the ingest process while its child hangs in a parser: the child does not outlive it."""
    import os
    import signal
    import subprocess
    import sys
    import time

    hang = write(tmp_path, "x.hang", "x")
    script = (
        "import sys; from pathlib import Path; from loaderkit import MisbehavingLoader; "
        "from ragindex.loaders.isolated import IsolatedParser; from ragindex.loaders.registry import LoaderRegistry; "
        "p = IsolatedParser(LoaderRegistry(extra=[MisbehavingLoader()]), timeout=600); p._start(); "
        "print(p._child.pid, flush=True); p.load(Path(sys.argv[1]), b'x')"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    ingest = subprocess.Popen([sys.executable, "-c", script, str(hang)], stdout=subprocess.PIPE, text=True, env=env)
    assert ingest.stdout is not None
    child = int(ingest.stdout.readline())
    os.kill(ingest.pid, signal.SIGKILL)
    ingest.wait()
    ingest.stdout.close()
    for _ in range(200):  # the kernel delivers the parent-death signal at once; allow for a loaded machine
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        with open(f"/proc/{child}/stat") as stat:
            if stat.read().split()[2] == "Z":  # killed, waiting to be reaped by init
                return
        time.sleep(0.05)
    raise AssertionError(f"parser child {child} still runs after its ingest was killed")
