"""The one clock of ragindex: naive UTC, as every store keeps its timestamps."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """Naive UTC now (all timestamps in the stores are UTC)."""
    return datetime.now(UTC).replace(tzinfo=None)
