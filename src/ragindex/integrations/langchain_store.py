"""A LangChain ``VectorStore`` over ragindex records (``pip install 'ragindex[langchain]'``).

Import it from :mod:`ragindex.integrations.langchain`:

>>> from ragindex.integrations.langchain import RagindexVectorStore        # doctest: +SKIP
>>> store = RagindexVectorStore(data_dir=".ragindex", set_id=3)             # doctest: +SKIP
>>> store.add_texts(["Ganymede is the largest moon."], metadatas=[{"planet": "jupiter"}], ids=["moon-1"])
['moon-1']
>>> store.similarity_search("largest moon", k=1, filter={"planet": "jupiter"})[0].id  # doctest: +SKIP
'moon-1'

Each LangChain ``Document`` is one ragindex record under the key ``Document.id`` whose one chunk is its
``page_content`` (LangChain's model: one document, one vector; split long texts before adding them, as with any
LangChain store). Its metadata is the record's metadata, so ``filter=`` (the JSON form of :mod:`ragindex.filters`)
works on it. Values ragindex metadata cannot hold (``None``, nested mappings, lists of non-strings, field names
outside ``[A-Za-z_][A-Za-z0-9_.-]*``) are kept JSON-encoded under the one field :data:`EXTRA_FIELD` and restored
on the way back: they round-trip, but a filter cannot select on them.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragindex._optional import missing_extra
from ragindex.closing import Closing
from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import BackendError, NotFoundError, ValidationError
from ragindex.integrations._search import Filter, Searcher, hit_metadata
from ragindex.types import Hit, SearchResult

if TYPE_CHECKING:
    from ragindex.client import Client

try:
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import VectorStore
except ImportError as exc:
    raise missing_extra("langchain", "the LangChain vector store", exc) from exc

__all__ = ["EXTRA_FIELD", "SEARCH_OPTIONS", "RagindexVectorStore"]

EXTRA_FIELD = "langchain_extra"
"""The metadata field that holds, as JSON text, the caller's values ragindex metadata cannot type."""

HTTP_BATCH = 100
"""Records per ``POST /v1/sets/{set_id}/records`` of the HTTP form: the most the service answers synchronously."""

SEARCH_OPTIONS = (
    "mode",
    "doc_ids",
    "score_threshold",
    "fusion",
    "candidates",
    "rerank",
    "sources",
    "on_source_error",
)
"""Search options a store's search takes besides ``k`` and ``filter`` (see :meth:`ragindex.Engine.search`)."""


def encode_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The record metadata of a LangChain document's metadata: typed fields as they are, the rest under one field.

    A value is kept as a field when ragindex stores it unchanged (a string, a number, a boolean, a list of
    strings); any other value, and any field whose name ragindex refuses, goes JSON-encoded under
    :data:`EXTRA_FIELD`.
    """
    from ragindex.metadata import MetadataError, normalise

    fields: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for name, value in metadata.items():
        if name == EXTRA_FIELD:
            raise ValidationError("metadata", f"the metadata field {EXTRA_FIELD!r} is the store's own; rename it")
        try:
            stored = normalise({name: value})[0].get(name)
        except MetadataError:
            stored = None
        if stored is not None and stored == value and type(stored) is type(value):
            fields[name] = value
        else:
            extra[name] = value
    if extra:
        try:
            fields[EXTRA_FIELD] = json.dumps(extra, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise ValidationError("metadata", f"metadata values must be JSON-serialisable: {exc}") from exc
    return fields


def decode_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The caller's metadata back from a record's metadata (the inverse of :func:`encode_metadata`)."""
    out = {k: v for k, v in metadata.items() if k != EXTRA_FIELD}
    raw = metadata.get(EXTRA_FIELD)
    if isinstance(raw, str):
        try:
            extra = json.loads(raw)
        except ValueError:
            extra = None
        if isinstance(extra, dict):
            out.update(extra)
    return out


