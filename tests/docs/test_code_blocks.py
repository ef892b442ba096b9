"""Every code block of README.md and docs/ runs: Python blocks in this process, marked shell blocks in bash.

The blocks run in page order (the tutorial, the README, then docs/ by path, each page top to bottom) in one
working directory shared by the whole module: a copy of ``examples/``, a small ``docs/`` folder of notes, and one
data dir (``RAGINDEX_DATA_DIR`` = ``.ragindex`` there). So a page can build on what an earlier block ingested, and the
examples corpus is parsed and embedded once, not per block.

What runs is said by an HTML comment on the line right before a block (invisible on GitHub and on the site):

* a ``python`` block runs unless ``<!-- docs-test: skip REASON -->`` says why it cannot (a server it needs);
* ``<!-- docs-test: continue -->`` runs a Python block in the namespace of the page's previous block;
* a ``bash`` / ``sh`` / ``console`` block runs only when marked ``<!-- docs-test: run -->`` (``run exit=N`` when
  it should exit N); in a ``console`` block, only the lines starting with ``$ `` are commands.

Other languages (json, yaml, text) are data or output, not programs.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# the tutorial first: it ingests examples/ with its metadata, so the README's ingest of the same files is a no-op
TUTORIAL = ROOT / "docs" / "tutorial.md"
PAGES = [TUTORIAL, ROOT / "README.md", *sorted(set((ROOT / "docs").rglob("*.md")) - {TUTORIAL})]
PYTHON = ("python", "py", "pycon")
SHELL = ("bash", "sh", "shell", "console")
DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,})\s*([\w+-]*)")
# the notes a block may call "docs/": small, so ingesting them costs little
NOTES = {
    "keys.md": "# Key rotation\n\nRotate keys every 90 days: create the new key, deploy it, then revoke the old one.\n",
    "old.md": "# Old notes\n\nThe previous rotation schedule was yearly.\n",
}

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int
    lang: str
    code: str
    directive: str

    @property
    def name(self) -> str:
        """``page:line``, the block's test id."""
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def page_blocks(page: Path) -> list[Block]:
    """The fenced blocks of one page, with the directive on the line before each."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        indent, ticks, lang = fence.groups()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(ticks):
            end += 1
        before = DIRECTIVE.match(lines[i - 1]) if i else None
        code = textwrap.dedent("\n".join(line.removeprefix(indent) for line in lines[i + 1 : end]))
        found.append(Block(page, i + 1, lang.lower(), code, before.group(1) if before else ""))
        i = end + 1
    return found


def selected() -> list[Block]:
    """The blocks that run: Python ones not skipped, shell ones marked ``run``."""
    return [
        block
        for page in PAGES
        for block in page_blocks(page)
        if block.lang in PYTHON or (block.lang in SHELL and block.directive.startswith("run"))
    ]


BLOCKS = selected()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared working directory: a copy of examples/ (a block may edit it), docs/ notes, the data dir."""
    root = tmp_path_factory.mktemp("docs-blocks")
    shutil.copytree(ROOT / "examples", root / "examples")
    (root / "docs").mkdir()
    for name, text in NOTES.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def in_workdir(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("RAGINDEX_DATA_DIR", str(workdir / ".ragindex"))
    return workdir


_namespaces: dict[Path, dict[str, Any]] = {}


def _run_python(block: Block) -> None:
    if block.directive == "continue":
        namespace = _namespaces[block.page]
    else:
        namespace = {"__name__": "__docs__"}
        _namespaces[block.page] = namespace
    exec(compile(block.code, block.name, "exec"), namespace)
    gc.collect()  # a shared engine whose last user was this block closes now, before the next block opens one


def _run_shell(block: Block, cwd: Path) -> None:
    code = block.code
    if block.lang == "console":
        code = "\n".join(line[2:] for line in code.splitlines() if line.startswith("$ "))
    expected = int(m[1]) if (m := re.search(r"exit=(\d+)", block.directive)) else 0
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == expected, f"{block.name} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("block", BLOCKS, ids=[block.name for block in BLOCKS])
def test_code_block(block: Block, in_workdir: Path) -> None:
    if block.directive.startswith("skip"):
        pytest.skip(block.directive.removeprefix("skip").strip() or "marked skip")
    if block.lang in PYTHON:
        _run_python(block)
    else:
        _run_shell(block, in_workdir)


def test_directives_are_known() -> None:
    """A misspelt directive would silently stop a block from running."""
    for page in PAGES:
        for block in page_blocks(page):
            if block.directive:
                assert re.fullmatch(r"run( exit=\d+)?|continue|skip .+", block.directive), block.name


# the terminal the docs show: a tmux pane this size, what `ragindex search` printed in it
SCREEN = (100, 30)
SCREEN_COMMAND = 'ragindex search "which moon is the largest" --top-k 2 --expand none'
CLI_CAPTURE = ROOT / "docs" / "images" / "cli-search.txt"


@pytest.mark.browser
def test_cli_screen_capture(in_workdir: Path) -> None:
    """`ragindex search` in a real terminal (tmux) over the data dir the blocks built: the hits come out readable.

    With ``DOCS_SCREENSHOTS=1`` (``make docs-screenshots``) the capture replaces docs/images/cli-search.txt,
    which the tutorial includes, so the page shows what the command prints today.
    """
    tmux = shutil.which("tmux")
    if tmux is None:
        pytest.skip("no tmux (apt-get install tmux)")
    socket = ["-L", f"ragindex-docs-{os.getpid()}"]  # a tmux server of its own, whatever else runs tmux here
    width, height = SCREEN
    bin_dir = Path(sys.executable).parent
    script = f"clear; export PATH={bin_dir}:$PATH RAGINDEX_DATA_DIR={in_workdir / '.ragindex'}; cd {in_workdir}; "
    script += f"printf '$ %s\\n' '{SCREEN_COMMAND}'; "
    script += f"{SCREEN_COMMAND}; echo '<done>'; sleep 600"
    subprocess.run(
        [tmux, *socket, "new-session", "-d", "-x", str(width), "-y", str(height), "bash", "-c", script],
        check=True,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    try:
        screen = ""
        for _ in range(1200):  # the command loads the model: up to 120 s on a loaded machine
            screen = subprocess.run(
                [tmux, *socket, "capture-pane", "-p"], capture_output=True, text=True, check=True
            ).stdout
            if "<done>" in screen:
                break
            time.sleep(0.1)
    finally:
        subprocess.run([tmux, *socket, "kill-server"], check=False)
    assert "<done>" in screen, screen
    shown = screen.split("<done>")[0].rstrip() + "\n"
    assert "hybrid search: which moon is the largest" in shown and "solar_system.pdf" in shown, shown
    assert "\x1b" not in shown  # capture-pane without -e: text only
    if os.environ.get("DOCS_SCREENSHOTS") == "1":
        CLI_CAPTURE.parent.mkdir(exist_ok=True)
        CLI_CAPTURE.write_text(shown, encoding="utf-8")
