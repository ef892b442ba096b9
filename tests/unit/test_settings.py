from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from ragindex.config import (
    SECTIONS,
    ChunkingSettings,
    DenseSettings,
    IndexSettings,
    Settings,
    SettingsSection,
    SparseSettings,
)
from ragindex.config.reference import render_block, render_page

SETTINGS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "settings.md"


def test_settings_reference_page_is_generated_from_the_model() -> None:
    assert render_page() == SETTINGS_PAGE.read_text(encoding="utf-8"), (
        "docs/reference/settings.md is stale: regenerate it with `python scripts/gen_reference.py`"
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
        {"dense_precision": "int4"},
    ],
)
def test_invalid_settings_fail_loudly(overrides: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Settings(**overrides)  # type: ignore[arg-type]


def test_every_field_belongs_to_exactly_one_section() -> None:
    owners: dict[str, list[str]] = {}
    for name, section in SECTIONS.items():
        for field in section.model_fields:
            owners.setdefault(field, []).append(name)
    assert {field: names for field, names in owners.items() if len(names) > 1} == {}
    assert set(owners) == set(Settings.model_fields)
    assert set(SECTIONS.values()) == {base for base in Settings.__mro__ if issubclass(base, SettingsSection)} - {
        SettingsSection,
        Settings,
    }


def test_each_section_property_returns_its_section() -> None:
    settings = Settings()
    for name, section in SECTIONS.items():
        part = getattr(settings, name)
        assert type(part) is section
        assert part.model_dump() == {field: getattr(settings, field) for field in section.model_fields}


def test_sections_hold_the_flat_values(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        chunker="fixed",
        chunk_size=200,
        chunk_overlap=20,
        index_backend="qdrant",
        qdrant_path=tmp_path / "q",
        bucket_count=2,
        json_id_field="key",
        dense_model="some/model",
        embed_batch_size=8,
        bm25_k1=1.8,
        sparse_provider="bge_m3_http",
        sparse_http_endpoint="http://127.0.0.1:1",
        fusion="dbsf",
        rerank_enabled=True,
        hf_offline=False,
        max_attempts=2,
        encoder_server_api_key="k",
    )
    assert settings.chunking == ChunkingSettings(chunker="fixed", chunk_size=200, chunk_overlap=20)
    assert settings.store.data_dir == tmp_path
    assert settings.store.resolved_database_url == settings.resolved_database_url
    assert settings.store.index_dir == settings.index_dir == tmp_path / "index"
    assert settings.index.index_backend == "qdrant" and settings.index.bucket_count == 2
    assert settings.loading.json_id_field == "key"
    assert settings.dense.dense_model == "some/model" and settings.dense.embed_batch_size == 8
    assert settings.bm25.bm25_k1 == 1.8
    assert settings.sparse.sparse_http_endpoint == "http://127.0.0.1:1"
    assert settings.retrieval.fusion == "dbsf"
    assert settings.rerank.rerank_enabled is True
    assert settings.runtime.hf_offline is False
    assert settings.pipeline.max_attempts == 2
    key = settings.encoder_server.encoder_server_api_key
    assert key is not None and key.get_secret_value() == "k"


def test_flat_environment_names_reach_the_sections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGINDEX_CHUNK_SIZE", "256")
    monkeypatch.setenv("RAGINDEX_CHUNK_OVERLAP", "32")
    monkeypatch.setenv("RAGINDEX_RRF_WEIGHTS", '{"dense": 2.0}')
    monkeypatch.setenv("RAGINDEX_DENSE_API_KEY", "secret")
    settings = Settings()
    assert settings.chunk_size == 256 and settings.chunking.chunk_size == 256
    assert settings.chunking.chunk_overlap == 32
    assert settings.retrieval.rrf_weights == {"dense": 2.0}
    key = settings.dense.dense_api_key
    assert key is not None and key.get_secret_value() == "secret"


def test_a_copy_with_updates_gives_updated_sections() -> None:
    settings = Settings()
    assert settings.model_copy(update={"optimize_min_points": 0}).index.optimize_min_points == 0
    assert settings.index.optimize_min_points == 20000


def test_sections_are_frozen_and_refuse_unknown_fields() -> None:
    chunking = Settings().chunking
    with pytest.raises(ValidationError):
        chunking.chunk_size = 100  # type: ignore[misc]
    with pytest.raises(ValidationError):
        ChunkingSettings(chunk_sise=100)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("section", "values", "message"),
    [
        (ChunkingSettings, {"chunk_size": 100, "chunk_overlap": 100}, "chunk_overlap"),
        (ChunkingSettings, {"chunk_tokens": 64, "chunk_token_overlap": 64}, "chunk_token_overlap"),
        (IndexSettings, {"index_backend": "qdrant"}, "RAGINDEX_QDRANT_URL"),
        (DenseSettings, {"dense_provider": "openai"}, "RAGINDEX_DENSE_URL"),
        (DenseSettings, {"dense_send_dimensions": True}, "RAGINDEX_DENSE_DIMENSIONS"),
        (SparseSettings, {"sparse_provider": "bge_m3_http"}, "RAGINDEX_SPARSE_HTTP_ENDPOINT"),
        (SparseSettings, {"sparse_provider": "remote_bge_m3"}, "RAGINDEX_BGE_M3_SERVICE_URL"),
    ],
)
def test_section_validators_raise_alone_and_in_settings(
    section: type[SettingsSection], values: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        section.model_validate(values)
    with pytest.raises(ValidationError, match=message):
        Settings.model_validate(values)


def test_settings_reference_lists_every_environment_name_under_its_section() -> None:
    block = render_block()
    for name, section in SECTIONS.items():
        heading = block.index(f"(`settings.{name}`)")
        following = [block.find(f"(`settings.{other}`)") for other in SECTIONS if other != name]
        end = min([i for i in following if i > heading], default=len(block))
        for field in section.model_fields:
            assert f"`RAGINDEX_{field.upper()}`" in block[heading:end]
