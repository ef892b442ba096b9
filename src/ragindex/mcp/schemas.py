"""The MCP tools' argument models, names and descriptions (pydantic only: no MCP SDK import here).

Every model forbids unknown fields and bounds every number, so the JSON schema a client sees is the
contract the server enforces: a missing, unknown or ill-typed argument is a tool error that names the
field (see :func:`ragindex.mcp.tools.argument_error`), never a crash. The descriptions are written for an
LLM choosing a tool and filling its arguments.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from ragindex.paging import MAX_LIMIT
from ragindex.records import MAX_BATCH, MAX_KEY_CHARS, MAX_RECORD_CHUNKS
from ragindex.types import MAX_CONTEXT_CHARS

MAX_ID = 2**63 - 1  # ids are BIGINT in the truth store
MAX_TOP_K = 50
"""Most hits one search returns to a model (each hit carries its text: more only fills the context window)."""
MAX_DOCUMENT_CHARS = 200_000
"""Most characters of a document's text ``get_document`` returns (a resource read returns all of it)."""
MAX_INGEST_PATHS = 100
MAX_RECORD_TEXT = 2_000_000
"""Most characters of one record's text, markdown or chunk in a tool call."""
MAX_LIST_RESOURCES = 200
"""Documents per page of ``resources/list`` (a client pages on with ``nextCursor``)."""

SearchModeName = Literal["hybrid", "dense", "bm25", "sparse"]
PositiveId = Annotated[int, Field(gt=0, le=MAX_ID)]


