"""The base of the settings sections (:mod:`ragindex.config.sections`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SettingsSection(BaseModel):
    """Base of the section models: frozen, unknown fields refused, defaults validated."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)
