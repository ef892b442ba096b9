"""Content hashing shared by every layer (chunk content hashes, key columns, file hashes)."""

from __future__ import annotations

import hashlib


def sha256_text(text: str) -> str:
    """Hex sha256 of a string's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of raw bytes (a file's hash)."""
    return hashlib.sha256(data).hexdigest()
