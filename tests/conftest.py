"""Test isolation: every test gets its own data dir and a clean RAGINDEX_* environment."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("RAGINDEX_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("RAGINDEX_DATA_DIR", str(tmp_path / "ragindex-data"))
    yield