class RagindexVectorStore(VectorStore, Closing):
    """A LangChain ``VectorStore`` on one ragindex set: documents are records keyed by their ``id``.

    Give exactly one target:

    * ``url`` (and ``api_key``): a ``ragindex serve`` (the key decides the tenant);
    * ``engine``: an open :class:`~ragindex.Engine` (yours to close);
    * ``data_dir`` or ``settings``: the process's shared engine of that data dir (:mod:`ragindex.shared`: two
      retrievers and a store on one data dir share one engine), given back by :meth:`close`.

    Over HTTP the store uses the records routes: ``add_texts`` posts batches of :data:`HTTP_BATCH` records
    (searchable when it returns; a batch over 1 MiB becomes a job it waits for), ``delete`` sends one ``DELETE`` per
    id, a search reads each hit's record for its metadata (a hit over HTTP carries none: ``k`` + 1 requests), and
    ``get_by_ids`` reads the record, its document and its chunk (3 requests per id).

    ragindex embeds with its own models (the data dir's dense model, BM25 and sparse encoders), so the store takes
    no LangChain ``Embeddings``: ``embeddings`` must be None, and anything else is refused with
    :class:`~ragindex.errors.ValidationError` rather than silently ignored. :attr:`embeddings` is None.

    The ``Document`` objects it returns carry the ``id``, ``page_content`` and ``metadata`` given when they were
    added, exactly; ``include_ragindex_metadata=True`` adds ragindex's own fields of a hit (chunk and doc ids,
    score, per-source scores and ranks, ...) under the one key ``"ragindex"``.

    Args:
        set_id: The set (per tenant) that holds the store's documents.
        user_id: The tenant, embedded only (default 1).
        mode: The default search mode: ``hybrid`` (default), ``dense``, ``bm25`` or ``sparse``.
        search_options: Default options of every search (the names of :data:`SEARCH_OPTIONS`).
        include_ragindex_metadata: Add a hit's ragindex fields under ``metadata["ragindex"]``.
        embeddings: Must be None (see above).
    """

    def __init__(
        self,
        *,
        set_id: int,
        url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = 30.0,
        engine: Engine | None = None,
        data_dir: str | Path | None = None,
        settings: Settings | None = None,
        user_id: int | None = None,
        mode: str | None = None,
        search_options: Mapping[str, Any] | None = None,
        include_ragindex_metadata: bool = False,
        embeddings: Embeddings | None = None,
    ) -> None:
        if embeddings is not None:
            raise ValidationError(
                "embeddings",
                "ragindex embeds with its own models (RAGINDEX_DENSE_MODEL and the sparse/BM25 encoders of the data "
                "dir), so a LangChain Embeddings object would not be used: pass embeddings=None",
            )
        options = dict(search_options or {})
        _check_options(options)
        if mode is not None:
            options["mode"] = mode
        self.set_id = set_id
        self.include_ragindex_metadata = include_ragindex_metadata
        self._searcher = Searcher(
            set_id=set_id,
            url=url,
            api_key=api_key,
            timeout=timeout,
            engine=engine,
            data_dir=data_dir,
            settings=settings,
            user_id=user_id,
            options=options,
        )

    # ------------------------------------------------------------------ target
    @property
    def embeddings(self) -> Embeddings | None:
        """None: ragindex embeds with its own models."""
        return None

    @property
    def engine(self) -> Engine:
        """The engine the store writes to and searches (the shared one of its data dir, opened on first use).

        Raises:
            ValidationError: The store is over HTTP.
        """
        if self._searcher.mode == "http":
            raise ValidationError("url", "this store is over HTTP: it has no engine in this process")
        return self._searcher._open_engine()

    @property
    def _client(self) -> Client | None:
        return self._searcher._open_client() if self._searcher.mode == "http" else None

    @property
    def user_id(self) -> int:
        """The tenant the store writes for."""
        return self._searcher.user_id

    def close(self) -> None:
        """Give back the shared engine's lease (the engine given as ``engine=`` stays open)."""
        self._searcher.close()

    # ------------------------------------------------------------------ writes
    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Upsert texts as records (``ids`` are their keys; a uuid4 key for each text without one).

        A key already in the set is replaced (content and metadata); an unchanged one costs nothing. The texts are
        searchable when this returns. A key given twice keeps the last text.

        Raises:
            RecordError: A bad text (empty), key or metadata (a field whose type differs from the set's); nothing
                of that batch of 1000 is written.
        """
        if kwargs:
            raise ValidationError(next(iter(kwargs)), "add_texts takes texts, metadatas and ids only")
        texts = list(texts)
        metas = list(metadatas) if metadatas is not None else [{} for _ in texts]
        given_ids: list[str | None] = list(ids) if ids is not None else [None] * len(texts)
        if len(metas) != len(texts) or len(given_ids) != len(texts):
            raise ValidationError(
                "ids", f"{len(texts)} texts, {len(metas)} metadatas and {len(given_ids)} ids: give one each"
            )
        keys = [k if k else str(uuid.uuid4()) for k in given_ids]  # add_documents passes None for a Document.id
        records: dict[str, dict[str, Any]] = {}
        for key, text, meta in zip(keys, texts, metas, strict=True):
            records.pop(key, None)  # the last text of a key wins, in its place
            records[key] = {"key": key, "chunks": [text], "metadata": encode_metadata(meta or {})}
        from ragindex.records import MAX_BATCH

        batch = list(records.values())
        client = self._client
        if client is None:
            for start in range(0, len(batch), MAX_BATCH):
                self.engine.upsert(batch[start : start + MAX_BATCH], user_id=self.user_id, set_id=self.set_id)
            return keys
        for start in range(0, len(batch), HTTP_BATCH):
            answer = client.upsert_records(self.set_id, batch[start : start + HTTP_BATCH])
            if "job_id" in answer:  # over 1 MiB of content: the service made it a job
                job = client.wait_for_job(str(answer["job_id"]))
                if job.status != "succeeded":
                    raise BackendError(f"the records job {job.job_id} ended {job.status}: {job.error or 'no error'}")
        return keys

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete the documents with these ids (unknown ids are ignored); True when done.

        ``ids=None`` (LangChain's "delete everything") is refused: name the ids.
        """
        if kwargs:
            raise ValidationError(next(iter(kwargs)), "delete takes ids only")
        if ids is None:
            raise ValidationError("ids", "give the ids to delete; deleting a whole set is not done through LangChain")
        keys = list(dict.fromkeys(ids))
        client = self._client
        if client is None:
            for start in range(0, len(keys), 1000):
                self.engine.delete(keys=keys[start : start + 1000], user_id=self.user_id, set_id=self.set_id)
            return True
        for key in keys:
            with contextlib.suppress(NotFoundError):  # an unknown id is ignored, as LangChain's stores do
                client.delete_record(self.set_id, key)
        return True

    # ------------------------------------------------------------------ reads
    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents with these ids, in the order asked, leaving out unknown ids.

        A record written outside this store with several chunks comes back with its chunks joined by blank lines.
        """
        client = self._client
        if client is not None:
            return [doc for doc in (self._http_document(client, key) for key in ids) if doc is not None]
        engine = self.engine
        found = engine.store.documents_by_key(self.user_id, self.set_id, list(dict.fromkeys(ids)))
        out: list[Document] = []
        for key in ids:
            doc = found.get(key)
            if doc is None or doc.lifecycle_status != "ACTIVE" or doc.doc_id is None:
                continue
            chunks = engine.store.chunks_of_document(doc.doc_id)
            text = "\n\n".join(c.content for c in chunks)
            out.append(Document(id=key, page_content=text, metadata=decode_metadata(doc.metadata)))
        return out

    def _http_document(self, client: Client, key: str) -> Document | None:
        """A record over HTTP: its metadata, then its chunks' texts (None when no record has the key)."""
        try:
            found = client.record(self.set_id, key)
            detail = client.document(int(found["doc_id"]), chunks=True)
            ids = [c.chunk_id for c in detail.chunks or () if c.unit == "chunk"]
            text = "\n\n".join(client.chunk(chunk_id).text for chunk_id in ids)
        except NotFoundError:
            return None  # unknown, or deleted meanwhile
        return Document(id=key, page_content=text, metadata=decode_metadata(found.get("metadata") or {}))

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        """The ``k`` documents that best match ``query`` (``filter=``, ``mode=`` and :data:`SEARCH_OPTIONS`)."""
        return [doc for doc, _ in self.similarity_search_with_score(query, k, **kwargs)]

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: Filter = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Documents and their scores, best first (higher is better; the scale is the mode's: RRF for hybrid).

        Raises:
            ValidationError: An option not in :data:`SEARCH_OPTIONS`.
            FilterError: A bad filter (an unknown field lists the set's fields).
        """
        _check_options(kwargs)
        options = {"top_k": k, "group_by": "document", "expand": "none", **kwargs}
        return self._scored(self._searcher.search(query, filter=filter, options=options))

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, filter: Filter = None, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` documents nearest to a query embedding (mode ``dense``, the store's dense index).

        ``embedding`` must come from the set's dense model (this store has no LangChain ``Embeddings``: encode with
        ``store.engine.dense.encode_queries([text])[0]`` or the same model elsewhere); another dimension raises
        :class:`~ragindex.errors.ValidationError`. ``filter`` and :data:`SEARCH_OPTIONS` as in
        :meth:`similarity_search` (``mode="hybrid"`` raises: a vector alone cannot search the lexical sources).
        """
        _check_options(kwargs)
        options = {"mode": "dense", "top_k": k, "group_by": "document", "expand": "none", **kwargs}
        result = self._searcher.search("", filter=filter, options={**options, "vector": embedding})
        return [doc for doc, _ in self._scored(result)]

    def _scored(self, result: SearchResult) -> list[tuple[Document, float]]:
        client = self._client
        if client is None:
            return [(self._document(hit, hit.metadata), hit.score) for hit in result.hits]
        out = []
        for hit in result.hits:  # a hit over HTTP carries no metadata: read its record's
            try:
                metadata = client.record(self.set_id, hit.key).get("metadata") or {}
            except NotFoundError:
                continue  # deleted since the search
            out.append((self._document(hit, metadata), hit.score))
        return out

    def _document(self, hit: Hit, stored: Mapping[str, Any]) -> Document:
        metadata = decode_metadata(stored)
        if self.include_ragindex_metadata:
            metadata["ragindex"] = hit_metadata(hit)
        return Document(id=hit.key, page_content=hit.text, metadata=metadata)

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        raise NotImplementedError(
            "ragindex scores are not on a fixed scale (RRF for hybrid, BM25 for bm25): use similarity_search_with_score"
        )

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> RagindexVectorStore:
        """A store (``kwargs``: the constructor's) with these texts added; ``embedding`` must be None."""
        store = cls(embeddings=embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=list(ids) if ids is not None else None)
        return store


def _check_options(options: Mapping[str, Any]) -> None:
    unknown = sorted(set(options) - set(SEARCH_OPTIONS))
    if unknown:
        raise ValidationError(
            unknown[0],
            f"unknown search option(s) {', '.join(unknown)}; the store's searches take k, filter and "
            f"{', '.join(SEARCH_OPTIONS)}",
        )
