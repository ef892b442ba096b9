"""Byte-to-text decoding shared by the plain-text loaders (text, markdown, records)."""

from __future__ import annotations

import codecs
import re

_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
_LINE_BREAK = re.compile(r"\r\n?")


def decode_text(data: bytes) -> tuple[str, tuple[str, ...]]:
    r"""Decode file bytes as UTF-8 (a UTF-8 or UTF-16 byte-order mark is honoured and dropped).

    Undecodable bytes are replaced by U+FFFD, one per byte, and reported as a warning
    instead of failing the file. Line breaks are normalised to ``\n``.

    Args:
        data: The raw bytes of a file.

    Returns:
        The text and the warnings to attach to the resulting documents.
    """
    warnings: tuple[str, ...] = ()
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        text = data.decode("utf-16", errors="replace")
    else:
        if data.startswith(codecs.BOM_UTF8):
            data = data[len(codecs.BOM_UTF8) :]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            # surrogateescape maps every bad byte to exactly one lone surrogate, so the count is in bytes.
            text, replaced = _ESCAPED_BYTE.subn("\ufffd", data.decode("utf-8", errors="surrogateescape"))
            warnings = (f"not valid UTF-8: {replaced} bytes replaced with U+FFFD",)
    return normalise_newlines(text), warnings


def normalise_newlines(text: str) -> str:
    r"""Turn ``\r\n`` and lone ``\r`` line breaks into ``\n``."""
    return _LINE_BREAK.sub("\n", text)
