"""A LlamaIndex retriever over ragindex (``pip install 'ragindex[llamaindex]'``).

>>> from ragindex.integrations.llamaindex import RagindexRetriever            # doctest: +SKIP
>>> retriever = RagindexRetriever(data_dir=".ragindex", set_id=1, top_k=4)   # doctest: +SKIP
>>> retriever.retrieve("which moon is the largest")[0].node.metadata["filename"]  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack

from ragindex._optional import missing_extra
from ragindex.client.calls import RetrievalOptions
from ragindex.closing import Closing
from ragindex.filters import FilterError
from ragindex.integrations._search import TECHNICAL_KEYS, Searcher, Target, hit_content, hit_metadata

try:
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
    from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters
except ImportError as exc:
    raise missing_extra("llamaindex", "the LlamaIndex retriever", exc) from exc

if TYPE_CHECKING:
    from ragindex.types import Hit

__all__ = ["RagindexRetriever", "metadata_filters_to_filter"]

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
