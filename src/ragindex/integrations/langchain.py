"""A LangChain retriever over ragindex (``pip install 'ragindex[langchain]'``).

>>> from ragindex.integrations.langchain import RagindexRetriever           # doctest: +SKIP
>>> retriever = RagindexRetriever(data_dir=".ragindex", set_id=1, top_k=4)  # doctest: +SKIP
>>> retriever.invoke("which moon is the largest")[0].metadata["filename"]   # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, PrivateAttr, SecretStr

from ragindex._optional import missing_extra
from ragindex.closing import Closing
from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import ValidationError
from ragindex.integrations._search import Filter, Searcher, hit_content, hit_metadata
from ragindex.integrations.langchain_store import RagindexVectorStore
from ragindex.types import Hit

try:
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError as exc:
    raise missing_extra("langchain", "the LangChain retriever", exc) from exc

__all__ = ["CALL_OPTIONS", "RagindexRetriever", "RagindexVectorStore"]


class RagindexRetriever(BaseRetriever, Closing):
    """A LangChain ``BaseRetriever`` that searches one ragindex set, embedded or over HTTP.

    ``invoke`` / ``ainvoke`` return ``Document`` objects: ``page_content`` is the hit's text (its ``context`` when
    ``expand`` is set) and ``metadata`` holds ``chunk_id``, ``doc_id``, ``set_id``, ``source``, ``filename``,
    ``page``, ``section``, ``start_line``, ``end_line``, ``chunk_type``, ``rank``, ``score``, ``scores`` and
    ``ranks`` (per source: dense, bm25, sparse) and ``expanded``.

    Give exactly one target:

    * ``url`` (and ``api_key``): a ``ragindex serve``; ``ainvoke`` uses the async client.
    * ``engine``: an open :class:`~ragindex.Engine` (yours to close).
    * ``data_dir`` or ``settings``: the process's shared engine of that data dir (:mod:`ragindex.shared`: two
      retrievers and a :class:`RagindexVectorStore` on one data dir share one engine), taken on the first query;
      :meth:`close` (or ``with``) gives it back, and the last user's close frees the index lock.

    ``invoke(query, **kwargs)`` takes one call's own options over the retriever's: ``top_k`` (alias ``k``),
    ``mode``, ``filter`` and the others of :data:`CALL_OPTIONS`; any other keyword raises
    :class:`~ragindex.errors.ValidationError` naming it and the valid ones.

    ``filter`` (the JSON form of :mod:`ragindex.filters`, e.g. ``{"year": {"$gte": 2020}}``) narrows every search
    to chunks whose metadata matches; ``invoke(query, filter=...)`` narrows one call further (both must hold). A
    bad filter raises an :class:`~ragindex.errors.InputError` naming the problem when the search runs
    (:class:`~ragindex.filters.FilterError` embedded, the service's 422 ``ValidationError`` over HTTP).

    A set that the tenant has no documents in (another tenant's set, a wrong id) returns no documents, not an
    error. Errors are :class:`~ragindex.errors.RagindexError` (an unreachable service: ``BackendError``).

    Example:
        >>> retriever = RagindexRetriever(url="http://127.0.0.1:8000", api_key=key, set_id=1)  # doctest: +SKIP
        >>> docs = retriever.invoke("which moon is the largest")  # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    set_id: int = Field(description="The set to search (sets are per tenant).")
    top_k: int = Field(4, ge=1, description="Documents to return.")
    url: str | None = Field(None, description="Base URL of a `ragindex serve` (HTTP mode).")
    api_key: SecretStr | None = Field(None, description="An API key of the service (HTTP mode).")
    timeout: float | None = Field(30.0, description="Seconds per HTTP request (None: wait forever).")
    engine: Engine | None = Field(None, description="An open Engine to search (embedded mode; not closed here).")
    data_dir: Path | None = Field(None, description="Data dir of an embedded index (embedded mode).")
    settings: Settings | None = Field(None, description="Settings of an embedded index (embedded mode).")
    user_id: int | None = Field(None, description="The tenant in embedded mode (default 1); over HTTP the key's.")
    mode: str | None = Field(None, description="dense, bm25, sparse or hybrid (default: hybrid).")
    doc_ids: list[int] | None = Field(None, description="Only these documents.")
    score_threshold: float | None = Field(None, description="Drop hits below this score.")
    fusion: str | None = Field(None, description="Hybrid fusion: rrf, dbsf, combine or boost.")
    rerank: bool | None = Field(None, description="Cross-encoder rerank.")
    expand: str | None = Field(None, description="none, neighbours or section: return each hit's context.")
    context_chars: int | None = Field(None, description="Most characters of a context.")
    group_by: str | None = Field(None, description="none, section or document: one hit per section or document.")
    filter: dict[str, Any] | str | None = Field(
        None,
        description='Only chunks whose metadata matches this filter, e.g. {"year": {"$gte": 2020}} (see '
        "ragindex.filters); a call's own filter= must hold too.",
    )
    search_options: dict[str, Any] = Field(default_factory=dict, description="Further search options, as given.")

    _searcher: Searcher = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        """Check the target and the options once, when the retriever is made."""
        options = {
            "top_k": self.top_k,
            "mode": self.mode,
            "doc_ids": self.doc_ids,
            "score_threshold": self.score_threshold,
            "fusion": self.fusion,
            "rerank": self.rerank,
            "expand": self.expand,
            "context_chars": self.context_chars,
            "group_by": self.group_by,
            "filter": self.filter,
            **self.search_options,
        }
        self._searcher = Searcher(
            set_id=self.set_id,
            user_id=self.user_id,
            url=self.url,
            api_key=self.api_key.get_secret_value() if self.api_key is not None else None,
            timeout=self.timeout,
            engine=self.engine,
            data_dir=self.data_dir,
            settings=self.settings,
            options=options,
        )

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, filter: Filter = None, **options: Any
    ) -> list[Document]:
        return _documents(self._searcher.search(query, filter=filter, options=call_options(options)).hits)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, filter: Filter = None, **options: Any
    ) -> list[Document]:
        found = await self._searcher.asearch(query, filter=filter, options=call_options(options))
        return _documents(found.hits)

    def close(self) -> None:
        """Close the HTTP client, and the embedded engine this retriever opened."""
        self._searcher.close()


CALL_OPTIONS = (
    "top_k",
    "k",
    "mode",
    "filter",
    "doc_ids",
    "score_threshold",
    "fusion",
    "candidates",
    "rerank",
    "expand",
    "context_chars",
    "group_by",
    "sources",
    "on_source_error",
)
"""The keywords ``RagindexRetriever.invoke(query, **kwargs)`` takes for one call (``k`` is ``top_k``)."""


def call_options(options: dict[str, Any]) -> dict[str, Any]:
    """One call's search options (``k`` as ``top_k``), or a ValidationError naming an unknown key and the valid ones."""
    unknown = sorted(set(options) - set(CALL_OPTIONS))
    if unknown:
        raise ValidationError(
            unknown[0],
            f"unknown search option(s) {', '.join(map(repr, unknown))} for RagindexRetriever.invoke; valid: "
            f"{', '.join(CALL_OPTIONS)}",
        )
    if "k" in options:
        if "top_k" in options and options["top_k"] != options["k"]:
            raise ValidationError("k", "give top_k or k (its alias), not both")
        options = {**options, "top_k": options["k"]}
        del options["k"]
    return options


def _documents(hits: Sequence[Hit]) -> list[Document]:
    return [Document(page_content=hit_content(h), metadata=hit_metadata(h), id=h.chunk_id) for h in hits]
