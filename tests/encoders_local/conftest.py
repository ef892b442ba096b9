"""One tiny BGE-M3-style checkpoint per test session (built locally, nothing downloaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragindex.testing.tiny_models import build_tiny_bge_m3


@pytest.fixture(scope="session")
def tiny_bge_m3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bge_m3(tmp_path_factory.mktemp("models") / "tiny-bge-m3", seed=7)
