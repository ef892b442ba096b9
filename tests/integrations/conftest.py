"""The retrievers' tests: an embedded index of THREE_DOCS, and the real ``ragindex serve`` of tests/servekit.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import servekit
from corpora import THREE_DOCS, write_files
from ragindex.config.settings import Settings
from ragindex.engine import Engine
from servekit import Served


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory, onnx_cache_dir: Path) -> Iterator[Served]:
    server = servekit.acquire(tmp_path_factory, onnx_cache_dir)
    try:
        yield server
    finally:
        servekit.release(server)


@pytest.fixture(scope="session")
def embedded_dir(tmp_path_factory: pytest.TempPathFactory, onnx_cache_dir: Path) -> Path:
    """A data dir whose set 1 of user 1 holds THREE_DOCS (ingested, then the engine closed: no owner left)."""
    root = tmp_path_factory.mktemp("embedded")
    corpus = write_files(root / "corpus", THREE_DOCS)
    settings = Settings(_env_file=None, data_dir=root / "data", onnx_cache_dir=onnx_cache_dir)  # type: ignore[call-arg]
    with Engine(settings) as engine:
        report = engine.ingest([corpus], user_id=1, set_id=1)
    assert not report.failures
    return root / "data"
