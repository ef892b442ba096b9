"""Shared fixtures and the test tiers.

Every test gets its own data dir and a clean RAGINDEX_* environment. ``corpus`` is a folder of
small documents (``corpus_files``, which a module overrides to write other files).

Tiers: a test that needs a database server, a broker or a browser gets the ``mysql``,
``postgres``, ``broker`` or ``browser`` marker here, from the fixtures it uses (directly or through
other fixtures) and the directory it is in, so a new test cannot slip into ``make test-fast``
(which deselects those markers) by forgetting one. Marking a test by hand still works.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from corpora import THREE_DOCS, write_files

TESTS = Path(__file__).parent

# a word of a fixture's name (``empty_mysql_url``: empty, mysql, url) -> the marker of every test using it;
# a fixture chosen at run time (``request.getfixturevalue``) is not seen: mark those parameters by hand
FIXTURE_MARKERS = {
    "mysql": "mysql",
    "postgres": "postgres",
    "redis": "broker",
    "amqp": "broker",
    "nats": "broker",
}
# every test under tests/<directory> -> markers
DIRECTORY_MARKERS = {
    "browser": ("browser", "integration"),
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the tier markers that follow from a test's fixtures and directory (see the module docstring)."""
    for item in items:
        words = {word for fixture in item.fixturenames for word in fixture.split("_")}
        names = {marker for word, marker in FIXTURE_MARKERS.items() if word in words}
        try:
            directory = item.path.relative_to(TESTS).parts[0]
        except ValueError:  # a test outside tests/ (a path given on the command line)
            directory = ""
        names.update(DIRECTORY_MARKERS.get(directory, ()))
        for name in sorted(names - {m.name for m in item.iter_markers()}):
            item.add_marker(name)


@pytest.fixture(scope="session")
def onnx_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ONNX cache per session: the light encoder is exported once, not per test, and never into ~/.cache."""
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, onnx_cache_dir: Path) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("RAGINDEX_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("RAGINDEX_DATA_DIR", str(tmp_path / "ragindex-data"))
    monkeypatch.setenv("RAGINDEX_ONNX_CACHE_DIR", str(onnx_cache_dir))
    yield


@pytest.fixture
def corpus_files() -> dict[str, str]:
    """The files of ``corpus`` (name -> text); override it in a module to ingest other files."""
    return dict(THREE_DOCS)


@pytest.fixture
def corpus(tmp_path: Path, corpus_files: dict[str, str]) -> Path:
    """``corpus_files`` written to ``tmp_path / "corpus"``; tests may add or change files there."""
    return write_files(tmp_path / "corpus", corpus_files)
