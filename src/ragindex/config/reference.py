"""Render the README configuration tables from the settings sections (a test keeps the README in sync)."""

from __future__ import annotations

import json

from pydantic.fields import FieldInfo

from ragindex.config.sections import SettingsSection
from ragindex.config.settings import SECTIONS

BEGIN = "<!-- settings-table:begin -->"
END = "<!-- settings-table:end -->"


def _default(field: FieldInfo) -> str:
    factory = field.default_factory
    value = factory() if factory is not None else field.default  # type: ignore[call-arg]
    if value is None:
        return "—"
    if isinstance(value, list | dict):
        return f"`{json.dumps(value)}`"
    return f"`{value}`"


def _heading(name: str, section: type[SettingsSection]) -> str:
    title, _, summary = (section.__doc__ or name).strip().splitlines()[0].partition(": ")
    return f"### {title} (`settings.{name}`)\n\n{summary[:1].upper()}{summary[1:]}".rstrip()


def section_table(section: type[SettingsSection]) -> str:
    """The markdown table of one section: environment variable, default, meaning."""
    rows = ["| Variable | Default | Meaning |", "|---|---|---|"]
    for name, field in section.model_fields.items():
        description = (field.description or "").replace("|", "\\|")
        rows.append(f"| `RAGINDEX_{name.upper()}` | {_default(field)} | {description} |")
    return "\n".join(rows)


def settings_table() -> str:
    """Every section: a heading (title, ``settings.<section>`` property, summary) and its table."""
    return "\n\n".join(f"{_heading(name, section)}\n\n{section_table(section)}" for name, section in SECTIONS.items())


def render_block() -> str:
    """The tables between their README markers."""
    return f"{BEGIN}\n{settings_table()}\n{END}"


if __name__ == "__main__":
    print(render_block())
