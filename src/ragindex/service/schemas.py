"""Request and response bodies of the HTTP API (search results are ``SearchResult.to_dict()`` verbatim)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragindex.types import MAX_CONTEXT_CHARS

MAX_ID = 2**63 - 1  # ids are BIGINT in the truth store


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchRequest(_Body):
    """``POST /v1/search``: the fields of ``ragindex search``."""

    query: str = Field(max_length=20_000, description="The query text (empty: no hits).")
    set_id: int = Field(gt=0, le=MAX_ID, description="The set to search (of the key's tenant).")
    doc_ids: list[Annotated[int, Field(gt=0, le=MAX_ID)]] | None = Field(
        None, max_length=10_000, description="Only these documents."
    )
    mode: Literal["dense", "bm25", "sparse", "hybrid"] | None = Field(None, description="Default: hybrid.")
    fusion: Literal["rrf", "dbsf", "combine", "boost"] | None = Field(None, description="Hybrid fusion.")
    top_k: int | None = Field(None, ge=1, le=1000, description="Hits to return.")
    score_threshold: float | None = Field(None, description="Drop hits below this score (range depends on mode).")
    rerank: bool | None = Field(None, description="Cross-encoder rerank (when the engine supports it).")
    expand: Literal["none", "neighbours", "section"] | None = Field(
        None, description="Each hit's `context`: its neighbouring chunks or its section. Default: RAGINDEX_EXPAND."
    )
    context_chars: int | None = Field(
        None, ge=0, le=MAX_CONTEXT_CHARS, description="Most characters of a context. Default: RAGINDEX_CONTEXT_CHARS."
    )
    group_by: Literal["none", "section", "document"] | None = Field(
        None, description="Merge hits of one section or document (others under `merged`). Default: RAGINDEX_GROUP_BY."
    )


class ChunkPatch(_Body):
    """``PATCH /v1/chunks/{chunk_id}``: new text (re-embedded only if it changed) and/or metadata to merge."""

    text: str | None = Field(None, max_length=1_000_000)
    metadata: dict[str, Any] | None = None


class RepairRequest(_Body):
    """``POST /v1/repair``."""

    dry_run: bool = Field(False, description="Only report what repair would do.")


class JobAccepted(BaseModel):
    """``202`` answer of an upload."""

    job_id: str
    status: str
    files: list[str] = Field(description="Saved file names (sanitised).")


class KeyInfo(BaseModel):
    """Who the calling key is."""

    key_id: str
    user_id: int
    admin: bool
