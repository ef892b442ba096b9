"""Fixtures of the fault-injection suite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragindex.pipeline import faults
from ragindex.testing.tiny_models import build_tiny_bge_m3


@pytest.fixture(autouse=True)
def _disarm() -> Iterator[None]:
    faults.disarm_all()
    yield
    faults.disarm_all()


@pytest.fixture(scope="session")
def tiny_bge_m3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BGE-M3-style checkpoint, so the learned sparse stage (and its failpoints) runs for real."""
    return build_tiny_bge_m3(tmp_path_factory.mktemp("models") / "tiny-bge-m3", seed=7)
