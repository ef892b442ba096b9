"""The client tests run against a real ``ragindex serve`` subprocess (tests/servekit.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import servekit
from servekit import Served


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory, onnx_cache_dir: Path) -> Iterator[Served]:
    server = servekit.acquire(tmp_path_factory, onnx_cache_dir)
    try:
        yield server
    finally:
        servekit.release(server)
