"""Settings: one validated model read from the environment and ``.env``, grouped by layer into sections."""

from ragindex.config.sections import (
    Bm25Settings,
    ChunkingSettings,
    DenseSettings,
    EncoderServerSettings,
    IndexSettings,
    LoadingSettings,
    PipelineSettings,
    RerankSettings,
    RetrievalSettings,
    RuntimeSettings,
    SettingsSection,
    SparseSettings,
    StoreSettings,
)
from ragindex.config.settings import SECTIONS, Settings

__all__ = [
    "SECTIONS",
    "Bm25Settings",
    "ChunkingSettings",
    "DenseSettings",
    "EncoderServerSettings",
    "IndexSettings",
    "LoadingSettings",
    "PipelineSettings",
    "RerankSettings",
    "RetrievalSettings",
    "RuntimeSettings",
    "SettingsSection",
    "Settings",
    "SparseSettings",
    "StoreSettings",
]
