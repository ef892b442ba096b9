"""Request and response bodies of the HTTP API (search results are ``SearchResult.to_dict()`` verbatim)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from ragindex.types import MAX_CONTEXT_CHARS

MAX_ID = 2**53 - 1
"""The largest id the API takes: the largest integer every JSON client reads exactly (I-JSON, RFC 7493; a browser's
numbers are doubles). The truth store's ids are BIGINT, far below this in practice."""
MAX_QUERY_VECTOR = 8192
"""Most dimensions of a search's query vector (dense models give 384 to 4096)."""

WHITESPACE = "".join(c for c in map(chr, range(0x3001)) if c.isspace())
"""Every character ``str.strip()`` removes (none is above U+3000)."""
NOT_BLANK = f"[^{WHITESPACE}]"
"""A pattern (unanchored, as JSON Schema's ``pattern`` is) that a text with something besides whitespace matches.

Spelled as the characters themselves, so JSON Schema validators, Rust's regex (pydantic) and Python agree on it."""


def _whole_number(value: object) -> object:
    # JSON Schema's integers include 2.0 (a number whose fraction is zero): read it as 2, as a JSON client means it
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


WHOLE = BeforeValidator(_whole_number)
"""On an ``int`` field of a strict model: a JSON number without a fraction (``2.0``) counts, bools and text do not."""
WholeNumber = Annotated[int, WHOLE]


def _given_only(**keywords: Any) -> Callable[[dict[str, Any]], None]:
    """The schema of an optional field that refuses null: its value's schema (plus ``keywords``), no ``default``.

    Its default (None) means "not given"; a validator refuses an explicit null.
    """

    def schema_of(schema: dict[str, Any]) -> None:
        given = [branch for branch in schema.pop("anyOf", ()) if branch.get("type") != "null"]
        schema.update(given[0] if given else {})
        schema.pop("default", None)
        schema.update(keywords)

    return schema_of


def _examples(*examples: dict[str, Any], **schema: Any) -> ConfigDict:
    """A model's config that shows ``examples`` (and any further JSON Schema keywords) in its OpenAPI schema."""
    return ConfigDict(json_schema_extra={"examples": list(examples), **schema})


# the chunk of the examples, as a hit and as ``GET /v1/chunks/{chunk_id}`` show it
_CHUNK_IDS = {"chunk_id": "0b7e8f0e-54a1-4c38-9d0e-2f5b8f4f6a11", "doc_id": 12, "set_id": 1}
_CHUNK_TEXT = "Vitamin D helps the body absorb calcium, which keeps bones strong."
_CHUNK_PLACE = {"page": None, "section": "Bones", "start_line": 1, "end_line": 3}


class _Body(BaseModel):
    # strict: a value of one JSON type is never read as another (`"2"` or `true` for an integer, `0` or `"yes"`
    # for a boolean: 422), and a field no model has is refused, so the schema accepts exactly what the route does
    model_config = ConfigDict(extra="forbid", strict=True)


def _rules_of_search() -> list[dict[str, Any]]:
    """What ``SearchRequest``'s fields require of each other, as JSON Schema (the engine refuses the rest with 422)."""
    below_one = {"properties": {"score_threshold": {"maximum": 1}}}
    # dense scores are cosines in [0, 1], and so are rerank scores (a sigmoid)
    rules: list[dict[str, Any]] = [
        {"if": {"properties": {"mode": {"const": "dense"}}, "required": ["mode"]}, "then": below_one},
        {"if": {"properties": {"rerank": {"const": True}}, "required": ["rerank"]}, "then": below_one},
    ]
    # a single-source mode searches its own source: `sources`, when given, must keep it
    rules.extend(
        {
            "if": {"properties": {"mode": {"const": mode}}, "required": ["mode"]},
            "then": {"properties": {"sources": {"contains": {"const": mode}}}},
        }
        for mode in ("dense", "bm25", "sparse")
    )
    rules.extend(_rules_of_vector())
    return rules


