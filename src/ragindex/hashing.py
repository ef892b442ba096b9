"""Content hashing shared by every layer (chunk content hashes, key columns, file hashes)."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def sha256_text(text: str) -> str:
    """Hex sha256 of a string's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of raw bytes (a file's hash)."""
    return hashlib.sha256(data).hexdigest()


def canonical_json(value: Any) -> str:
    """``value`` as JSON in one spelling (sorted keys, no ASCII escapes; dates as strings): equal values, equal text."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