class ToolArgs(BaseModel):
    """Base of the argument models: unknown fields are refused and nothing is coerced ("5" is not a number)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class SearchArgs(ToolArgs):
    """Arguments of ``search``."""

    query: str = Field(
        min_length=1,
        max_length=4_000,
        description="What to look for, in natural language or as key terms (the user's question works well).",
    )
    mode: SearchModeName = Field(
        "hybrid",
        description="hybrid (default; meaning and exact words fused, best for most questions), dense (meaning only: "
        "paraphrases, concepts), bm25 (exact words: names, codes, error messages, rare terms), sparse "
        "(learned sparse terms; only when the server enables it).",
    )
    top_k: int = Field(5, ge=1, le=MAX_TOP_K, description="How many passages to return (1-50).")
    set_id: PositiveId | None = Field(
        None, description="The document set to search; omit for the server's default set."
    )
    doc_ids: list[PositiveId] | None = Field(
        None,
        min_length=1,
        max_length=1_000,
        description="Only search these documents (doc_id values from list_documents or earlier hits).",
    )
    score_threshold: float | None = Field(
        None,
        ge=0.0,
        description="Drop hits scoring below this (dense and rerank scores are in [0, 1]); usually leave unset.",
    )
    fusion: Literal["rrf", "dbsf", "combine", "boost"] | None = Field(
        None, description="How hybrid mode merges its sources; leave unset for the server's default (rrf)."
    )
    rerank: bool | None = Field(
        None,
        description="Rerank candidates with the cross-encoder (slower, often more precise; scores become [0, 1]). "
        "Leave unset for the server's default.",
    )
    expand: Literal["none", "neighbours", "section"] | None = Field(
        None,
        description="Give each hit a `context` with surrounding text: neighbours (adjacent passages) or section "
        "(its whole section). Use it when a passage alone is too short to answer.",
    )
    context_chars: int | None = Field(
        None, ge=0, le=MAX_CONTEXT_CHARS, description="Most characters of each hit's `context` (with expand)."
    )
    group_by: Literal["none", "section", "document"] | None = Field(
        None,
        description="Return at most one hit per section or per document (the others are listed under `merged`); "
        "use document to see which documents are relevant.",
    )
    filter: dict[str, Any] | None = Field(
        None,
        description='Only passages whose metadata matches, e.g. {"year": {"$gte": 2020}, "lang": "en"} or '
        '{"$or": [{"team": "search"}, {"tags": {"$in": ["faq"]}}]}. Operators: $eq $ne $gt $gte $lt $lte $in $nin '
        "$exists $contains, combined with $and $or $not; a bare value means $eq; dates are ISO-8601 strings. "
        "An unknown field is an error that lists the fields the set has.",
    )

    @field_validator("mode")
    @classmethod
    def _mode_enabled(cls, mode: str, info: ValidationInfo) -> str:
        modes = (info.context or {}).get("modes")
        if modes is not None and mode not in modes:
            raise ValueError(f"mode {mode!r} is not enabled on this server; use one of: {', '.join(modes)}")
        return mode


class ListDocumentsArgs(ToolArgs):
    """Arguments of ``list_documents``."""

    set_id: PositiveId | None = Field(None, description="Only this document set; omit for every set you can see.")
    status: Literal["SUCCESS", "FAILED", "PROCESSING"] | None = Field(
        None, description="Only documents with this processing status (FAILED ones carry their error)."
    )
    cursor: str | None = Field(
        None, min_length=1, max_length=512, description="The next_cursor of the previous page, to get the next one."
    )
    limit: int = Field(50, ge=1, le=MAX_LIMIT, description="Most documents per page.")


class GetDocumentArgs(ToolArgs):
    """Arguments of ``get_document``."""

    doc_id: PositiveId = Field(description="The document's id (from list_documents or a search hit).")
    include_text: bool = Field(
        False, description="Also return the document's full parsed text (markdown), up to max_chars."
    )
    max_chars: int = Field(
        20_000, ge=1, le=MAX_DOCUMENT_CHARS, description="With include_text: most characters of text returned."
    )
    include_chunks: bool = Field(
        False, description="Also list the document's chunks (id, position, status, a preview of each)."
    )


class GetChunkArgs(ToolArgs):
    """Arguments of ``get_chunk``."""

    chunk_id: str = Field(min_length=1, max_length=64, description="The chunk_id of a search hit.")


class IngestArgs(ToolArgs):
    """Arguments of ``ingest``."""

    paths: list[Annotated[str, Field(min_length=1, max_length=4_096)]] = Field(
        min_length=1,
        max_length=MAX_INGEST_PATHS,
        description="Files and folders on the server's machine; absolute paths (a relative one is taken from the "
        "server's working directory).",
    )
    set_id: PositiveId | None = Field(None, description="The set to add them to; omit for the server's default set.")
    full: bool = Field(False, description="Re-parse and re-chunk every file even when unchanged.")
    keep_missing: bool = Field(
        False, description="Keep the documents of files that are gone from a synced folder (default: remove them)."
    )


class RecordChunkArg(ToolArgs):
    """One chunk cut by the caller."""

    text: str = Field(min_length=1, max_length=MAX_RECORD_TEXT, description="The chunk's text.")
    metadata: dict[str, Any] | None = Field(None, description="The chunk's own fields, over the record's.")


class RecordArg(ToolArgs):
    """One record of ``upsert_records``."""

    key: str = Field(
        min_length=1,
        max_length=MAX_KEY_CHARS,
        description="Your id of the document, unique in its set; the same key again updates it.",
    )
    text: str | None = Field(None, max_length=MAX_RECORD_TEXT, description="Plain text (chunked by the server).")
    markdown: str | None = Field(None, max_length=MAX_RECORD_TEXT, description="Markdown (chunked by its headings).")
    chunks: list[str | RecordChunkArg] | None = Field(
        None, min_length=1, max_length=MAX_RECORD_CHUNKS, description="Passages already cut, indexed as given."
    )
    title: str | None = Field(None, max_length=1_000, description="The document's title.")
    metadata: dict[str, Any] | None = Field(
        None,
        description="Filterable fields: strings, numbers, booleans, ISO-8601 dates or lists of strings "
        '(e.g. {"year": 2024, "lang": "en", "tags": ["faq"]}); a field keeps the type it first had in the set.',
    )


class UpsertRecordsArgs(ToolArgs):
    """Arguments of ``upsert_records``."""

    records: list[RecordArg] = Field(
        min_length=1,
        max_length=MAX_BATCH,
        description=f"The records to insert or update (at most {MAX_BATCH}); each has a key and exactly one of "
        "text, markdown or chunks.",
    )
    set_id: PositiveId | None = Field(None, description="The set to write to; omit for the server's default set.")


SEARCH = "search"
LIST_DOCUMENTS = "list_documents"
GET_DOCUMENT = "get_document"
GET_CHUNK = "get_chunk"
INGEST = "ingest"
UPSERT_RECORDS = "upsert_records"

ARGS: dict[str, type[ToolArgs]] = {
    SEARCH: SearchArgs,
    LIST_DOCUMENTS: ListDocumentsArgs,
    GET_DOCUMENT: GetDocumentArgs,
    GET_CHUNK: GetChunkArgs,
    INGEST: IngestArgs,
    UPSERT_RECORDS: UpsertRecordsArgs,
}
"""Each tool's argument model, in the order ``tools/list`` gives them."""