def _rules_of_vector() -> list[dict[str, Any]]:
    """What a search's ``vector`` requires of the other fields (its length is the deployment's: openapi.tailor)."""
    text = {"required": ["query"], "properties": {"query": {"pattern": NOT_BLANK}}}

    def given(**also: dict[str, Any]) -> dict[str, Any]:  # a vector (not null), and these fields as described
        return {"required": ["vector", *also], "properties": {"vector": {"type": "array"}, **also}}

    return [
        {"anyOf": [{"required": ["query"]}, given()]},  # something to search by
        # the vector feeds the dense source: a mode and sources that search it, and not all zeros (no direction)
        {
            "if": given(),
            "then": {
                "properties": {
                    "mode": {"enum": ["dense", "hybrid", None]},
                    "sources": {"anyOf": [{"type": "null"}, {"contains": {"const": "dense"}}]},
                    "vector": {"not": {"items": {"const": 0}}},
                }
            },
        },
        {"if": given(rerank={"const": True}), "then": text},  # the reranker reads the text
        # hybrid with a lexical source searches that source with the text (mode left out: hybrid)
        {
            "if": {
                "required": ["vector"],
                "properties": {
                    "vector": {"type": "array"},
                    "mode": {"enum": ["hybrid", None]},
                    "sources": {"not": {"type": "array", "items": {"const": "dense"}}},
                },
            },
            "then": text,
        },
    ]


class SearchRequest(_Body):
    """``POST /v1/search``: the fields of ``ragindex search``."""

    model_config = _examples(
        {"query": "what keeps bones strong", "set_id": 1, "top_k": 5, "mode": "hybrid"},
        {"query": "bones", "set_id": 1, "expand": "neighbours", "context_chars": 1500, "group_by": "document"},
        allOf=_rules_of_search(),
    )

    query: str = Field(
        "",
        max_length=20_000,
        description="The query text (empty, and no `vector`: no hits); required unless a `vector` is given, and "
        "then it feeds the lexical sources.",
    )
    set_id: WholeNumber = Field(gt=0, le=MAX_ID, description="The set to search (of the key's tenant).")
    doc_ids: list[Annotated[int, Field(gt=0, le=MAX_ID), WHOLE]] | None = Field(
        None, max_length=10_000, description="Only these documents."
    )
    mode: Literal["dense", "bm25", "sparse", "hybrid"] | None = Field(None, description="Default: hybrid.")
    fusion: Literal["rrf", "dbsf", "combine", "boost"] | None = Field(None, description="Hybrid fusion.")
    top_k: Annotated[int, Field(ge=1, le=1000), WHOLE] | None = Field(None, description="Hits to return.")
    score_threshold: float | None = Field(
        None,
        ge=0,
        allow_inf_nan=False,
        description="Drop hits below this score: at most 1 with mode `dense` or with `rerank` (cosines, sigmoids).",
    )
    rerank: bool | None = Field(None, description="Cross-encoder rerank (when the engine supports it).")
    expand: Literal["none", "neighbours", "section"] | None = Field(
        None, description="Each hit's `context`: its neighbouring chunks or its section. Default: RAGINDEX_EXPAND."
    )
    context_chars: Annotated[int, Field(ge=0, le=MAX_CONTEXT_CHARS), WHOLE] | None = Field(
        None, description="Most characters of a context. Default: RAGINDEX_CONTEXT_CHARS."
    )
    group_by: Literal["none", "section", "document"] | None = Field(
        None, description="Merge hits of one section or document (others under `merged`). Default: RAGINDEX_GROUP_BY."
    )
    sources: list[Literal["dense", "bm25", "sparse"]] | None = Field(
        None,
        min_length=1,
        description="Search only these sources (within RAGINDEX_RECALL_ENABLED_SOURCES); hybrid fuses them. "
        "Default: every enabled source.",
    )
    on_source_error: Literal["fail", "degrade"] | None = Field(
        None,
        description="A failing source (encoder unreachable, index query failed): `fail` answers its error; "
        "`degrade` answers from the other sources and names it in `degraded`. "
        "Default: RAGINDEX_RECALL_ON_SOURCE_ERROR.",
    )
    vector: list[Annotated[float, Field(allow_inf_nan=False)]] | None = Field(
        None,
        min_length=1,
        max_length=MAX_QUERY_VECTOR,
        description="A query embedding computed with the set's dense model (its dimension; scaled to unit length): "
        "the dense source searches with it instead of encoding `query`. Mode `dense` needs no `query`; `hybrid` "
        "needs it for its lexical sources. Another dimension answers 422.",
    )
    filter: dict[str, Any] | None = Field(
        None,
        description='Only chunks whose metadata matches: `{"year": {"$gte": 2020}, "lang": "zh"}` with '
        "`$eq $ne $gt $gte $lt $lte $in $nin $exists $contains $and $or $not` (docs/records-and-filters.md). Its "
        "fields must be fields of the set, with values of their types (422 naming the problem).",
    )


