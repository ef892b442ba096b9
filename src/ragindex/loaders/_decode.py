"""Byte-to-text decoding shared by the text formats (text, markdown, records, html), and their binary check."""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from ragindex.errors import DocumentLoadError

_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
# formats that are never text: the first bytes of the file
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "a PDF"),
    (b"PK\x03\x04", "a ZIP archive (docx, xlsx, epub, jar, ...)"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"\x7fELF", "an ELF executable"),
    (b"\x1f\x8b", "gzip data"),
    (b"\xfd7zXZ\x00", "xz data"),
    (b"7z\xbc\xaf\x27\x1c", "a 7z archive"),
    (b"\x28\xb5\x2f\xfd", "zstd data"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an OLE2 file (.doc, .xls, .msg)"),
    (b"SQLite format 3\x00", "a SQLite database"),
)
_SAMPLE = 8192
_MAX_NOISE = 0.3  # share of control characters and U+FFFD in the first 8 KiB above which bytes are not text
_NOISE = re.compile("[\x00-\x08\x0e-\x1f\x7f\ufffd]")


def binary_reason(data: bytes, *, utf8: bool = True) -> str | None:
    """Why ``data`` is not text (a known magic number, NUL bytes, mostly control bytes), or None for text.

    UTF-16 with a byte-order mark is text (its NUL bytes are half of each ASCII character); a UTF-16 or
    UTF-32 file without one has NUL bytes and counts as binary.

    Args:
        data: The bytes of a file.
        utf8: The format is read as UTF-8 (or UTF-16 with a BOM), so mostly undecodable bytes are noise; False
            for formats that declare another encoding (html), where only magic numbers and NUL bytes count.
    """
    for magic, what in _MAGIC:
        if data.startswith(magic):
            return f"the bytes of {what}"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        sample = data[:_SAMPLE].decode("utf-16", errors="replace")
        if "\x00" in sample:
            return "NUL characters"
    else:
        if b"\x00" in data:
            return "NUL bytes"
        sample = data[:_SAMPLE].decode("utf-8", errors="replace")
    noise = len(_NOISE.findall(sample)) if utf8 else 0
    if noise > _MAX_NOISE * len(sample):
        return f"{noise} of its first {len(sample)} characters are control characters or invalid UTF-8"
    return None


def refuse_binary(path: Path, data: bytes, *, utf8: bool = True) -> None:
    """Raise :class:`DocumentLoadError` ("binary content") when a text format's bytes are not text.

    Args:
        path: The file (named in the message).
        data: Its bytes.
        utf8: See :func:`binary_reason`.
    """
    reason = binary_reason(data, utf8=utf8)
    if reason is not None and utf8 and reason.endswith("invalid UTF-8") and _double_byte(data[:_SAMPLE]):
        raise _double_byte_error(path)  # text after all, in an encoding that has to be named
    if reason is not None:
        raise DocumentLoadError(
            f"{path.name}: binary content ({reason}), not {path.suffix or 'text'} text; remove it from the source, "
            "or convert it to UTF-8 text if it is text in another encoding",
            path=str(path),
        )


_LINE_BREAK = re.compile(r"\r\n?")


def decode_text(data: bytes, path: Path | None = None) -> tuple[str, tuple[str, ...]]:
    r"""Decode file bytes as UTF-8 (a UTF-8 or UTF-16 byte-order mark is honoured and dropped).

    Bytes that are not UTF-8 follow one rule (see :func:`_legacy`): a file with no UTF-8 sequence at all whose
    high bytes stand alone is Western text in Windows-1252 (a superset of Latin-1) and is decoded as such, with a
    warning; a file whose high bytes come in pairs is text in a double-byte legacy encoding (GBK, Big5, Shift_JIS),
    which cannot be told apart reliably, and is refused; a UTF-8 file with a few corrupt bytes keeps its text, each
    bad byte replaced by U+FFFD, with a warning. Line breaks are normalised to ``\n``.

    Args:
        data: The raw bytes of a file.
        path: The file, named in the error.

    Returns:
        The text and the warnings to attach to the resulting documents.

    Raises:
        DocumentLoadError: The text is in a double-byte legacy encoding.
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
            text, warnings = _legacy(data, path)
    return normalise_newlines(text), warnings


_HIGH_RUN = re.compile(rb"[\x80-\xff]+")


def _legacy(data: bytes, path: Path | None) -> tuple[str, tuple[str, ...]]:
    """The text of bytes that are not valid UTF-8, and the warning that says how they were read."""
    # surrogateescape maps every bad byte to exactly one lone surrogate, so the count is in bytes.
    escaped = data.decode("utf-8", errors="surrogateescape")
    text, replaced = _ESCAPED_BYTE.subn("\ufffd", escaped)
    # UTF-8 characters at least half as many as the bad bytes: a UTF-8 file with a few corrupt bytes (Latin-1 text
    # almost never holds a valid UTF-8 sequence; GBK text holds some by chance, among many more bad bytes)
    if 2 * sum(1 for c in text if c > "\x7f" and c != "\ufffd") >= replaced:
        return text, (f"not valid UTF-8: {replaced} bytes replaced with U+FFFD",)
    if _double_byte(data):
        raise _double_byte_error(path)
    # cp1252's five undefined bytes are the C1 controls of Latin-1
    text = _ESCAPED_BYTE.sub(lambda m: chr(ord(m.group()) - 0xDC00), data.decode("cp1252", errors="surrogateescape"))
    return text, ("not valid UTF-8: read as Windows-1252 (Latin-1); save the file as UTF-8 to silence this",)


_DOUBLE_BYTE_ENCODINGS = ("gb18030", "big5", "shift_jis", "euc_kr")


def _double_byte(data: bytes) -> bool:
    """The bytes read as text in a double-byte legacy encoding.

    Most high bytes come in runs (not alone, as the accents of Latin-1 text do), and the sample decodes strictly in
    one of those encodings (random bytes do not).
    """
    runs = [len(run) for run in _HIGH_RUN.findall(data)]
    if sum(n for n in runs if n > 1) <= sum(runs) / 2:
        return False
    sample = data[: max(data.rfind(b"\n", 0, _SAMPLE), 0) or _SAMPLE]  # whole lines: no character cut in two
    for encoding in _DOUBLE_BYTE_ENCODINGS:
        try:
            text = sample.decode(encoding)
        except UnicodeDecodeError:
            continue
        if not _NOISE.search(text):
            return True
    return False


def _double_byte_error(path: Path | None) -> DocumentLoadError:
    name = path.name if path is not None else "the file"
    return DocumentLoadError(
        f"{name}: not UTF-8 text; its bytes look like a double-byte legacy encoding (GBK, Big5, Shift_JIS), "
        f"which ragindex does not guess: convert it to UTF-8 (iconv -f GBK -t UTF-8 {name} > {name}.utf8)",
        path=str(path) if path is not None else None,
    )


def normalise_newlines(text: str) -> str:
    r"""Turn ``\r\n`` and lone ``\r`` line breaks into ``\n``."""
    return _LINE_BREAK.sub("\n", text)
