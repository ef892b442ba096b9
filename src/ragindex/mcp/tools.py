"""What the MCP tools and resources do, whatever the transport: validate, call the Engine, shape the answer.

The MCP glue (:mod:`ragindex.mcp.server`) parses a call with :func:`parse_arguments` on the event loop and
runs :meth:`Toolbox.run` on a worker thread; a failure becomes a tool error through :func:`error_payload`.
Every call acts for one :class:`Tenant`: the stdio server's ``--user-id``, or the user of the HTTP caller's
API key. Another tenant's documents and chunks answer "not found", exactly like unknown ids.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pydantic

from ragindex.errors import InputError, NotFoundError, RagindexError, ValidationError
from ragindex.mcp import schemas
from ragindex.mcp.paths import SourceView
from ragindex.pipeline.inspection import document_summary
from ragindex.types import VectorKind

if TYPE_CHECKING:
    from ragindex.engine import Engine
    from ragindex.store.records import DocumentRow

log = logging.getLogger(__name__)

DOCUMENT_URI = "ragindex://documents/{doc_id}"
"""The resource URI template of a document (its parsed text)."""
DEFAULT_SET = 1


class NotAllowedError(RagindexError, exit_code=2, http_status=403):
    """The tool exists but this transport may not use it (``ingest`` over HTTP)."""


@dataclass(frozen=True, slots=True)
class Tenant:
    """Who an MCP call acts for.

    Args:
        user_id: The tenant.
        set_id: The one set this server serves (``--set-id``); None: any set of the tenant (default set 1).
        local: A local (stdio) client: it may ingest and sees stored paths as they are.
    """

    user_id: int
    set_id: int | None = None
    local: bool = False

    def target_set(self, asked: int | None) -> int:
        """The set a search or an ingest uses: the one asked, else the server's, else set 1."""
        self._check(asked)
        return asked or self.set_id or DEFAULT_SET

    def listed_set(self, asked: int | None) -> int | None:
        """The set a listing filters on: the one asked, else the server's; None lists every set of the tenant."""
        self._check(asked)
        return asked or self.set_id

    def _check(self, asked: int | None) -> None:
        if self.set_id is not None and asked is not None and asked != self.set_id:
            raise ValidationError("set_id", f"this server serves set {self.set_id} only; omit set_id or pass it")

    def sees(self, doc: DocumentRow) -> bool:
        """Whether a document (already known to be this user's) is in the sets this server serves."""
        return self.set_id is None or doc.set_id == self.set_id


def parse_arguments(name: str, arguments: Mapping[str, Any] | None, modes: tuple[str, ...]) -> schemas.ToolArgs:
    """The validated arguments of a call to tool ``name``.

    Raises:
        InputError: No tool has this name.
        pydantic.ValidationError: An argument is missing, unknown, ill-typed or out of bounds (or a disabled mode).
    """
    model = schemas.ARGS.get(name)
    if model is None:
        raise InputError(f"unknown tool {name!r}; the tools are: {', '.join(schemas.ARGS)}", tool=name)
    return model.model_validate(dict(arguments or {}), context={"modes": modes})


def error_payload(exc: BaseException) -> dict[str, Any]:
    """The structured content of a tool error: ``{"error", "message", "field"?, "problems"?, "context"?}``.

    An argument error names the first offending field in ``field`` and starts its message with it; every problem
    is listed under ``problems``. A ragindex error keeps its class name, message and context. Anything else is a
    bug: logged with its traceback, and the client gets one line naming the server log.
    """
    if isinstance(exc, pydantic.ValidationError):
        problems = [
            {"field": ".".join(str(p) for p in e["loc"]) or "arguments", "message": _problem(e)} for e in exc.errors()
        ]
        first = problems[0] if problems else {"field": "arguments", "message": "invalid arguments"}
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        return {
            "error": "ValidationError",
            "message": f"invalid argument {first['field']}: {first['message']}{more}",
            "field": first["field"],
            "problems": problems,
        }
    if isinstance(exc, RagindexError):
        out = exc.to_dict()
        if isinstance(exc, ValidationError):
            out["field"] = exc.field
        return out
    log.error("an MCP tool call failed unexpectedly", exc_info=exc)
    return {"error": "InternalError", "message": f"internal error ({type(exc).__name__}); see the server's log"}


def _problem(error: Any) -> str:
    kind = error.get("type", "")
    if kind == "missing":
        return "required, but missing"
    if kind == "extra_forbidden":
        return "not an argument of this tool"
    return str(error.get("msg", "invalid"))


