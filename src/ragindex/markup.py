r"""Markdown line syntax shared by the loaders and the chunkers: ATX headings and code fences.

Every pattern here runs in time linear in the text, whatever the text: the opening of a heading line is matched by
a pattern that cannot backtrack (``[ \t]+`` then ``[^\n]*``, which always succeeds), and the closing ``#``
sequence of ``# Title #`` is taken off with string methods, not with a lazy group followed by optional parts (the
shape that took time quadratic in a line's length: ``# a`` and 40,000 spaces took 4.5 s to find one heading).
"""

from __future__ import annotations

import re

HEADING_OR_FENCE = re.compile(
    r"^ {0,3}(?:(?P<marks>#{1,6})[ \t]+(?P<rest>[^\n]*)|(?P<fence>`{3,}|~{3,}))",
    re.MULTILINE,
)
"""An ATX heading's opening (``marks``, then the ``rest`` of its line) or a code fence, at a line start."""

FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
"""A code fence at the start of one line (``match`` it against the line)."""

ATX_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+([^\n]*)")
"""An ATX heading line: its marks and the rest of the line (``match`` it against the line; see :func:`atx_title`)."""


def atx_title(rest: str) -> str:
    """The title of an ATX heading from the rest of its line: without the closing ``#`` sequence and blanks.

    CommonMark: ``# Top ##`` is ``Top``; a closing sequence needs a blank before it, so ``# C#`` stays ``C#``;
    ``# #`` is an empty heading.

    Args:
        rest: The line after the opening marks and the blanks that follow them.

    Returns:
        The title (empty for an empty heading).
    """
    title = rest.rstrip(" \t\r")
    body = title.rstrip("#")
    if body != title and (not body or body[-1] in " \t"):
        title = body
    return title.strip(" \t\r")


def is_fence_close(marker: str, opening: str) -> bool:
    """Whether the fence ``marker`` closes the code block that ``opening`` opened (same character, at least as long)."""
    return marker[0] == opening[0] and len(marker) >= len(opening)
