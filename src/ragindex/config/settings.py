"""The one settings model of ragindex, grouped by layer.

The fields are defined by the section models of :mod:`ragindex.config.sections`, one per layer, and
:class:`Settings` inherits them all. So every field keeps a flat environment name ``RAGINDEX_<FIELD>``
(``RAGINDEX_CHUNK_SIZE``), a flat keyword (``Settings(chunk_size=256)``) and a flat attribute
(``settings.chunk_size``), while a layer receives only its own part (``settings.chunking``).
Each field has a default that gives the embedded setup and a line in the settings reference of the docs
(docs/reference/settings.md, rendered from these models by ``ragindex.config.reference``). Settings are
validated once at start-up and passed down explicitly; nothing reads the environment anywhere else.
"""

from __future__ import annotations

import hashlib
import json
from typing import TypeVar

from pydantic_settings import BaseSettings, SettingsConfigDict

from ragindex.config.http import HttpSettings
from ragindex.config.sections import (
    DEFAULT_DENSE_MODEL,
    DEFAULT_RERANK_MODEL,
    Bm25Settings,
    ChunkerName,
    ChunkingSettings,
    DenseSettings,
    DriftSettings,
    EncoderServerSettings,
    IndexSettings,
    LoadingSettings,
    PipelineSettings,
    Precision,
    RerankSettings,
    RetrievalSettings,
    RuntimeSettings,
    SettingsSection,
    SparseSettings,
    StoreSettings,
)

__all__ = ["DEFAULT_DENSE_MODEL", "DEFAULT_RERANK_MODEL", "SECTIONS", "ChunkerName", "Precision", "Settings"]

_SectionT = TypeVar("_SectionT", bound=SettingsSection)

LIMITS = {"max_file_bytes", "max_chunks_per_document", "parse_timeout_seconds"}
"""Loading settings that refuse a file but never change its chunks (left out of the chunking fingerprint)."""

SECTIONS: dict[str, type[SettingsSection]] = {
    "store": StoreSettings,
    "index": IndexSettings,
    "loading": LoadingSettings,
    "chunking": ChunkingSettings,
    "dense": DenseSettings,
    "bm25": Bm25Settings,
    "sparse": SparseSettings,
    "retrieval": RetrievalSettings,
    "rerank": RerankSettings,
    "drift": DriftSettings,
    "runtime": RuntimeSettings,
    "pipeline": PipelineSettings,
    "encoder_server": EncoderServerSettings,
    "http": HttpSettings,
}
"""Each section by the name of its :class:`Settings` property, in the order of the settings reference."""


class Settings(
    StoreSettings,
    IndexSettings,
    LoadingSettings,
    ChunkingSettings,
    DenseSettings,
    Bm25Settings,
    SparseSettings,
    RetrievalSettings,
    RerankSettings,
    DriftSettings,
    RuntimeSettings,
    PipelineSettings,
    EncoderServerSettings,
    HttpSettings,
    BaseSettings,
):
    """All ragindex settings (environment prefix ``RAGINDEX_``, ``.env`` supported).

    The fields and validators come from the section models; a property per section
    (``store``, ``index``, ``loading``, ``chunking``, ...) returns that section, frozen.
    """

    model_config = SettingsConfigDict(
        env_prefix="RAGINDEX_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        frozen=False,
        validate_default=True,
    )

    def section(self, model: type[_SectionT]) -> _SectionT:
        """The section ``model`` holding this object's values of its fields (validated again, frozen)."""
        return model.model_validate({name: getattr(self, name) for name in model.model_fields})

    @property
    def store(self) -> StoreSettings:
        """Where the truth store and the embedded index live."""
        return self.section(StoreSettings)

    @property
    def index(self) -> IndexSettings:
        """The vector index backend, collections and shards."""
        return self.section(IndexSettings)

    @property
    def loading(self) -> LoadingSettings:
        """What the loaders read."""
        return self.section(LoadingSettings)

    @property
    def chunking(self) -> ChunkingSettings:
        """The chunker and its sizes."""
        return self.section(ChunkingSettings)

    @property
    def chunking_fingerprint(self) -> str:
        """sha256 of every setting that shapes a document's chunks and sections (loading, chunking, tokenizer).

        Each document records the fingerprint it was chunked with; an ingest re-chunks documents whose
        fingerprint differs, so a changed chunk size never leaves a set with two chunk sizes.
        """
        lexical = self.bm25_enabled or self.sparse_provider != "none"
        chunking = self.chunking.model_dump(mode="json")
        if not chunking["chunk_whole_if_fits"]:  # added off: sets chunked before it keep their fingerprint
            del chunking["chunk_whole_if_fits"]
        shaping = {
            "loading": self.loading.model_dump(mode="json", exclude=LIMITS),
            "chunking": chunking,
            "tokenizer": self.dense_model if self._chunks_by_tokens else None,
            "sections": lexical and self.section_max_chars > 0,  # sections exist only for a lexical kind
        }
        return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode("utf-8")).hexdigest()

    @property
    def _chunks_by_tokens(self) -> bool:
        """Whether the dense model's tokenizer shapes the chunks (then it is part of the chunking fingerprint)."""
        whole = self.chunk_whole_if_fits and self.dense_provider == "local" and self.chunker != "structure"
        return self.chunker == "structure" or whole

    @property
    def dense(self) -> DenseSettings:
        """The dense encoder (local or OpenAI-compatible HTTP)."""
        return self.section(DenseSettings)

    @property
    def bm25(self) -> Bm25Settings:
        """The BM25 sparse vectors."""
        return self.section(Bm25Settings)

    @property
    def sparse(self) -> SparseSettings:
        """The learned sparse encoder (BGE-M3 local, HTTP or remote)."""
        return self.section(SparseSettings)

    @property
    def retrieval(self) -> RetrievalSettings:
        """Candidates and fusion."""
        return self.section(RetrievalSettings)

    @property
    def rerank(self) -> RerankSettings:
        """The cross-encoder reranker."""
        return self.section(RerankSettings)

    @property
    def drift(self) -> DriftSettings:
        """The score-drift watch and the reference-query check."""
        return self.section(DriftSettings)

    @property
    def runtime(self) -> RuntimeSettings:
        """How local models load and run."""
        return self.section(RuntimeSettings)

    @property
    def pipeline(self) -> PipelineSettings:
        """The chunk state machine."""
        return self.section(PipelineSettings)

    @property
    def encoder_server(self) -> EncoderServerSettings:
        """``ragindex encoder-server``."""
        return self.section(EncoderServerSettings)

    @property
    def http(self) -> HttpSettings:
        """The HTTP servers' limits on slow clients."""
        return self.section(HttpSettings)
