"""The one clock of ragindex: naive UTC, as every store keeps its timestamps."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """Naive UTC now (all timestamps in the stores are UTC)."""
    return datetime.now(UTC).replace(tzinfo=None)


def iso(value: datetime | None) -> str | None:
    """A timestamp as ISO 8601 text for JSON output, None kept as None."""
    return value.isoformat() if value is not None else None