class ChunkPatch(_Body):
    """``PATCH /v1/chunks/{chunk_id}``: new text (re-embedded only if it changed) and/or metadata to merge.

    At least one of the two; a field left out is left as it is (``null`` is refused: there is nothing to set).
    """

    model_config = _examples(
        {"text": "Vitamin D helps the gut absorb calcium."}, {"metadata": {"reviewed": "yes"}}, minProperties=1
    )

    text: str | None = Field(
        None,
        max_length=1_000_000,
        description="The new text: not only whitespace (delete the chunk instead).",
        json_schema_extra=_given_only(pattern=NOT_BLANK),
    )
    metadata: dict[str, Any] | None = Field(
        None, description="Keys to set in the chunk's metadata.", json_schema_extra=_given_only()
    )

    @field_validator("text", "metadata", mode="before")
    @classmethod
    def _not_null(cls, value: object) -> object:
        if value is None:
            raise ValueError("leave the field out to keep it; null sets nothing")
        return value

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty or only whitespace (delete the chunk instead)")
        return value


class RepairRequest(_Body):
    """``POST /v1/repair``."""

    model_config = _examples({"dry_run": True})

    dry_run: bool = Field(False, description="Only report what repair would do.")


class BackupRequest(_Body):
    """``POST /v1/backup``."""

    model_config = _examples({"name": "nightly-2026-12-04"})

    name: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
        description="Directory name under `<data dir>/backups/` (default: the UTC time). Must not exist yet.",
    )


class JobAccepted(BaseModel):
    """``202`` answer of an upload."""

    model_config = _examples({"job_id": "9b2c4e1f0a7d4c3e", "status": "queued", "files": ["vitamin.md", "notes.pdf"]})

    job_id: str
    status: str
    files: list[str] = Field(description="Saved file names (sanitised).")


class KeyInfo(BaseModel):
    """Who the calling key is."""

    model_config = _examples({"key_id": "5f0c2a9e81d34b7a", "user_id": 1, "admin": False})

    key_id: str
    user_id: int
    admin: bool


# ---------------------------------------------------------------------- inspection: documents and jobs
DocStatus = Literal["PROCESSING", "SUCCESS", "FAILED"]
JobStatus = Literal["queued", "running", "succeeded", "failed", "cancelling", "cancelled"]


class DocumentSummary(BaseModel):
    """A document as listings show it (``ragindex docs list --json`` has the same fields)."""

    doc_id: int
    user_id: int
    set_id: int
    filename: str
    key: str = Field(
        description="The document's key: a record's own key; for a file, its path relative to its upload folder "
        "or ingest root (never a server path)."
    )
    source: str = Field(description="Where it came from (a file, or a record of a records file); `key` for records.")
    status: str = Field(description="PROCESSING, SUCCESS or FAILED.")
    error: str | None = Field(description="Why it FAILED (the failed stage's error).")
    chunk_count: int
    size: int = Field(description="Bytes of its file.")
    parser: str = Field(description="The loader that read it (`none` when loading failed).")
    updated_at: str | None


class DocumentPageOut(BaseModel):
    """``GET /v1/documents``: one page, and the cursor of the next one (null on the last page)."""

    documents: list[DocumentSummary]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; opaque.")


class DocumentFields(DocumentSummary):
    """Every field of a document."""

    file: str = Field(description="The file it came from.")
    file_hash: str = Field(description="sha256 of the file's bytes.")
    content_hash: str = Field(description="sha256 of its text (empty until it was loaded).")
    metadata: dict[str, Any]


class RunInfo(BaseModel):
    """The document's latest pipeline run."""

    run_id: int
    job_id: str | None
    status: str
    failed_stage: str | None
    error: str | None
    started_at: str | None
    finished_at: str | None
    total_ms: float | None


class StageInfo(BaseModel):
    """One stage of the latest run (status null: not recorded, e.g. the loading stage of an older run)."""

    stage: Literal["loading", "chunking", "dense", "bm25", "sparse"]
    status: str | None
    duration_ms: float | None
    error: str | None = Field(description="The run's error, on the stage where it failed.")


class ChunkInfo(BaseModel):
    """A chunk (the dense unit) or a section (the lexical unit) of the document, with its per-kind statuses."""

    chunk_id: str
    unit: Literal["chunk", "section"]
    index: int
    section_id: str | None
    section: str | None
    page: int | None
    start_line: int | None
    end_line: int | None
    token_count: int | None
    chars: int
    status: dict[str, str | None] = Field(description="dense, bm25, sparse -> PENDING/INDEXING/SUCCESS/FAILED or null.")
    attempts: int
    last_error: str | None
    preview: str = Field(description="The first characters of its text, whitespace collapsed.")


