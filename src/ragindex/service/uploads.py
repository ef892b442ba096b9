"""Saving uploads: sanitised names under ``<blob_dir>/<user_id>/<set_id>/``, accepted types, size limits."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import unicodedata
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from starlette.exceptions import HTTPException

from ragindex.errors import DocumentTooLargeError, UnsupportedFormatError, ValidationError
from ragindex.service.asgi import HttpMiddleware

_UNSAFE = re.compile(r"[^\w.\- ]+")
MAX_NAME = 180


def sanitize_filename(raw: str | None) -> str:
    """The last path component of ``raw``, reduced to word characters, dots, dashes and spaces.

    No directory part, no leading dots (so no ``..`` and no hidden files), at most 180 characters
    keeping the suffix. Raises ValidationError when nothing usable is left.
    """
    name = unicodedata.normalize("NFC", (raw or "").replace("\\", "/"))
    name = PurePosixPath(name).name
    name = _UNSAFE.sub("_", name).strip().lstrip(".").strip()
    if len(name) > MAX_NAME:
        stem, dot, suffix = name.rpartition(".")
        name = (stem[: MAX_NAME - len(suffix) - 1] + dot + suffix) if dot and len(suffix) < 16 else name[:MAX_NAME]
    if not name or not PurePosixPath(name).stem:
        raise ValidationError("files", f"unusable file name {raw!r}")
    return name


def check_type(name: str, suffixes: frozenset[str]) -> None:
    """415 unless a loader handles the file's suffix."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix not in suffixes:
        raise UnsupportedFormatError(
            f"{name}: no loader for {suffix or 'files without a suffix'}; accepted: {', '.join(sorted(suffixes))}",
            filename=name,
        )


def check_size(name: str, size: int | None, limit: int) -> None:
    """413 when a file is larger than the engine's per-file limit."""
    if size is not None and size > limit:
        raise DocumentTooLargeError(
            f"{name} is {size} bytes, over the limit of {limit} (RAGINDEX_MAX_FILE_BYTES)", size=size, limit=limit
        )


def save(source: BinaryIO, target: Path) -> None:
    """Write an upload atomically (temp file + rename): a running ingest never reads half a file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    source.seek(0)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".upload-")
    try:
        with os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(source, out, 1024 * 1024)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class BodyLimitMiddleware(HttpMiddleware):
    """Refuse request bodies over ``limit`` bytes with 413, by Content-Length or while streaming.

    Uploads are parsed (spooled to disk) before any route code runs, so the limit must sit here.
    """

    def __init__(self, app: Any, limit: int) -> None:
        super().__init__(app)
        self.limit = limit

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Pass one HTTP request on, refusing its body once it passes the limit."""
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await _too_large(send, self.limit)
                return
        seen = 0

        async def limited() -> dict[str, Any]:
            nonlocal seen
            message: dict[str, Any] = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise HTTPException(413, _limit_message(self.limit))
            return message

        await self.app(scope, limited, send)


def _limit_message(limit: int) -> str:
    return f"request body over the limit of {limit} bytes (RAGINDEX_MAX_UPLOAD_BYTES)"


async def _too_large(send: Any, limit: int) -> None:
    import json

    body = json.dumps({"error": "DocumentTooLargeError", "message": _limit_message(limit)}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
