"""A LlamaIndex retriever and managed index over ragindex (``pip install 'ragindex[llamaindex]'``).

>>> from ragindex.integrations.llamaindex import RagindexRetriever            # doctest: +SKIP
>>> retriever = RagindexRetriever(data_dir=".ragindex", set_id=1, top_k=4)   # doctest: +SKIP
>>> retriever.retrieve("which moon is the largest")[0].node.metadata["filename"]  # doctest: +SKIP

:class:`RagindexIndex` is a LlamaIndex managed index: documents and nodes go in as ragindex records (ragindex
embeds them), and its retriever returns the caller's nodes.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from ragindex._optional import missing_extra
from ragindex.client.calls import RetrievalOptions
from ragindex.closing import Closing
from ragindex.errors import ValidationError
from ragindex.filters import FilterError
from ragindex.integrations._search import (
    DEFAULT_USER_ID,
    TECHNICAL_KEYS,
    Searcher,
    Target,
    hit_content,
    hit_metadata,
)

try:
    from llama_index.core.base.base_query_engine import BaseQueryEngine
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.chat_engine.types import BaseChatEngine, ChatMode
    from llama_index.core.data_structs.data_structs import IndexDict
    from llama_index.core.indices.managed.base import BaseManagedIndex
    from llama_index.core.ingestion import run_transformations
    from llama_index.core.llms.utils import LLMType
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import (
        BaseNode,
        Document,
        MetadataMode,
        NodeRelationship,
        NodeWithScore,
        QueryBundle,
        RelatedNodeInfo,
        TextNode,
        TransformComponent,
    )
    from llama_index.core.storage.docstore.types import RefDocInfo
    from llama_index.core.storage.storage_context import StorageContext
    from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters
except ImportError as exc:
    raise missing_extra("llamaindex", "the LlamaIndex retriever", exc) from exc

if TYPE_CHECKING:
    from ragindex.config.settings import Settings
    from ragindex.engine import Engine
    from ragindex.pipeline.report import IngestReport
    from ragindex.types import Hit

__all__ = ["NODE_ID_FIELD", "RagindexIndex", "RagindexRetriever", "metadata_filters_to_filter"]

_COMPARISONS = {
    FilterOperator.EQ: "$eq",
    FilterOperator.NE: "$ne",
    FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt",
    FilterOperator.LTE: "$lte",
    FilterOperator.IN: "$in",
    FilterOperator.NIN: "$nin",
    FilterOperator.CONTAINS: "$contains",
    FilterOperator.ANY: "$in",  # a list field holds any of the values: what $in means on a list field
}


def metadata_filters_to_filter(filters: MetadataFilters) -> dict[str, Any]:
    """A LlamaIndex ``MetadataFilters`` as the JSON filter of :mod:`ragindex.filters`.

    EQ, NE, GT, GTE, LT, LTE, IN, NIN and CONTAINS are the same-named operators; ANY (a list field holds any of the
    values) is ``$in``, ALL (it holds every one) an ``$and`` of ``$contains``, IS_EMPTY (missing, null or an empty
    list) ``$exists: false``. The AND and OR conditions are ``$and`` / ``$or``; NOT is LlamaIndex's "none of the
    filters holds", ``$not`` of their ``$or``. Nested ``MetadataFilters`` nest. An empty list of filters is no filter
    (``{}``).

    Raises:
        FilterError: An operator without an equivalent (TEXT_MATCH, TEXT_MATCH_INSENSITIVE: ragindex compares whole
            values), naming it and the field; ANY or ALL with a value that is not a list; an unknown condition.
    """
    items = [_filter_item(f) for f in filters.filters]
    items = [item for item in items if item]
    condition = filters.condition or FilterCondition.AND
    if not items:
        return {}
    if condition == FilterCondition.AND:
        return items[0] if len(items) == 1 else {"$and": items}
    if condition == FilterCondition.OR:
        return items[0] if len(items) == 1 else {"$or": items}
    if condition == FilterCondition.NOT:
        return {"$not": items[0] if len(items) == 1 else {"$or": items}}
    raise FilterError(f"LlamaIndex filter condition {condition!r} has no ragindex equivalent; use AND, OR or NOT")


def _filter_item(item: MetadataFilter | MetadataFilters) -> dict[str, Any]:
    if isinstance(item, MetadataFilters):
        return metadata_filters_to_filter(item)
    key, value, operator = item.key, item.value, FilterOperator(item.operator)
    if operator == FilterOperator.IS_EMPTY:
        return {key: {"$exists": False}}
    if operator in (FilterOperator.ANY, FilterOperator.ALL) and not isinstance(value, list):
        raise FilterError(
            f"LlamaIndex filter {operator.name} on {key!r} takes a list of values; got {value!r}", field=key
        )
    if operator == FilterOperator.ALL:
        return {"$and": [{key: {"$contains": v}} for v in value]} if value else {}  # type: ignore[union-attr]
    op = _COMPARISONS.get(operator)
    if op is None:
        raise FilterError(
            f"LlamaIndex filter operator {operator.name} ({operator.value!r}) on {key!r} has no ragindex equivalent: "
            "ragindex filters compare whole values (use EQ, IN or CONTAINS), and the query itself matches text",
            field=key,
            operator=operator.name,
        )
    return {key: {op: value}}


class RetrieverArgs(Target, RetrievalOptions, total=False):
    """The keywords of :class:`RagindexRetriever` after ``set_id`` and ``top_k``: its target and search options."""


class RagindexRetriever(BaseRetriever, Closing):
    """A LlamaIndex ``BaseRetriever`` that searches one ragindex set, embedded or over HTTP.

    ``retrieve`` / ``aretrieve`` return ``NodeWithScore`` objects whose score is the hit's score and whose
    ``TextNode`` (id: the chunk id) holds the hit's text (its ``context`` when ``expand`` is set) and the metadata
    of the LangChain retriever: ``chunk_id``, ``doc_id``, ``set_id``, ``source``, ``filename``, ``page``,
    ``section``, ``start_line``, ``end_line``, ``chunk_type``, ``rank``, ``score``, ``scores``, ``ranks`` and
    ``expanded``. Only ``filename``, ``page`` and ``section`` (when set) are shown to the LLM and the embedder.

    Give exactly one target: ``url`` (and ``api_key``) for a ``ragindex serve`` (``aretrieve`` uses the async
    client); ``engine`` for an open :class:`~ragindex.Engine` (yours to close); ``data_dir`` or ``settings`` for an
    embedded index opened on the first query (call :meth:`close` to give up its lock).

    A set that the tenant has no documents in (another tenant's set, a wrong id) returns no nodes, not an error.

    Args:
        set_id: The set to search (sets are per tenant).
        top_k: Nodes to return.
        url: Base URL of a ``ragindex serve`` (HTTP mode).
        api_key: An API key of the service (HTTP mode).
        timeout: Seconds per HTTP request (None: wait forever).
        engine: An open Engine (embedded mode).
        data_dir: Data dir of an embedded index (embedded mode; other settings from the environment).
        settings: Settings of an embedded index (embedded mode).
        user_id: The tenant in embedded mode (default 1); over HTTP the key decides.
        mode: ``dense``, ``bm25``, ``sparse`` or ``hybrid`` (default).
        doc_ids: Only these documents.
        score_threshold: Drop hits below this score.
        fusion: Hybrid fusion: ``rrf``, ``dbsf``, ``combine`` or ``boost``.
        rerank: Cross-encoder rerank.
        expand: ``none``, ``neighbours`` or ``section``: return each hit's context.
        context_chars: Most characters of a context.
        group_by: ``none``, ``section`` or ``document``: one hit per section or document.
        sources: Only these sources (``dense``, ``bm25``, ``sparse``).
        on_source_error: ``fail`` or ``degrade`` (answer from the other sources).
        filter: Only chunks whose metadata matches: the JSON form of :mod:`ragindex.filters` (e.g.
            ``{"year": {"$gte": 2020}}``) or a LlamaIndex ``MetadataFilters`` (see
            :func:`metadata_filters_to_filter`).
        filters: A LlamaIndex ``MetadataFilters``, as vector store retrievers take it (give ``filter`` or ``filters``).
        search_options: Further search options, passed as given.
        callback_manager: LlamaIndex callbacks.
        verbose: LlamaIndex's verbose flag.

    Raises:
        FilterError: ``filters`` uses an operator without an equivalent (TEXT_MATCH); a filter that does not fit the
            set (an unknown field, a value of another type) raises it when the search runs.
    """

    def __init__(
        self,
        *,
        set_id: int,
        top_k: int = 4,
        filter: Mapping[str, Any] | str | MetadataFilters | None = None,
        filters: MetadataFilters | None = None,
        search_options: dict[str, Any] | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **keywords: Unpack[RetrieverArgs],
    ) -> None:
        unknown = sorted(set(keywords) - RetrieverArgs.__optional_keys__)
        if unknown:
            raise TypeError(f"RagindexRetriever.__init__() got an unexpected keyword argument {unknown[0]!r}")
        if filter is not None and filters is not None:
            raise TypeError("give filter= or filters=, not both")
        given = filters if filters is not None else filter
        if isinstance(given, MetadataFilters):
            given = metadata_filters_to_filter(given)
        options = {"top_k": top_k, **keywords, **({"filter": given} if given else {})}
        self.searcher = Searcher.of(set_id, options, search_options or {})
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return _nodes(self.searcher.search(query_bundle.query_str).hits)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return _nodes((await self.searcher.asearch(query_bundle.query_str)).hits)

    def close(self) -> None:
        """Close the HTTP client, and the embedded engine this retriever opened."""
        self.searcher.close()


def _nodes(hits: Sequence[Hit]) -> list[NodeWithScore]:
    return [NodeWithScore(node=_node(h), score=h.score) for h in hits]


def _node(hit: Hit) -> TextNode:
    meta = hit_metadata(hit)
    hidden = [*TECHNICAL_KEYS, *(k for k, v in meta.items() if v is None and k not in TECHNICAL_KEYS)]
    return TextNode(
        id_=hit.chunk_id,
        text=hit_content(hit),
        metadata=meta,
        excluded_llm_metadata_keys=hidden,
        excluded_embed_metadata_keys=hidden,
    )


NODE_ID_FIELD = "llamaindex_node_id"
"""The chunk metadata field that keeps a node's ``id_`` (filterable; left out of the nodes the retriever returns)."""

_RETRIEVER_KEYS = frozenset(
    {"similarity_top_k", "top_k", "filter", "filters", "search_options", "include_ragindex_metadata", "verbose"}
    | (RetrievalOptions.__optional_keys__ - {"top_k", "filter"})
)


class RagindexIndex(BaseManagedIndex, Closing):
    """A LlamaIndex managed index whose documents and nodes are ragindex records of one set (ragindex embeds).

    Nodes need no embedding and no embed model: ragindex embeds with its own models (a node's own ``embedding`` is
    ignored), so neither OpenAI nor ``Settings.embed_model`` is touched. How LlamaIndex objects become records:

    * ``insert(document)``: the document is one record under ``document.id_`` (its key), its text cut by ragindex's
      chunker, its metadata the record's. With ``transformations=`` given to the index, the transformations cut it
      instead and its nodes are inserted as below.
    * ``insert_nodes(nodes)``: the nodes of one ``ref_doc_id`` (a node without one is its own document) are one
      record under that key, whose pre-cut ``chunks`` are the nodes' texts in order, each with the node's metadata
      and its ``id_`` (in :data:`NODE_ID_FIELD`). Nodes of a record already made of nodes are added to its nodes
      (a node whose id is already there replaces it in place); any other record of that key (a document ragindex
      cut) is replaced by them, and ``update_ref_doc`` replaces them all.
    * ``delete_ref_doc(ref_doc_id)`` deletes the record of that key.

    The retriever (:meth:`as_retriever`) returns ``TextNode`` objects with the caller's ``id_`` (a chunk ragindex cut
    has its chunk id), text, ``metadata`` and ``ref_doc_id`` (the record key), so a node round-trips. Metadata values
    are ragindex's types (strings, numbers, booleans, ISO dates, lists of strings; a value of another type is refused
    by the insert, naming the field); ``None`` values are left out, as ragindex has no null. What LlamaIndex keeps on
    a node besides these (relationships other than the source, excluded metadata keys, templates) is not kept.

    Give exactly one target: ``engine`` (an open :class:`~ragindex.Engine`, yours to close) or ``data_dir`` /
    ``settings`` (a lease on the process's one engine of that data dir, shared with every other index, retriever and
    store of the dir in this process and given back by :meth:`close`: see :mod:`ragindex.shared`).

    Args:
        nodes: Nodes to insert at construction (as :meth:`insert_nodes`).
        set_id: The set the index reads and writes (sets are per tenant).
        user_id: The tenant (default 1).
        engine: An open Engine.
        data_dir: The data dir of an embedded index (other settings from the environment).
        settings: Full settings of an embedded index.
        transformations: Node parsers to cut documents with before insertion (default: none, ragindex chunks).
        callback_manager: LlamaIndex callbacks.
        show_progress: LlamaIndex's progress flag (for the transformations).
    """

    def __init__(
        self,
        nodes: Sequence[BaseNode] | None = None,
        *,
        set_id: int = 1,
        user_id: int | None = None,
        engine: Engine | None = None,
        data_dir: str | Path | None = None,
        settings: Settings | None = None,
        transformations: list[TransformComponent] | None = None,
        callback_manager: CallbackManager | None = None,
        show_progress: bool = False,
    ) -> None:
        targets = (("engine", engine), ("data_dir", data_dir), ("settings", settings))
        given = [name for name, value in targets if value is not None]
        if len(given) != 1:
            raise ValidationError(
                "engine",
                "give one target: engine=... for an open Engine, or data_dir=... (or settings=...) for an embedded "
                f"index; got {', '.join(given) or 'none'}",
            )
        from ragindex.retrieval.search import validate_ids

        self.set_id = set_id
        self.user_id = DEFAULT_USER_ID if user_id is None else user_id
        validate_ids(user_id=self.user_id, set_id=self.set_id)
        self._finalizer: weakref.finalize[[], RagindexIndex] | None = None
        if engine is None:
            from ragindex.shared import shared_engine

            # one engine per data dir per process (ragindex.shared): indexes and retrievers of one dir share it
            lease = shared_engine(settings, data_dir=data_dir)
            engine = lease.engine
            self._finalizer = weakref.finalize(self, lease.close)  # indexes are rarely closed: give back the lease
        self.engine: Engine = engine
        self._own_transformations = list(transformations or [])
        super().__init__(
            nodes=None,
            index_struct=IndexDict(),
            storage_context=StorageContext.from_defaults(),
            callback_manager=callback_manager,
            transformations=self._own_transformations or [_NoTransformation()],
            show_progress=show_progress,
        )
        if nodes:
            self.insert_nodes(nodes)

    # ------------------------------------------------------------------ writing
    def insert(self, document: Document, **insert_kwargs: Any) -> None:
        """Insert (or replace) a document: one record under ``document.id_`` (see the class docstring)."""
        self.insert_documents([document], **insert_kwargs)

    async def ainsert(self, document: Document, **insert_kwargs: Any) -> None:
        """:meth:`insert` in a worker thread."""
        await asyncio.to_thread(self.insert, document, **insert_kwargs)

    def insert_documents(self, documents: Sequence[Document], **insert_kwargs: Any) -> list[IngestReport]:
        """Insert (or replace) documents, up to 1,000 records per ragindex upsert; the upserts' reports."""
        with self._callback_manager.as_trace("insert"):
            if self._own_transformations:
                nodes = run_transformations(
                    list(documents), self._own_transformations, show_progress=self._show_progress, **insert_kwargs
                )
                return self._upsert_nodes(nodes, replace=True)
            return self._upsert([_document_record(d) for d in documents])

    def refresh_ref_docs(self, documents: Sequence[Document], **update_kwargs: Any) -> list[bool]:
        """Insert or replace each document; for each, whether it changed anything (False: its record was unchanged).

        ragindex compares each record with the stored one (its content, title and metadata hash), so unlike
        LlamaIndex's docstore-based refresh this holds across processes, and an unchanged document costs one read.
        """
        changed = []
        for document in documents:
            reports = self.insert_documents([document], **update_kwargs.get("insert_kwargs", {}))
            changed.append(any(r.documents.get("unchanged", 0) == 0 for r in reports))
        return changed

    async def arefresh_ref_docs(self, documents: Sequence[Document], **update_kwargs: Any) -> list[bool]:
        """:meth:`refresh_ref_docs` in a worker thread."""
        return await asyncio.to_thread(self.refresh_ref_docs, documents, **update_kwargs)

    def insert_nodes(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        """Insert nodes: each ``ref_doc_id``'s nodes are added to that record's (see the class docstring)."""
        with self._callback_manager.as_trace("insert_nodes"):
            self._upsert_nodes(nodes, replace=False)

    async def ainsert_nodes(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        """:meth:`insert_nodes` in a worker thread."""
        await asyncio.to_thread(self.insert_nodes, nodes, **insert_kwargs)

    def _insert(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        self._upsert_nodes(nodes, replace=False)

    def update_ref_doc(self, document: Document, **update_kwargs: Any) -> None:
        """Replace a document and all its nodes (an upsert of its record: unchanged chunks embed nothing)."""
        self.insert(document, **update_kwargs.get("insert_kwargs", {}))

    async def aupdate_ref_doc(self, document: Document, **update_kwargs: Any) -> None:
        """:meth:`update_ref_doc` in a worker thread."""
        await asyncio.to_thread(self.update_ref_doc, document, **update_kwargs)

    def delete_ref_doc(self, ref_doc_id: str, delete_from_docstore: bool = False, **delete_kwargs: Any) -> None:
        """Delete the record ``ref_doc_id`` and all its nodes (a key that names nothing is a no-op, as in LlamaIndex).

        ``delete_from_docstore`` is accepted and has nothing to do: this index keeps no docstore copy.
        """
        self.engine.delete(keys=[ref_doc_id], user_id=self.user_id, set_id=self.set_id)

    async def adelete_ref_doc(self, ref_doc_id: str, delete_from_docstore: bool = False, **delete_kwargs: Any) -> None:
        """:meth:`delete_ref_doc` in a worker thread."""
        await asyncio.to_thread(self.delete_ref_doc, ref_doc_id)

    def _delete_node(self, node_id: str, **delete_kwargs: Any) -> None:
        raise NotImplementedError(
            "RagindexIndex deletes whole documents: ragindex keys records by their ref_doc_id, not by node id; use "
            "delete_ref_doc(ref_doc_id), or insert_nodes / update_ref_doc with the nodes to keep"
        )

    def _upsert_nodes(self, nodes: Sequence[BaseNode], *, replace: bool) -> list[IngestReport]:
        groups: dict[str, list[TextNode]] = {}
        for node in nodes:
            if not isinstance(node, TextNode):
                raise TypeError(f"RagindexIndex indexes text nodes; node {node.node_id!r} is a {type(node).__name__}")
            groups.setdefault(node.ref_doc_id or node.node_id, []).append(node)
        current = {} if replace else self._current_chunks(list(groups))
        records = []
        for key, group in groups.items():
            chunks = {c["metadata"][NODE_ID_FIELD]: c for c in current.get(key, [])}  # in order, replaced in place
            chunks.update({node.node_id: _node_chunk(node) for node in group})
            records.append({"key": key, "chunks": list(chunks.values())})
        return self._upsert(records)

    def _current_chunks(self, keys: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """Key -> the chunks of that record when it is made of nodes (each with its node id), as upsert takes them."""
        found = self.engine.store.documents_by_key(self.user_id, self.set_id, keys)
        out: dict[str, list[dict[str, Any]]] = {}
        for key, doc in found.items():
            rows = self.engine.store.chunks_of_document(doc.doc_id)
            fields = [dict(row.metadata.get("fields") or {}) for row in rows]
            if rows and all(NODE_ID_FIELD in f for f in fields):  # a document ragindex cut is replaced whole
                out[key] = [{"text": row.content, "metadata": f} for row, f in zip(rows, fields, strict=True)]
        return out

    def _upsert(self, records: Sequence[Mapping[str, Any]]) -> list[IngestReport]:
        from ragindex.records import MAX_BATCH

        return [
            self.engine.upsert(records[start : start + MAX_BATCH], user_id=self.user_id, set_id=self.set_id)
            for start in range(0, len(records), MAX_BATCH)
        ]

    # ------------------------------------------------------------------ reading
    def as_retriever(self, **kwargs: Any) -> BaseRetriever:
        """A retriever of this index's set, returning the caller's nodes.

        Args:
            **kwargs: ``similarity_top_k`` (or ``top_k``, default 4), ``filters`` (a ``MetadataFilters``, mapped by
                :func:`metadata_filters_to_filter`; or ``filter``, also the JSON filter), ``mode`` and the other
                search options of :class:`RagindexRetriever` (``fusion``, ``rerank``, ``expand``, ...), and
                ``include_ragindex_metadata`` (add ragindex's fields, ``chunk_id``, ``score``, ``scores``, ...,
                to each node's metadata; hidden from the LLM).

        Raises:
            TypeError: An unknown keyword, naming it.
            FilterError: A filter operator without a ragindex equivalent, naming it.
        """
        unknown = sorted(set(kwargs) - _RETRIEVER_KEYS)
        if unknown:
            raise TypeError(
                f"RagindexIndex.as_retriever() got an unexpected keyword argument {unknown[0]!r}; it takes "
                f"{', '.join(sorted(_RETRIEVER_KEYS))}"
            )
        options = dict(kwargs)
        top_k = options.pop("similarity_top_k", None)
        if top_k is not None and options.get("top_k") not in (None, top_k):
            raise TypeError("give similarity_top_k or top_k, not both")
        options["top_k"] = top_k if top_k is not None else options.get("top_k") or 4
        include = bool(options.pop("include_ragindex_metadata", False))
        return _IndexRetriever(
            index=self,
            include_ragindex_metadata=include,
            engine=self.engine,
            set_id=self.set_id,
            user_id=self.user_id,
            callback_manager=self._callback_manager,
            **options,
        )

    def as_query_engine(self, llm: LLMType | None = None, **kwargs: Any) -> BaseQueryEngine:
        """A ``RetrieverQueryEngine`` over :meth:`as_retriever`: retriever keywords go there, the rest to the engine.

        As in LlamaIndex, ``llm=None`` means ``Settings.llm``; give ``llm=`` (e.g. ``MockLLM()``) to use another.
        """
        from llama_index.core.llms.utils import resolve_llm
        from llama_index.core.query_engine import RetrieverQueryEngine
        from llama_index.core.settings import Settings as LlamaSettings

        retriever = self.as_retriever(**{k: v for k, v in kwargs.items() if k in _RETRIEVER_KEYS})
        resolved = resolve_llm(llm, callback_manager=self._callback_manager) if llm else LlamaSettings.llm
        rest = {k: v for k, v in kwargs.items() if k not in _RETRIEVER_KEYS}
        return RetrieverQueryEngine.from_args(retriever, llm=resolved, callback_manager=self._callback_manager, **rest)

    def as_chat_engine(
        self, chat_mode: ChatMode | str = ChatMode.BEST, llm: LLMType | None = None, **kwargs: Any
    ) -> BaseChatEngine:
        """LlamaIndex's chat engine of ``chat_mode`` over :meth:`as_retriever`.

        Retriever keywords go to the retriever, the rest to the chat engine (``system_prompt``, ``memory``, ...).
        ``BEST`` is ``CONDENSE_PLUS_CONTEXT``, as in LlamaIndex; ``llm=None`` means ``Settings.llm``.
        """
        from llama_index.core.chat_engine import (
            CondensePlusContextChatEngine,
            CondenseQuestionChatEngine,
            ContextChatEngine,
            SimpleChatEngine,
        )
        from llama_index.core.llms.utils import resolve_llm
        from llama_index.core.settings import Settings as LlamaSettings

        mode = ChatMode(chat_mode)
        if mode not in (ChatMode.CONDENSE_QUESTION, ChatMode.CONTEXT, ChatMode.CONDENSE_PLUS_CONTEXT,
                        ChatMode.BEST, ChatMode.SIMPLE):  # fmt: skip
            return super().as_chat_engine(chat_mode=mode, llm=llm, **kwargs)  # LlamaIndex's error for REACT, OPENAI
        resolved = resolve_llm(llm, callback_manager=self._callback_manager) if llm else LlamaSettings.llm
        mine = {k: v for k, v in kwargs.items() if k in _RETRIEVER_KEYS}
        rest = {k: v for k, v in kwargs.items() if k not in _RETRIEVER_KEYS}
        if mode == ChatMode.CONDENSE_QUESTION:
            engine = self.as_query_engine(llm=resolved, **mine)
            return CondenseQuestionChatEngine.from_defaults(query_engine=engine, llm=resolved, **rest)
        if mode == ChatMode.CONTEXT:
            return ContextChatEngine.from_defaults(retriever=self.as_retriever(**mine), llm=resolved, **rest)
        if mode == ChatMode.SIMPLE:
            return SimpleChatEngine.from_defaults(llm=resolved, **rest)
        return CondensePlusContextChatEngine.from_defaults(retriever=self.as_retriever(**mine), llm=resolved, **rest)

    @property
    def ref_doc_info(self) -> dict[str, RefDocInfo]:
        """Every document of the set: key -> its node ids (chunk ids for chunks ragindex cut) and its metadata.

        Read from the truth store (one query per document): a listing, not a hot path.
        """
        out: dict[str, RefDocInfo] = {}
        cursor: str | None = None
        while True:
            page = self.engine.documents(user_id=self.user_id, set_id=self.set_id, cursor=cursor, limit=500)
            for doc in page.documents:
                rows = self.engine.store.chunks_of_document(doc.doc_id)
                ids = [str((row.metadata.get("fields") or {}).get(NODE_ID_FIELD) or row.chunk_id) for row in rows]
                out[doc.source_uri] = RefDocInfo(node_ids=ids, metadata=dict(doc.metadata))
            cursor = page.next_cursor
            if cursor is None:
                return out

    # ------------------------------------------------------------------ building
    @classmethod
    def from_documents(
        cls,
        documents: Sequence[Document],
        storage_context: StorageContext | None = None,
        show_progress: bool = False,
        callback_manager: CallbackManager | None = None,
        transformations: list[TransformComponent] | None = None,
        **kwargs: Any,
    ) -> RagindexIndex:
        """An index on ``engine`` / ``data_dir`` / ``settings`` (and ``set_id``, ``user_id``) holding ``documents``.

        ``storage_context`` is refused: ragindex is the storage.
        """
        if storage_context is not None:
            raise TypeError("RagindexIndex keeps its documents in ragindex: leave storage_context out")
        index = cls(
            transformations=transformations, callback_manager=callback_manager, show_progress=show_progress, **kwargs
        )
        index.insert_documents(documents)
        return index

    def close(self) -> None:
        """Give back the lease on the shared engine of ``data_dir`` (an engine given to the index is left open)."""
        if self._finalizer is not None:
            self._finalizer()


class _NoTransformation(TransformComponent):
    """Stands in for ``Settings.transformations`` (never used: documents are chunked by ragindex)."""

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        return nodes


class _IndexRetriever(RagindexRetriever):
    """The retriever of a :class:`RagindexIndex`: the caller's nodes back (ids, metadata, ref_doc_id)."""

    def __init__(self, *, index: RagindexIndex, include_ragindex_metadata: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.index = index  # keeps the index, and the engine it opened, alive while the retriever is
        self.include_ragindex_metadata = include_ragindex_metadata

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self.searcher.search(query_bundle.query_str).hits
        return [NodeWithScore(node=_record_node(h, self.include_ragindex_metadata), score=h.score) for h in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = (await self.searcher.asearch(query_bundle.query_str)).hits
        return [NodeWithScore(node=_record_node(h, self.include_ragindex_metadata), score=h.score) for h in hits]


def _record_node(hit: Hit, include_ragindex_metadata: bool) -> TextNode:
    meta = dict(hit.metadata)
    node_id = meta.pop(NODE_ID_FIELD, None)
    hidden: list[str] = []
    if include_ragindex_metadata:
        extra = {k: v for k, v in hit_metadata(hit).items() if k not in meta}
        meta.update(extra)
        hidden = list(extra)
    return TextNode(
        id_=str(node_id) if node_id is not None else hit.chunk_id,
        text=hit_content(hit),
        metadata=meta,
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=hit.key)},
        excluded_llm_metadata_keys=hidden,
        excluded_embed_metadata_keys=hidden,
    )


def _metadata(meta: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if v is not None}


def _document_record(document: Document) -> dict[str, Any]:
    record: dict[str, Any] = {"key": document.id_, "text": document.get_content(metadata_mode=MetadataMode.NONE)}
    if document.metadata:
        record["metadata"] = _metadata(document.metadata)
    return record


def _node_chunk(node: TextNode) -> dict[str, Any]:
    """A node as a record's chunk: its text, its metadata and its id (a field of the node's own is refused)."""
    if NODE_ID_FIELD in node.metadata:
        raise ValidationError(
            "metadata", f"node {node.node_id!r}: the metadata field {NODE_ID_FIELD!r} is the index's own; rename it"
        )
    text = node.get_content(metadata_mode=MetadataMode.NONE)
    return {"text": text, "metadata": {**_metadata(node.metadata), NODE_ID_FIELD: node.node_id}}
