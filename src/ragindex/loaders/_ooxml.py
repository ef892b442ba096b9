"""Checks on an Office Open XML package (docx, pptx, xlsx) before a parser reads it.

An OOXML file is a zip archive. python-pptx and python-docx read every part of it into memory and openpyxl
parses its shared strings whole, so a small hostile file that inflates to gigabytes would exhaust the parser
process. :func:`check_package` reads only the zip's central directory (sizes as declared there) and refuses:

* anything that is not a zip: a password-protected Office file (an OLE2 compound file holding an
  ``EncryptionInfo`` stream), a legacy binary ``.doc``/``.ppt``/``.xls`` under a new suffix, a truncated file;
* a zip bomb: more than :data:`MAX_UNCOMPRESSED_BYTES` of compressible parts, or one part over
  :data:`RATIO_FLOOR_BYTES` that inflates more than :data:`MAX_RATIO` times.

Parts that barely compress (pictures, video: at most twice their stored size) do not count towards the total: their
inflated size is bounded by the file's own, so a deck full of video is not refused for its media.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from ragindex.errors import DocumentLoadError

MAX_UNCOMPRESSED_BYTES = 200 * 1024 * 1024
"""Most bytes the compressible parts of a package may inflate to (a 100,000-row sheet is ~15-40 MB of XML)."""
MAX_RATIO = 100
"""Most a part over :data:`RATIO_FLOOR_BYTES` may inflate (worksheet XML compresses ~5-30 times; a bomb ~1,000)."""
RATIO_FLOOR_BYTES = 10 * 1024 * 1024
"""Parts smaller than this are never refused for their ratio (a tiny, very regular part compresses well)."""

_OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTION_INFO = "EncryptionInfo".encode("utf-16-le")
_MEDIA_RATIO = 2


def check_package(path: Path, data: bytes, kind: str) -> None:
    """Refuse ``data`` unless it is a zip package of sane size (see the module).

    Args:
        path: The file, named in the error.
        data: The file's bytes.
        kind: The format's name for messages (``"xlsx"``, ``"pptx"``, ``"docx"``).

    Raises:
        DocumentLoadError: Password-protected, a legacy binary Office file, not a zip (or truncated), or a zip bomb.
    """
    if data.startswith(_OLE2_MAGIC):
        if _ENCRYPTION_INFO in data:
            raise DocumentLoadError(
                f"{path.name}: the {kind} is encrypted with a password; remove the password and ingest it again",
                path=str(path),
            )
        raise DocumentLoadError(
            f"{path.name}: a legacy binary Office file (.doc/.ppt/.xls), not a {kind}; save it as .{kind}",
            path=str(path),
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise DocumentLoadError(
            f"{path.name}: not a readable {kind} file: not a zip package, or a truncated one ({exc})", path=str(path)
        ) from exc
    total = 0
    for member in members:
        stored = max(member.compress_size, 1)
        if member.file_size > RATIO_FLOOR_BYTES and member.file_size / stored > MAX_RATIO:
            raise DocumentLoadError(
                f"{path.name}: part {member.filename} inflates {member.file_size / stored:,.0f} times to "
                f"{member.file_size:,} bytes (a zip bomb?); refused before parsing",
                path=str(path),
            )
        if member.file_size > _MEDIA_RATIO * stored:
            total += member.file_size
    if total > MAX_UNCOMPRESSED_BYTES:
        raise DocumentLoadError(
            f"{path.name}: its parts inflate to {total:,} bytes, more than {MAX_UNCOMPRESSED_BYTES:,}; "
            f"split the {kind} or export its content",
            path=str(path),
        )


def load_error(path: Path, kind: str, exc: Exception) -> DocumentLoadError:
    """The error for a package the parser could not read (a damaged part, a part missing, a wrong format)."""
    return DocumentLoadError(f"{path.name}: not a readable {kind} file ({type(exc).__name__}: {exc})", path=str(path))
