"""Fixtures of the engine integration tests: real engines (SQLite, Qdrant Edge, the shipped model) in ``tmp_path``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.pipeline import faults


@pytest.fixture(autouse=True)
def _disarm() -> Iterator[None]:
    """Disarm every failpoint afterwards, also when a test that armed one failed half way."""
    yield
    faults.disarm_all()


@pytest.fixture
def engine_settings() -> dict[str, Any]:
    """Settings of every engine of a module besides its data dir; override it in a module to change them."""
    return {}


@pytest.fixture
def make_engine(tmp_path: Path, engine_settings: dict[str, Any]) -> Callable[..., Engine]:
    """Open an Engine on ``tmp_path / "d"`` with ``engine_settings`` and these (the caller closes it, e.g. ``with``)."""

    def make(**settings: Any) -> Engine:
        return Engine(Settings(data_dir=tmp_path / "d", **{**engine_settings, **settings}))

    return make


@pytest.fixture
def engine(make_engine: Callable[..., Engine], corpus: Path, corpus_files: dict[str, str]) -> Iterator[Engine]:
    """An engine with ``corpus`` ingested: every document added, truth store and index in agreement."""
    with make_engine() as eng:
        report = eng.ingest([corpus])
        assert report.documents["added"] == len(corpus_files)
        assert eng.verify().ok
        yield eng
