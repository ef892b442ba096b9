"""Render the README configuration table from the Settings model (a test keeps the README in sync)."""

from __future__ import annotations

import json

from ragindex.config.settings import Settings

BEGIN = "<!-- settings-table:begin -->"
END = "<!-- settings-table:end -->"


def _default(name: str) -> str:
    field = Settings.model_fields[name]
    factory = field.default_factory
    value = factory() if factory is not None else field.default  # type: ignore[call-arg]
    if value is None:
        return "—"
    if isinstance(value, list | dict):
        return f"`{json.dumps(value)}`"
    return f"`{value}`"


def settings_table() -> str:
    """The markdown table: environment variable, default, meaning."""
    rows = ["| Variable | Default | Meaning |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        description = (field.description or "").replace("|", "\\|")
        rows.append(f"| `RAGINDEX_{name.upper()}` | {_default(name)} | {description} |")
    return "\n".join(rows)


def render_block() -> str:
    """The table between its README markers."""
    return f"{BEGIN}\n{settings_table()}\n{END}"


if __name__ == "__main__":
    print(render_block())
