from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from ragindex.config.reference import render_block
from ragindex.config.settings import Settings

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_configuration_table_is_generated_from_the_model() -> None:
    assert render_block() in README.read_text(encoding="utf-8"), (
        "README configuration table is stale: regenerate it with `python -m ragindex.config.reference`"
    )


def test_env_prefix_and_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RAGINDEX_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("RAGINDEX_CHUNKER", "fixed")
    monkeypatch.setenv("RAGINDEX_BUCKET_COUNT", "8")
    monkeypatch.setenv("RAGINDEX_JSON_TEXT_FIELDS", '["body"]')
    settings = Settings()
    assert settings.data_dir == tmp_path and settings.chunker == "fixed" and settings.bucket_count == 8
    assert settings.json_text_fields == ["body"]
    assert settings.resolved_database_url == f"sqlite:///{(tmp_path / 'ragindex.db').resolve()}"


@pytest.mark.parametrize(
    "overrides",
    [
        {"chunk_size": 100, "chunk_overlap": 100},
        {"bucket_count": 0},
        {"chunker": "sentences"},
        {"collection_prefix": "1bad-name"},
        {"index_backend": "qdrant"},
        {"dense_precision": "int8"},
    ],
)
def test_invalid_settings_fail_loudly(overrides: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Settings(**overrides)  # type: ignore[arg-type]
