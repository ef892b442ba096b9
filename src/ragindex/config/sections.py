"""The settings of each layer, one frozen model per section.

Each field is defined once, in the section of the layer that reads it, together with the validators that
check it. :class:`ragindex.config.Settings` inherits every section, so the environment names stay flat
(``RAGINDEX_CHUNK_SIZE``) and ``settings.chunk_size`` keeps working; ``settings.chunking`` gives the
:class:`ChunkingSettings` a layer receives. A section can also be built on its own
(``ChunkingSettings(chunk_size=256)``) for a layer used without the engine. The sections of the models
(dense, BM25, sparse, encoder server, rerank) are defined in :mod:`ragindex.config.encoders` and re-exported here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator

from ragindex.config.base import SettingsSection as SettingsSection
from ragindex.config.encoders import DEFAULT_DENSE_MODEL as DEFAULT_DENSE_MODEL
from ragindex.config.encoders import DEFAULT_RERANK_MODEL as DEFAULT_RERANK_MODEL
from ragindex.config.encoders import Bm25Settings as Bm25Settings
from ragindex.config.encoders import DenseSettings as DenseSettings
from ragindex.config.encoders import EncoderServerSettings as EncoderServerSettings
from ragindex.config.encoders import Precision as Precision
from ragindex.config.encoders import RerankSettings as RerankSettings
from ragindex.config.encoders import SparseSettings as SparseSettings
from ragindex.config.sources import parse_sources
from ragindex.types import MAX_CONTEXT_CHARS

ChunkerName = Literal["fixed", "recursive", "structure"]


class StoreSettings(SettingsSection):
    """Store: where the truth store and the embedded index live on disk."""

    data_dir: Path = Field(Path(".ragindex"), description="Directory holding the SQLite truth store and Edge shards.")
    database_url: str | None = Field(
        None, description="SQLAlchemy URL of the truth store; default `sqlite:///<data_dir>/ragindex.db`."
    )

    @field_validator("data_dir")
    @classmethod
    def _expand_data_dir(cls, value: Path) -> Path:
        return value.expanduser()

    @property
    def resolved_database_url(self) -> str:
        """The truth store URL, defaulting to a SQLite file under the data dir."""
        return self.database_url or f"sqlite:///{(self.data_dir / 'ragindex.db').resolve()}"

    @property
    def index_dir(self) -> Path:
        """Where the embedded Edge shards live."""
        return self.data_dir / "index"


class IndexSettings(SettingsSection):
    """Index: the vector index backend, its collections and shards."""

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
    optimize_min_points: int = Field(
        20000, ge=0, description="After an ingest, optimise (build HNSW) a shard once it has this many points."
    )
    index_lock_wait: float = Field(
        5.0,
        ge=0,
        le=3600,
        description="Seconds a process waits for another process to let go of the embedded index (Qdrant Edge, "
        "qdrant-client's local path: one owner process at a time) before it fails naming that process: two "
        "one-shot `ragindex search` started together both answer. 0: fail at once. Never waits on an Engine of "
        "the same process.",
    )

    @model_validator(mode="after")
    def _check_index_backend(self) -> Self:
        if self.index_backend == "qdrant" and not (self.qdrant_url or self.qdrant_path):
            raise ValueError("index_backend=qdrant needs RAGINDEX_QDRANT_URL or RAGINDEX_QDRANT_PATH")
        return self


class LoadingSettings(SettingsSection):
    """Loading: which files are read and how JSON / JSONL records become documents."""

    max_file_bytes: int = Field(50 * 1024 * 1024, ge=1, description="Files larger than this are refused.")
    max_chunks_per_document: int = Field(
        10_000,
        ge=1,
        description="A document cut into more chunks than this fails alone (a runaway parse; 10,000 chunks of "
        "512 characters is a ~1,500-page book).",
    )
    parse_timeout_seconds: float = Field(
        120.0,
        ge=0,
        description="Seconds one file may take to parse and chunk; files are parsed and chunked in a child process "
        "that is killed and replaced at the limit. 0: parse and chunk in the ingest process, with no limit and no "
        "isolation.",
    )
    ocr: bool = Field(
        True,
        description="OCR images (png, jpg, tiff) and pdf pages without a text layer with Tesseract "
        "(Debian `tesseract-ocr`); a page with a text layer is never OCR'd.",
    )
    ocr_languages: str = Field(
        "en,zh",
        pattern=r"^\s*[A-Za-z_-]+\s*(,\s*[A-Za-z_-]+\s*)*$",
        description="OCR languages, comma-separated: `en`, `zh`, `zh-tw`, `ja`, `ko`, `de`, `fr`, `es` or a "
        "Tesseract name (each needs its Debian `tesseract-ocr-*` package).",
    )
    max_pdf_pages: int = Field(
        2000, ge=1, description="A pdf (or multi-page tiff) with more pages fails alone, before it is parsed."
    )
    max_spreadsheet_cells: int = Field(
        300_000,
        ge=1,
        description="An xlsx workbook with more non-empty cells fails alone, never truncated (300,000 cells is "
        "~3.5 MB of table text, near `RAGINDEX_MAX_CHUNKS_PER_DOCUMENT`): export a sheet that large to csv or jsonl.",
    )

    @property
    def ocr_language_codes(self) -> tuple[str, ...]:
        """``ocr_languages`` as a tuple of codes."""
        return tuple(code.strip() for code in self.ocr_languages.split(",") if code.strip())

    parse_memory_mb: int = Field(
        4096,
        ge=0,
        description="Address space the parser process may use (MiB, `RLIMIT_AS`): a file that needs more (a "
        "decompression bomb, a runaway layout) fails alone. 0: no limit.",
    )
    json_text_fields: list[str] = Field(
        default_factory=lambda: ["title", "text"], description="Record fields joined (blank line) to form the text."
    )
    json_id_field: str = Field("_id", description="Record field used as the record id (else its position).")
    json_metadata_fields: list[str] = Field(
        default_factory=list, description="Record fields kept as chunk metadata (empty: every non-text field)."
    )


class ChunkingSettings(SettingsSection):
    """Chunking: how documents are cut into chunks."""

    chunker: ChunkerName = Field("recursive", description="`fixed` (chars), `recursive` (chars) or `structure`.")
    chunk_size: int = Field(512, ge=16, description="Characters per chunk for `fixed` and `recursive`.")
    chunk_overlap: int = Field(64, ge=0, description="Character overlap for `fixed` and `recursive`.")
    chunk_tokens: int = Field(
        480,
        ge=0,
        description="Tokens per chunk for `structure` (capped at the model's max); 0: the dense model's window.",
    )
    chunk_token_overlap: int = Field(0, ge=0, description="Token overlap when `structure` must split a section.")
    chunk_whole_if_fits: bool = Field(
        False,
        description="`fixed` and `recursive` keep a document that fits the local dense model's window (its "
        "`max_seq_length` in tokens, less room for the context line) as one chunk instead of cutting it by "
        "`RAGINDEX_CHUNK_SIZE`, so dense reads it whole; longer documents are cut as before. Helps collections of "
        "short abstracts (+0.009 dense nDCG@10), hurts others (SciFact -0.018): docs/evaluation.md. Ignored with "
        "an embeddings API (its window is unknown) and for documents with layout (pages, tables).",
    )
    section_max_chars: int = Field(
        4000,
        ge=0,
        description="Most characters per section, the unit BM25 and learned sparse score (chunks stay the dense "
        "unit); 0: no sections, every source scores chunks.",
    )
    contextual_chunks: bool = Field(
        True,
        description="Index each section, and each chunk under a heading, with its `Title > Heading` line in front "
        "(the text returned is the original).",
    )

    @model_validator(mode="after")
    def _check_chunk_overlaps(self) -> Self:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        if self.chunk_tokens and self.chunk_token_overlap >= self.chunk_tokens:
            raise ValueError("chunk_token_overlap must be smaller than chunk_tokens")
        return self


class RuntimeSettings(SettingsSection):
    """Model runtime: how the local models (dense, BGE-M3, rerank) load and run, and the async engine's threads."""

    hf_offline: bool = Field(True, description="Never contact the Hugging Face hub (local files only).")
    torch_threads: int | None = Field(None, ge=1, description="torch intra-op threads (default: torch's choice).")
    async_workers: int = Field(
        8,
        ge=1,
        le=256,
        description="Threads of `AsyncEngine` (the HTTP service's routes run on them): the most engine calls "
        "running at once, the others wait their turn. Index calls still run one at a time on the index thread "
        "and query encoding on the query thread.",
    )


