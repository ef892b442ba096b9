"""A missing extra is an error naming ``pip install 'ragindex[<extra>]'``: every optional import, one module blocked
at a time (``sys.modules[name] = None`` makes ``import name`` fail as if it were not installed)."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from ragindex._optional import EXTRAS, require
from ragindex.errors import ConfigurationError, DocumentLoadError, MissingExtraError

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "examples"


def block(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)


def test_require_raises_an_import_error_that_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    block(monkeypatch, "fastapi")
    with pytest.raises(MissingExtraError) as info:
        require("service", "the HTTP service", "fastapi")
    error = info.value
    assert isinstance(error, ImportError) and isinstance(error, ConfigurationError)
    assert error.message == (
        "the HTTP service needs the 'service' extra (fastapi is not installed): pip install 'ragindex[service]'"
    )
    assert error.context == {"extra": "service", "module": "fastapi"} and error.name == "fastapi"
    assert error.exit_code == 3
    require("service", "the HTTP service", "json")  # an importable module passes


def test_every_extra_of_the_helper_is_declared_in_pyproject() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRAS) <= set(declared)
    assert "ragindex[service]" in declared["workers"]  # the workers import the service package


@pytest.mark.parametrize(
    ("module", "name", "make"),
    [
        ("docx", "bicycle_maintenance.docx", None),
        ("bs4", "coffee_brewing.html", None),
        ("pptx", "deck.pptx", "pptx"),
        ("openpyxl", "sheet.xlsx", "xlsx"),
    ],
)
def test_a_loader_without_its_extra_fails_that_file_naming_parsing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, module: str, name: str, make: str | None
) -> None:
    from ragindex.loaders.registry import LoaderRegistry

    path = EXAMPLES / name if make is None else tmp_path / name
    if make == "pptx":
        from pptx import Presentation

        deck = Presentation()
        deck.slides.add_slide(deck.slide_layouts[1]).shapes.title.text = "Tides"
        deck.save(str(path))
    elif make == "xlsx":
        import openpyxl

        book = openpyxl.Workbook()
        book.active.append(["tide", "height"])
        book.save(str(path))
    data = path.read_bytes()
    loader = LoaderRegistry().for_path(path)
    assert loader.load(path, data)  # readable with the extra
    block(monkeypatch, module)
    with pytest.raises(DocumentLoadError) as info:
        loader.load(path, data)
    assert f"{name}: reading .{path.suffix[1:]} files needs the 'parsing' extra" in info.value.message
    assert "pip install 'ragindex[parsing]'" in info.value.message
    assert not isinstance(info.value, ConfigurationError)  # one file's failure: the rest of the folder ingests


@pytest.mark.parametrize(
    ("url", "module", "extra"),
    [
        ("mysql+pymysql://root@127.0.0.1:3306/ragindex_nowhere", "pymysql", "mysql"),
        ("postgresql+psycopg://postgres@127.0.0.1:5432/ragindex_nowhere", "psycopg", "postgres"),
    ],
)
def test_a_database_url_without_its_driver_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, url: str, module: str, extra: str
) -> None:
    from ragindex.store.sql import SqlTruthStore

    block(monkeypatch, module)
    with pytest.raises(MissingExtraError, match=rf"pip install 'ragindex\[{extra}\]'"):
        SqlTruthStore(url)


def test_a_database_url_with_another_driver_names_the_supported_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragindex.store.sql import SqlTruthStore

    block(monkeypatch, "MySQLdb")  # SQLAlchemy's default MySQL driver, not one ragindex ships
    with pytest.raises(ConfigurationError) as info:
        SqlTruthStore("mysql://root@127.0.0.1:3306/ragindex_nowhere")
    assert "mysql+pymysql://" in info.value.message and "pip install 'ragindex[mysql]'" in info.value.message


def test_the_qdrant_server_backend_names_the_server_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragindex.index.qdrant_server import QdrantServerIndex

    block(monkeypatch, "qdrant_client")
    with pytest.raises(MissingExtraError, match=r"pip install 'ragindex\[server\]'"):
        QdrantServerIndex(url="http://127.0.0.1:6333")


@pytest.mark.parametrize(("url", "module"), [("redis://127.0.0.1:6379/0", "redis"), ("amqp://127.0.0.1/", "pika")])
def test_a_broker_without_its_client_names_the_workers_extra(
    monkeypatch: pytest.MonkeyPatch, url: str, module: str
) -> None:
    from ragindex.service.queue import build_broker

    block(monkeypatch, module)
    with pytest.raises(MissingExtraError, match=r"pip install 'ragindex\[workers\]'"):
        build_broker(url)


def test_the_docs_pages_name_the_service_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragindex.service import docs

    docs.check_assets()
    block(monkeypatch, "fastapi_offline")
    with pytest.raises(MissingExtraError, match="RAGINDEX_API_DOCS=false") as info:
        docs.check_assets()
    assert "pip install 'ragindex[service]'" in info.value.message
