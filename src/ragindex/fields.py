"""How listings show a row: some of its attributes, under their own names."""

from __future__ import annotations

from typing import Any


def pick(row: object, *names: str) -> dict[str, Any]:
    """``{name: row.<name>}`` for each of ``names``, in their order (the JSON keys of a summary)."""
    return {name: getattr(row, name) for name in names}