def citation(hit: Mapping[str, Any]) -> str:
    """A short human citation of a hit or chunk: ``file.pdf, page 3, section "Intro", lines 10-14``."""
    parts = [str(hit.get("filename") or hit.get("source") or "")]
    if hit.get("page") is not None:
        parts.append(f"page {hit['page']}")
    if hit.get("section"):
        parts.append(f'section "{hit["section"]}"')
    start, end = hit.get("start_line"), hit.get("end_line")
    if start is not None:
        parts.append(f"lines {start}-{end}" if end is not None and end != start else f"line {start}")
    return ", ".join(p for p in parts if p)


def document_uri(doc_id: int) -> str:
    """The resource URI of a document."""
    return DOCUMENT_URI.format(doc_id=doc_id)


class Toolbox:
    """The tools over one engine.

    Args:
        engine: The process's engine (it owns the embedded index).
        view: How sources are shown (stored paths over stdio, relative over HTTP).
    """

    def __init__(self, engine: Engine, view: SourceView) -> None:
        self.engine = engine
        self.view = view

    @property
    def modes(self) -> tuple[str, ...]:
        """The search modes this engine supports (hybrid and dense always; bm25 and sparse when enabled)."""
        kinds = self.engine.kinds
        return ("hybrid", "dense", *(k for k in (VectorKind.BM25, VectorKind.SPARSE) if k in kinds))

    def run(self, args: schemas.ToolArgs, tenant: Tenant) -> dict[str, Any]:
        """Run a parsed call for ``tenant`` (blocking: the Engine is synchronous) and return its JSON answer."""
        if isinstance(args, schemas.SearchArgs):
            return self.search(args, tenant)
        if isinstance(args, schemas.ListDocumentsArgs):
            return self.list_documents(args, tenant)
        if isinstance(args, schemas.GetDocumentArgs):
            return self.get_document(args, tenant)
        if isinstance(args, schemas.GetChunkArgs):
            return self.get_chunk(args, tenant)
        if isinstance(args, schemas.IngestArgs):
            return self.ingest(args, tenant)
        if isinstance(args, schemas.UpsertRecordsArgs):
            return self.upsert_records(args, tenant)
        raise InputError(f"no tool takes {type(args).__name__}")

    # ------------------------------------------------------------------ tools
    def search(self, args: schemas.SearchArgs, tenant: Tenant) -> dict[str, Any]:
        """``search``: ``SearchResult.to_dict()`` with a citation per hit and sources as the client may see them."""
        set_id = tenant.target_set(args.set_id)
        result = self.engine.search(
            args.query,
            user_id=tenant.user_id,
            set_id=set_id,
            doc_ids=args.doc_ids,
            mode=args.mode,
            top_k=args.top_k,
            score_threshold=args.score_threshold,
            fusion=args.fusion,
            rerank=args.rerank,
            expand=args.expand,
            context_chars=args.context_chars,
            group_by=args.group_by,
            filter=args.filter,
        )
        out = result.to_dict()
        for hit in out["hits"]:
            hit["source"] = self.view.source(hit["source"], user_id=tenant.user_id, set_id=set_id)
            hit["key"] = hit["source"]
            metadata = hit.get("metadata")
            if isinstance(metadata, dict) and isinstance(metadata.get("source"), str):  # a file's derived path
                metadata["source"] = self.view.source(metadata["source"], user_id=tenant.user_id, set_id=set_id)
            hit["citation"] = citation(hit)
        return {"query": args.query, "set_id": set_id, **out}

    def list_documents(self, args: schemas.ListDocumentsArgs, tenant: Tenant) -> dict[str, Any]:
        """``list_documents``: a page of the tenant's documents, each with its resource URI."""
        page = self.engine.documents(
            user_id=tenant.user_id,
            set_id=tenant.listed_set(args.set_id),
            status=args.status,
            cursor=args.cursor,
            limit=args.limit,
        )
        return {"documents": [self.summary(d) for d in page.documents], "next_cursor": page.next_cursor}

    def get_document(self, args: schemas.GetDocumentArgs, tenant: Tenant) -> dict[str, Any]:
        """``get_document``: the document's fields, last run, chunk counts; its text and chunks when asked."""
        detail = self.engine.document(args.doc_id, user_id=tenant.user_id, chunks=args.include_chunks)
        doc = detail.document
        if not tenant.sees(doc):
            raise NotFoundError(f"document {args.doc_id} not found", doc_id=args.doc_id)
        out = detail.to_dict()
        out["document"] = {
            **out["document"],
            **self.summary(doc),
            "file": self.view.source(doc.file_uri, user_id=doc.user_id, set_id=doc.set_id),
        }
        metadata = out["document"].get("metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("source"), str):  # a file's derived path
            metadata["source"] = self.view.source(metadata["source"], user_id=doc.user_id, set_id=doc.set_id)
        scrub = self._scrubber(doc)
        if out["run"] is not None:
            out["run"]["error"] = scrub(out["run"]["error"])
        for stage in out["stages"]:
            stage["error"] = scrub(stage["error"])
        if args.include_text:
            out["text"] = self._text(doc, args.max_chars)
        return out

    def get_chunk(self, args: schemas.GetChunkArgs, tenant: Tenant) -> dict[str, Any]:
        """``get_chunk``: an ACTIVE chunk of the tenant with its position, document and index statuses."""
        store = self.engine.store
        row = store.get_tenant_chunk(args.chunk_id, user_id=tenant.user_id)
        doc = store.get_document(row.doc_id, user_id=tenant.user_id)
        if not tenant.sees(doc):
            raise NotFoundError(f"chunk {args.chunk_id!r} not found", chunk_id=args.chunk_id)
        out: dict[str, Any] = {
            "chunk_id": row.chunk_id,
            "doc_id": row.doc_id,
            "set_id": row.set_id,
            "chunk_index": row.chunk_index,
            "chunk_type": row.chunk_type,
            "filename": doc.filename,
            "source": self.view.source(doc.source_uri, user_id=doc.user_id, set_id=doc.set_id),
            "page": row.page,
            "section": row.section,
            "start_line": row.start_line,
            "end_line": row.end_line,
            "token_count": row.token_count,
            "text": row.content,
            "metadata": dict(row.metadata),
            "statuses": {k: row.status_of(k) for k in self.engine.kinds},
            "document_uri": document_uri(row.doc_id),
        }
        out["citation"] = citation(out)
        return out

    def ingest(self, args: schemas.IngestArgs, tenant: Tenant) -> dict[str, Any]:
        """``ingest`` (local clients only): sync files and folders into a set; the ingest report."""
        if not tenant.local:
            raise NotAllowedError(
                "ingest is only available when the MCP server runs locally over stdio (`ragindex mcp`); over HTTP, "
                "upload files to the HTTP service (POST /v1/sets/{set_id}/documents) or run `ragindex ingest` on "
                "the server",
                tool=schemas.INGEST,
            )
        set_id = tenant.target_set(args.set_id)
        report = self.engine.ingest(
            args.paths, user_id=tenant.user_id, set_id=set_id, full=args.full, keep_missing=args.keep_missing
        )
        return {"set_id": set_id, **report.to_dict()}

    def upsert_records(self, args: schemas.UpsertRecordsArgs, tenant: Tenant) -> dict[str, Any]:
        """``upsert_records``: insert or update records by key in a set of the tenant (any transport); the report."""
        set_id = tenant.target_set(args.set_id)
        records = [r.model_dump(exclude_none=True) for r in args.records]
        report = self.engine.upsert(records, user_id=tenant.user_id, set_id=set_id)
        return {"set_id": set_id, **report.to_dict()}

    # ------------------------------------------------------------------ resources
    def resource_page(self, tenant: Tenant, cursor: str | None) -> tuple[list[DocumentRow], str | None]:
        """A page of the documents a tenant's resource listing shows, and the cursor of the next page."""
        page = self.engine.documents(
            user_id=tenant.user_id, set_id=tenant.listed_set(None), cursor=cursor, limit=schemas.MAX_LIST_RESOURCES
        )
        return list(page.documents), page.next_cursor

    def read_document(self, doc_id: int, tenant: Tenant) -> str:
        """The parsed text (markdown) of a document of the tenant; NotFoundError for any other id."""
        doc = self.engine.store.get_document(doc_id, user_id=tenant.user_id)
        if not tenant.sees(doc):
            raise NotFoundError(f"document {doc_id} not found", doc_id=doc_id)
        return self.engine.parsed_document(doc_id, user_id=tenant.user_id).text

    # ------------------------------------------------------------------ shaping
    def summary(self, doc: DocumentRow) -> dict[str, Any]:
        """A document as listings show it, with its source as the client may see it and its resource URI."""
        out = document_summary(doc)
        out["source"] = self.view.source(doc.source_uri, user_id=doc.user_id, set_id=doc.set_id)
        out["error"] = self._scrubber(doc)(out["error"])
        out["uri"] = document_uri(doc.doc_id)
        return out

    def _scrubber(self, doc: DocumentRow) -> Callable[[str | None], str | None]:
        def scrub(text: str | None) -> str | None:
            for stored in (doc.source_uri, doc.file_uri):
                text = self.view.scrub(text, stored, user_id=doc.user_id, set_id=doc.set_id)
            return text

        return scrub

    def _text(self, doc: DocumentRow, max_chars: int) -> dict[str, Any]:
        try:
            text = self.engine.parsed_document(doc.doc_id, user_id=doc.user_id).text
        except NotFoundError as exc:
            return {"content": None, "chars": 0, "truncated": False, "error": exc.message}
        return {"content": text[:max_chars], "chars": len(text), "truncated": len(text) > max_chars}
