"""Opaque page cursors for keyset pagination (document and job listings of the CLI and the HTTP API).

A cursor is the sort key of the last row of a page, as url-safe base64 JSON tagged with what it pages, so a
page never shifts when rows are added or removed meanwhile and a cursor of one listing is refused by another.
Callers must treat it as opaque: its content is not part of the API.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import Any

from ragindex.errors import ValidationError

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


def encode_cursor(listing: str, key: Sequence[Any]) -> str:
    """The cursor after the row whose sort key is ``key`` in ``listing`` (``documents``, ``jobs``)."""
    raw = json.dumps([listing, *key], separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(listing: str, cursor: str) -> list[Any]:
    """The sort key a cursor of ``listing`` carries; ValidationError for anything else."""
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error):
        value = None
    if not isinstance(value, list) or not value or value[0] != listing:
        raise ValidationError("cursor", f"not a cursor of the {listing} listing; pass the next_cursor of its last page")
    return value[1:]


def check_limit(limit: int) -> int:
    """``limit`` when it is a valid page size (1 to :data:`MAX_LIMIT`); ValidationError otherwise."""
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationError("limit", f"must be between 1 and {MAX_LIMIT}; got {limit}")
    return limit