TITLES = {
    SEARCH: "Search the documents",
    LIST_DOCUMENTS: "List documents",
    GET_DOCUMENT: "Get a document",
    GET_CHUNK: "Get a passage",
    INGEST: "Ingest files",
    UPSERT_RECORDS: "Add or update records",
}

DESCRIPTIONS = {
    SEARCH: (
        "Search the indexed documents and return the most relevant passages, best first, each with a citation. "
        "Use it first for any question the documents may answer, and cite the `citation` of the passages you use "
        "(file, page, section, lines). Each hit has its `text`, `score` and per-source `scores`, its `doc_id` and "
        "`chunk_id` (for get_document / get_chunk). If the passages are too short to answer, search again with "
        "expand='neighbours' or 'section'; for exact names, codes or error messages try mode='bm25'. An empty "
        "`hits` list means nothing matched: rephrase rather than guess."
    ),
    LIST_DOCUMENTS: (
        "List the documents in the knowledge base a page at a time: doc_id, file name, source, set, processing "
        "status (SUCCESS, FAILED, PROCESSING) with the error of a failed one, and chunk count. Use it to see what is "
        "indexed, to find a doc_id for get_document or for search's doc_ids, or to check why a file is not found. "
        "Pass `next_cursor` back as `cursor` to get the next page (null: last page)."
    ),
    GET_DOCUMENT: (
        "Get one document by doc_id: its file name, source, set, status and error, the stages of its last "
        "processing run and its chunk counts; with include_text its full parsed text (markdown), with "
        "include_chunks its chunks. Use it to read a whole document after a search hit pointed to it."
    ),
    GET_CHUNK: (
        "Get one passage (chunk) by the chunk_id of a search hit: its full text, document, page, section, lines "
        "and index status. Use it to re-read a hit exactly or to check where it comes from."
    ),
    INGEST: (
        "Add files and folders to the knowledge base, or bring them up to date: unchanged files are skipped, changed "
        "ones re-indexed, and documents of files gone from a synced folder removed (unless keep_missing). Only "
        "available when the server runs locally over stdio; over HTTP it is refused. Returns counts of documents "
        "and chunks and the files that failed, with their errors."
    ),
    UPSERT_RECORDS: (
        "Add documents, or update them, by your own key: each record has a `key`, exactly one of `text`, `markdown` "
        "or `chunks`, and optionally a `title` and `metadata` (fields that search's `filter` can match). A record "
        "whose key exists replaces that document; an unchanged record costs nothing. The records are searchable "
        "when the call returns. A bad record (an empty text, a metadata value of another type than the set's field) "
        "refuses the whole call, naming the record and the field; nothing is written then."
    ),
}

READ_ONLY = frozenset({SEARCH, LIST_DOCUMENTS, GET_DOCUMENT, GET_CHUNK})


def input_schema(name: str, modes: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The JSON schema of a tool's arguments (``additionalProperties: false``); ``modes`` narrows search's enum."""
    schema = ARGS[name].model_json_schema()
    if name == SEARCH and modes is not None:
        schema["properties"]["mode"]["enum"] = list(modes)
    return schema
