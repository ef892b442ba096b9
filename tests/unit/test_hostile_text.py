"""Issue 23: no line of text, however crafted, takes the chunkers, the heading finder or the markdown loader more
than linear time.

Each shape is a line of about a megabyte that once sent a regular expression into quadratic backtracking (a heading
followed by spaces took 4.5 s at 20,000 spaces, 29 s at 40,000), or one of its relatives. Every shape runs in a
child process with a bound two orders of magnitude above what linear code takes (under 5 s at a megabyte here), so a
quadratic pattern fails the test by timing out instead of hanging the suite.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

MEGABYTE = 1_000_000
SHAPES: dict[str, str] = {
    "spaces": "# a" + " " * MEGABYTE + "b\n\nbody\n",
    "dots": "." * MEGABYTE + "x",
    "atx heading, spaces, no close": "## a" + " " * MEGABYTE + "b",
    "atx heading, spaces, closing hashes": "## a" + " " * MEGABYTE + "#" * 10 + " x",
    "atx heading of hashes": "#" * 6 + " " + "# " * (MEGABYTE // 2),
    "fence of spaces": "```" + " " * MEGABYTE + "x\n",
    "tildes": "~" * MEGABYTE,
    "sentence ends": "a. " * (MEGABYTE // 3),
    "question marks and spaces": "?" + " ?" * (MEGABYTE // 2) + "x",
    "newlines and spaces": " \n" * (MEGABYTE // 2) + "x",
    "tabs and no-break spaces": "\t\u00a0" * (MEGABYTE // 2) + "x",
    "one long word": "a" * MEGABYTE,
    "setext underline": "Title\n" + "=" * MEGABYTE + " x\n",
}

CHILD = r"""
import sys, time
from ragindex.chunking.factory import build_chunker
from ragindex.chunking.tokens import tokenizer_for_model
from ragindex.chunking.headings import find_headings
from ragindex.chunking.sections import with_sections
from ragindex.loaders.markdown import first_h1
from ragindex.types import Document

text = sys.stdin.read()
started = time.perf_counter()
find_headings(text)
first_h1(text)
tokenizer = tokenizer_for_model("sentence-transformers/all-MiniLM-L6-v2")
for name in ("fixed", "recursive", "structure"):
    document = Document(source_uri="hostile.md", text=text, parser="markdown")
    drafts = build_chunker(name, tokenizer_factory=lambda: tokenizer).chunk(document)
    with_sections(document, drafts, max_chars=2048, contextual=True)
print(f"{time.perf_counter() - started:.2f}")
"""


@pytest.mark.parametrize("shape", SHAPES)
def test_a_crafted_megabyte_line_is_chunked_in_linear_time(shape: str) -> None:
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD], input=SHAPES[shape], capture_output=True, text=True, timeout=240
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{shape}: a megabyte line took more than 240 s to chunk (a pattern is quadratic)")
    assert done.returncode == 0, done.stderr