class DocumentDetailOut(BaseModel):
    """``GET /v1/documents/{doc_id}`` (``ragindex docs show --json``)."""

    document: DocumentFields
    run: RunInfo | None
    stages: list[StageInfo] = Field(description="loading, chunking, dense, bm25, sparse, in order.")
    counts: dict[str, dict[str, dict[str, int]]] = Field(
        description="Live rows per unit (chunk, section), vector kind and status."
    )
    chunks: list[ChunkInfo] | None = Field(description="Every chunk and section, when asked with `chunks=true`.")


class ParsedBlock(BaseModel):
    """A layout element of the parsed markdown: characters ``[start, end)`` of ``text``."""

    kind: str = Field(description="text, heading, table, list, caption, code or ocr_text.")
    start: int
    end: int
    page: int | None = Field(description="1-based page (null for sources without pages).")
    bbox: list[float] | None = Field(description="[x0, top, x1, bottom] in PDF points from the page's top left.")
    confidence: float | None = Field(description="OCR confidence 0..1 (null for text that was not OCR'd).")


class ParsedPage(BaseModel):
    """Page ``page`` (1-based) starts at character ``start`` of ``text``."""

    page: int
    start: int


class ParsedDocumentOut(BaseModel):
    """``GET /v1/documents/{doc_id}/parsed`` (``ragindex docs show --parsed --json``, key ``parsed``)."""

    doc_id: int
    parser: str
    content_hash: str = Field(description="sha256 of `text` (the document's content hash when it was recorded).")
    chars: int
    page_count: int | None
    metadata: dict[str, Any] = Field(description="title, and the parser's warnings when it had any.")
    created_at: str | None
    text: str = Field(description="The markdown the document's current version was parsed into and chunked from.")
    blocks: list[ParsedBlock]
    pages: list[ParsedPage]


class JobSummary(BaseModel):
    """A job as ``GET /v1/jobs`` lists it (``GET /v1/jobs/{job_id}`` adds progress, runs and the report)."""

    job_id: str
    kind: str
    status: JobStatus
    set_id: int
    files: list[str] = Field(description="File names of the upload.")
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    error: str | None


class JobPageOut(BaseModel):
    """``GET /v1/jobs``: newest first, and the cursor of the next page (null on the last page)."""

    jobs: list[JobSummary]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; opaque.")


class JobCancelOut(BaseModel):
    """``DELETE /v1/jobs/{job_id}``: `cancelled` at once for a queued job, `cancelling` for a running one."""

    job_id: str
    status: JobStatus


# ---------------------------------------------------------------------- search, sets, chunks, version
class _Out(BaseModel):
    # fields added to an answer later stay in it: the models document the answer, they never trim it
    model_config = ConfigDict(extra="allow")


class SourceScoreOut(_Out):
    """A hit's score and 1-based rank in one source (dense, bm25, sparse, rerank), or why it did not run."""

    score: float | None = None
    rank: int | None = None
    skipped: str | None = Field(None, description="Why the source did not run (the language guard).")
    weight: float | None = Field(
        None, description="The source's weight in the fusion, when the set's fusion calibration set one."
    )


class HitOut(_Out):
    """One hit, backfilled from the truth store (never a deleted chunk)."""

    rank: int
    chunk_id: str
    doc_id: int
    set_id: int
    score: float = Field(description="Fused score (or the rerank score in [0, 1] with rerank).")
    key: str = Field(
        description="The key of the hit's document: a record's own key, or a file's `source` (relative, never a "
        "server path)."
    )
    source: str = Field(
        description="Where the chunk came from, relative to its upload folder or ingest root "
        "(`notes/a.md`, `faq.jsonl#12`): never a path on the server."
    )
    filename: str
    page: int | None
    section: str | None
    start_line: int | None
    end_line: int | None
    chunk_type: str = Field(description="text, table, ocr_text, ...")
    bbox: list[float] | None = Field(description="[x0, top, x1, bottom] on `page` in PDF points, when known.")
    text: str
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="The document's metadata (a record's, or a file's derived and loader fields), a chunk's own "
        "fields over it; what `filter` selects on.",
    )
    scores: dict[str, SourceScoreOut]
    context: str | None = Field(None, description="With `expand`: the hit's neighbours or section.")
    merged: list[dict[str, Any]] | None = Field(None, description="With `group_by`: the hits folded into this one.")