class RetrievalSettings(SettingsSection):
    """Retrieval: how many candidates each source gives and how they are fused."""

    default_top_k: int = Field(10, ge=1, le=1000, description="Hits returned when the caller gives no top_k.")
    candidates_per_source: int = Field(50, ge=1, le=10000, description="Candidates fetched per source before fusion.")
    fusion: Literal["rrf", "dbsf", "combine", "boost"] = Field(
        "dbsf",
        description="Default hybrid fusion: `dbsf` (distribution-based score fusion), `rrf`, `combine` or `boost`.",
    )
    rrf_k: int = Field(60, ge=1, description="RRF constant k.")
    rrf_weights: dict[str, float] = Field(
        default_factory=dict, description='Per-source RRF weights, e.g. `{"dense": 1.0, "bm25": 1.0}`.'
    )
    fusion_calibration: bool = Field(
        True,
        description="Calibrate each set's fusion weights on pseudo-queries drawn from its own documents after an "
        "ingest that changed it a lot (sets of 200+ documents); a hybrid search with the default fusion uses them.",
    )
    expand: Literal["none", "neighbours", "section"] = Field(
        "section",
        description="Default `context` of each hit: `none`, `neighbours` (adjacent chunks) or `section` (its "
        "section), within `context_chars`.",
    )
    context_chars: int = Field(
        2000,
        ge=0,
        le=MAX_CONTEXT_CHARS,
        description="Most characters of a hit's `context` (its own text is kept whole).",
    )
    group_by: Literal["none", "section", "document"] = Field(
        "section",
        description="Default merging of hits: `none`, `section` or `document` (best chunk kept, others in `merged`).",
    )
    recall_enabled_sources: str | None = Field(
        None,
        description="Sources searches may run, comma-separated from `dense`, `bm25`, `sparse` (unset: every "
        "configured one). Hybrid fuses only these (names not configured are ignored); a single mode or a per-call "
        "`sources` outside them is an error. Read on every search.",
    )
    recall_on_source_error: Literal["fail", "degrade"] = Field(
        "fail",
        description="Default when one source of a search fails (encoder unreachable or timed out, index query "
        "failed): `fail` raises the error; `degrade` answers from the other sources and names the failed one in "
        "the result's `degraded`. Every source failing always raises.",
    )

    @field_validator("recall_enabled_sources")
    @classmethod
    def _check_recall_enabled_sources(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return ",".join(parse_sources(value))  # raises ValueError naming the valid sources


class DriftSettings(SettingsSection):
    """Drift: the score-distribution watch of searches and the pinned queries of `ragindex eval --reference`."""

    drift_enabled: bool = Field(
        True,
        description="Keep histograms of the top-1 and top-10 scores of searches per source and model fingerprint "
        "in the truth store (`ragindex status --scores`, `/metrics`) and warn when they shift.",
    )
    drift_window_queries: int = Field(
        200,
        ge=1,
        description="Searches per window; each closed window is compared with the reference window (the first one "
        "closed for its source and fingerprint).",
    )
    drift_max_shift: float = Field(
        0.2,
        gt=0,
        description="Log a warning when the median top-1 score of a closed window differs from the reference "
        "window's by more than this fraction of it.",
    )
    drift_flush_seconds: float = Field(
        30.0,
        gt=0,
        description="How often a background thread saves the scores held in memory (also once a window's worth is "
        "held, and at close); a search itself never writes.",
    )
    drift_keep_windows: int = Field(
        48, ge=1, description="Closed windows kept per source and fingerprint, besides the reference window."
    )
    drift_min_overlap: float = Field(
        0.8,
        ge=0,
        le=1,
        description="`ragindex eval --reference` fails (exit 1) when the mean overlap@k of the pinned queries' hits "
        "is below this.",
    )
    drift_max_score_shift: float = Field(
        0.1,
        ge=0,
        description="`ragindex eval --reference` fails (exit 1) when the scores of the pinned hits still found "
        "changed by more than this fraction on average.",
    )


class PipelineSettings(SettingsSection):
    """Pipeline: the chunk state machine (claim leases, stale claims, retries), reconciler, mass-delete guard."""

    indexing_stale_seconds: int = Field(
        600,
        ge=1,
        description="Last resort: INDEXING claims older than this that no registered owner holds (claims made "
        "before owners existed) are released by repair. Claims of an owner are released when it is gone.",
    )
    max_attempts: int = Field(5, ge=1, description="Automatic retries per chunk before it stays FAILED.")
    max_remove_fraction: float = Field(
        0.5,
        ge=0,
        le=1,
        description="A sync refuses to remove more than this share of a folder's documents (an unmounted disk, a "
        "wrong path) unless `--allow-mass-delete` is given; 1: never refuse.",
    )
    remove_guard_min_documents: int = Field(
        10, ge=1, description="`max_remove_fraction` guards folders holding at least this many documents."
    )
    reconcile_interval_seconds: float = Field(
        60.0,
        ge=0,
        description="Seconds between the passes of the reconciler that `ragindex serve` and `ragindex worker` run "
        "(retry FAILED copies, release stale claims, purge REMOVED copies, finish documents); 0: off.",
    )
    reconcile_backoff_seconds: float = Field(
        30.0,
        gt=0,
        description="Wait after a chunk's first failure before the reconciler retries it; doubles per attempt.",
    )
    reconcile_backoff_max_seconds: float = Field(
        3600.0, gt=0, description="Longest wait between two automatic retries of a chunk."
    )
    reconcile_batch: int = Field(
        1000, ge=1, description="Most chunks one reconciler pass retries (the rest: next pass)."
    )

    claim_lease_seconds: float = Field(
        30,
        gt=0,
        description="Lease of a claiming process: on a shared database, its claims can be taken once its "
        "heartbeat has not renewed the lease for this long.",
    )
    claim_heartbeat_seconds: float = Field(
        10, gt=0, description="How often a claiming process renews its lease (must be under the lease)."
    )

    @model_validator(mode="after")
    def _check_heartbeat_and_backoff(self) -> Self:
        if self.reconcile_backoff_max_seconds < self.reconcile_backoff_seconds:
            raise ValueError("reconcile_backoff_max_seconds must be at least reconcile_backoff_seconds")
        if self.claim_heartbeat_seconds >= self.claim_lease_seconds:
            raise ValueError(
                f"claim_heartbeat_seconds ({self.claim_heartbeat_seconds}) must be smaller than "
                f"claim_lease_seconds ({self.claim_lease_seconds})"
            )
        return self
