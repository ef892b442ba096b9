"""Slow but legal files: a 51 kB docx of 150,000 one-letter paragraphs passes the zip-bomb check and takes its
parser about two minutes on our 2-core machines (the default parse timeout is 120 s): a job that holds a job
thread for as long as a file may take, without anything hostile in the service's own process."""

from __future__ import annotations

import io
from copy import deepcopy
from functools import cache

PARAGRAPHS = 150_000


@cache
def slow_docx(paragraphs: int = PARAGRAPHS) -> bytes:
    """A .docx of ``paragraphs`` paragraphs ``x`` (built with python-docx, once per process)."""
    import docx

    document = docx.Document()
    first = document.add_paragraph("x")._p
    body = document.element.body
    for _ in range(paragraphs - 1):
        body.append(deepcopy(first))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
