"""Render the settings reference (docs/reference/settings.md) from the settings sections, so it cannot drift.

``python scripts/gen_reference.py`` writes it; a test checks that the committed page equals :func:`render_page`.
"""

from __future__ import annotations

import json

from pydantic import BaseModel
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


def section_table(section: type[BaseModel]) -> str:
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
    """The tables between their markers."""
    return f"{BEGIN}\n{settings_table()}\n{END}"


HEADER = """# Settings reference

Every setting is an environment variable (prefix `RAGINDEX_`), also read from a `.env` file in the working directory,
or a keyword of `ragindex.Settings`. The settings are grouped by the layer that reads them; the names stay flat
(`RAGINDEX_CHUNK_SIZE`, `Settings(chunk_size=256)`, `settings.chunk_size`), and `settings.chunking` gives the section
a layer receives. This page is generated from the settings sections (`python scripts/gen_reference.py`; a test keeps
it equal to the code).
"""


SERVICE = """## HTTP service and workers (`ServiceSettings`)

What only `ragindex serve`, `ragindex worker` and `ragindex mcp --host` read (`ragindex.service.settings`): uploads,
jobs, the queue, API pages.
"""


def render_page() -> str:
    """The whole settings page: how settings are read, every engine section's table, then the service's."""
    from ragindex.service.settings import ServiceSettings

    service = f"{SERVICE}\n{section_table(ServiceSettings)}"
    return f"{HEADER}\n{render_block().replace('### ', '## ')}\n\n{service}\n"


if __name__ == "__main__":
    print(render_page(), end="")
