"""Fixtures of the retrieval tests: a tiny cross-encoder built once per session (nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragindex.testing.tiny_cross_encoder import build_tiny_cross_encoder


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved one-layer BERT cross-encoder with one label, loadable by ``CrossEncoder(path)``."""
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("models") / "tiny-ce")