class SearchOut(_Out):
    """``POST /v1/search`` (``ragindex search --json``)."""

    model_config = _examples(
        {
            "mode": "hybrid",
            "hits": [
                {
                    "rank": 1,
                    **_CHUNK_IDS,
                    "score": 0.0328,
                    "key": "vitamin.md",
                    "source": "vitamin.md",
                    "filename": "vitamin.md",
                    **_CHUNK_PLACE,
                    "chunk_type": "text",
                    "bbox": None,
                    "text": _CHUNK_TEXT,
                    "scores": {"dense": {"score": 0.71, "rank": 1}, "bm25": {"score": 3.9, "rank": 1}},
                }
            ],
            "latency_ms": {"encode": 9.1, "search": 2.4, "fuse": 0.1, "backfill": 1.2, "total": 13.0},
        }
    )

    mode: str
    hits: list[HitOut]
    latency_ms: dict[str, float] = Field(description="Per phase: encode, search, fuse, rerank, backfill, total.")
    warnings: list[str] | None = Field(None, description="Why the ranking may be poor (only when there is a reason).")


class SetOut(_Out):
    """A set of the tenant with its document counts."""

    set_id: int
    documents: int
    statuses: dict[str, int] = Field(description="Documents per status (PROCESSING, SUCCESS, FAILED).")


class SetsOut(_Out):
    """``GET /v1/sets``."""

    model_config = _examples({"sets": [{"set_id": 1, "documents": 2, "statuses": {"SUCCESS": 2}}]})

    sets: list[SetOut]


class SetDocumentsOut(_Out):
    """``GET /v1/sets/{set_id}/documents``."""

    set_id: int
    documents: list[DocumentSummary]


class ChunkOut(_Out):
    """``GET /v1/chunks/{chunk_id}``: an ACTIVE chunk with its per-kind index statuses."""

    model_config = _examples(
        {
            **_CHUNK_IDS,
            "chunk_index": 0,
            "text": _CHUNK_TEXT,
            "metadata": {},
            **_CHUNK_PLACE,
            "token_count": 14,
            "statuses": {"dense": "SUCCESS", "bm25": "SUCCESS"},
            "attempts": 0,
            "last_error": None,
        }
    )

    chunk_id: str
    doc_id: int
    set_id: int
    chunk_index: int
    text: str
    metadata: dict[str, Any]
    page: int | None
    section: str | None
    start_line: int | None
    end_line: int | None
    token_count: int | None
    statuses: dict[str, str | None]
    attempts: int
    last_error: str | None


class JobRunOut(_Out):
    """One document's pipeline run within a job."""

    doc_id: int
    status: str
    stages: dict[str, str | None]
    durations_ms: dict[str, float | None]
    failed_stage: str | None
    recover_from_stage: str | None
    chunk_count: int | None
    error: str | None


class JobDetailOut(JobSummary):
    """``GET /v1/jobs/{job_id}``: the job, its live progress, each document's run, and the report when done."""

    model_config = ConfigDict(extra="allow")

    progress: dict[str, Any] | None = Field(description="While running: files done, copies indexed per stage.")
    runs: list[JobRunOut]
    report: dict[str, Any] | None = Field(
        description="When finished: `ragindex ingest --json`'s report (`documents`, `chunks`, `files`, `failures`)."
    )


class VersionOut(_Out):
    """``GET /v1/version``: what is running, and the schema and model of the data it serves."""

    model_config = _examples(
        {
            "version": "0.1.0",
            "schema": {"code": "m012_score_stats", "database": "m012_score_stats", "current": True},
            "dense_model": "sentence-transformers/all-MiniLM-L6-v2",
            "collection": {"collection": "ragindex", "dense": "st:all-MiniLM-L6-v2|384|cos|norm"},
        }
    )

    version: str = Field(description="The ragindex package version.")
    schema_: dict[str, Any] = Field(
        alias="schema",
        description="The newest truth-store migration this code knows (`code`), the newest the database has applied "
        "(`database`), and whether they agree (`current`).",
    )
    dense_model: str = Field(description="RAGINDEX_DENSE_MODEL (or the remote encoder's model name).")
    collection: dict[str, Any] | None = Field(
        description="The collection searches read and the dense fingerprint it was built with (null before the "
        "first ingest)."
    )
