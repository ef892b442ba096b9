"""What the LangChain and LlamaIndex retrievers share: one search target (embedded or HTTP) and a hit's metadata.

Embedded mode searches an :class:`~ragindex.Engine` in this process (one given, or one opened on the data dir on
first use and closed by :meth:`Searcher.close`); HTTP mode calls ``ragindex serve`` with the sync client, or with
an async client per call for the async path (an httpx async client belongs to one event loop, and a retriever
outlives them).

A set the caller's tenant has no documents in answers no hits in both modes, never an error: set ids are per
tenant, and the service does not tell whether another tenant has a set of that number.
"""

from __future__ import annotations

import asyncio
import json
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack, cast

from ragindex.errors import ValidationError

if TYPE_CHECKING:
    from ragindex.client import Client
    from ragindex.config.settings import Settings
    from ragindex.engine import Engine
    from ragindex.types import Hit, SearchResult

DEFAULT_USER_ID = 1  # the CLI's default tenant

Filter = Mapping[str, Any] | str | None
"""A metadata filter in the JSON form of :mod:`ragindex.filters` (a mapping, or its JSON text), or None."""

# keys of hit_metadata that an LLM prompt does not need (LlamaIndex shows node metadata to the LLM by default)
TECHNICAL_KEYS = (
    "chunk_id",
    "doc_id",
    "set_id",
    "source",
    "start_line",
    "end_line",
    "chunk_type",
    "rank",
    "score",
    "scores",
    "ranks",
    "skipped",
    "merged",
    "expanded",
)


def hit_content(hit: Hit) -> str:
    """The text a retriever returns for a hit: its ``context`` when the search expanded it, else its text."""
    return hit.context if hit.context is not None else hit.text


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """A hit's metadata: ids, where it comes from, its score and the score and rank in each source list."""
    meta: dict[str, Any] = {
        "chunk_id": hit.chunk_id,
        "doc_id": hit.doc_id,
        "set_id": hit.set_id,
        "source": hit.source,
        "filename": hit.filename,
        "page": hit.page,
        "section": hit.section,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "chunk_type": hit.chunk_type,
        "rank": hit.rank,
        "score": hit.score,
        "scores": {name: s.score for name, s in hit.scores.items()},
        "ranks": {name: s.rank for name, s in hit.scores.items()},
        "expanded": hit.context is not None,
    }
    if hit.skipped:
        meta["skipped"] = dict(hit.skipped)
    if hit.merged:
        meta["merged"] = [m.chunk_id for m in hit.merged]
    return meta


def both_filters(first: Filter, second: Filter) -> dict[str, Any] | None:
    """One filter that holds where both hold (``{"$and": [first, second]}``; either alone when the other is empty).

    Raises:
        FilterError: A filter given as JSON text that is not valid JSON.
    """
    given = [f for f in (_filter_object(first), _filter_object(second)) if f]
    if not given:
        return None
    return given[0] if len(given) == 1 else {"$and": given}


def _filter_object(spec: Filter) -> Any:
    if not isinstance(spec, str):
        return dict(spec) if isinstance(spec, Mapping) else spec
    from ragindex.filters import parse_filter

    try:
        return json.loads(spec)
    except ValueError:
        parse_filter(spec, {})  # raises the FilterError that names the JSON problem
        raise


class Target(TypedDict, total=False):
    """Where a retriever searches: give exactly one of ``url``, ``engine`` or ``data_dir`` / ``settings``."""

    url: str | None
    """The service's base URL (HTTP mode)."""
    api_key: str | None
    """A key of the service (HTTP mode)."""
    timeout: float | None
    """Seconds per HTTP request (default 30; None: wait forever)."""
    engine: Engine | None
    """An open engine to search (not closed here)."""
    data_dir: str | Path | None
    """The data dir of an embedded index (the other settings come from the environment)."""
    settings: Settings | None
    """Full settings of an embedded index."""
    user_id: int | None
    """The tenant (embedded mode; default 1). Over HTTP the key decides the tenant."""


class Searcher:
    """One retrieval target and the search options applied to every query.

    Give exactly one target: ``url`` (HTTP mode, with ``api_key``), ``engine`` (an engine you own), or
    ``data_dir`` / ``settings`` (a lease on the process's shared engine of that data dir, taken on first use and
    given back by :meth:`close`: see :mod:`ragindex.shared`).

    Args:
        set_id: The set to search.
        options: Search options (``top_k``, ``mode``, ``doc_ids``, ``expand``, ...); None values are left out.
        **target: The fields of :class:`Target`.
    """

    def __init__(self, *, set_id: int, options: Mapping[str, Any] | None = None, **target: Unpack[Target]) -> None:
        url, engine, user_id = target.get("url"), target.get("engine"), target.get("user_id")
        data_dir, settings = target.get("data_dir"), target.get("settings")
        targets = [name for name, value in (("url", url), ("engine", engine)) if value is not None]
        if data_dir is not None or settings is not None:
            targets.append("data_dir/settings")
        if len(targets) != 1:
            raise ValidationError(
                "url",
                "give one target: url=... (and api_key=) for a ragindex service, engine=... for an Engine, or "
                f"data_dir=... (or settings=...) for an embedded index; got {', '.join(targets) or 'none'}",
            )
        if data_dir is not None and settings is not None:
            raise ValidationError("data_dir", "give data_dir or settings, not both (settings.data_dir is the dir)")
        if url is not None and user_id is not None:
            raise ValidationError("user_id", "over HTTP the API key decides the tenant: leave user_id out")
        self.set_id = set_id
        self.user_id = DEFAULT_USER_ID if user_id is None else user_id
        self.url = url
        self.api_key = target.get("api_key")
        self.timeout = target.get("timeout", 30.0)
        self.options = {k: v for k, v in (options or {}).items() if v is not None}
        if isinstance(self.options.get("doc_ids"), Sequence):
            self.options["doc_ids"] = list(self.options["doc_ids"])
        self._engine = engine
        self._owns_engine = engine is None and url is None
        self._data_dir = Path(data_dir).expanduser() if data_dir is not None else None
        self._settings = settings
        self._client: Client | None = None
        self._closers: list[weakref.finalize[[], Searcher]] = []
        self._lock = threading.Lock()  # one engine search or client creation at a time (threads of ainvoke)

    @classmethod
    def of(cls, set_id: int, keywords: Mapping[str, Any], options: Mapping[str, Any]) -> Searcher:
        """A searcher from keywords that mix :class:`Target`'s fields and search options, then more ``options``."""
        target = cast(Target, {k: v for k, v in keywords.items() if k in Target.__optional_keys__})
        rest = {k: v for k, v in keywords.items() if k not in target}
        return cls(set_id=set_id, options={**rest, **options}, **target)

    @property
    def mode(self) -> str:
        """``http`` or ``embedded``."""
        return "http" if self.url is not None else "embedded"

    def _open_engine(self) -> Engine:
        if self._engine is None:
            from ragindex.config.settings import Settings
            from ragindex.shared import shared_engine

            # one engine per data dir per process (ragindex.shared): two retrievers and a store share it
            lease = shared_engine(self._settings or Settings(data_dir=self._data_dir))
            self._engine = lease.engine
            # retrievers are rarely closed: give back the lease (the last one frees the lock) when collected
            self._closers.append(weakref.finalize(self, lease.close))
        return self._engine

    def _open_client(self) -> Client:
        if self._client is None:
            from ragindex.client import Client

            assert self.url is not None
            self._client = Client(self.url, api_key=self.api_key, timeout=self.timeout)
            self._closers.append(weakref.finalize(self, self._client.close))  # no socket left to the collector
        return self._client

    def search(self, query: str, *, filter: Filter = None, options: Mapping[str, Any] | None = None) -> SearchResult:
        """Search the set for ``query`` with the options; ``filter`` narrows the options' filter further.

        ``options``: this call's own search options, over the searcher's (``filter`` is joined, not replaced).
        """
        options = self._options(filter, options)
        with self._lock:
            if self.url is not None:
                client = self._open_client()
            else:
                engine = self._open_engine()
                return engine.search(query, user_id=self.user_id, set_id=self.set_id, **options)
        return client.search(query, set_id=self.set_id, **options)

    async def asearch(
        self, query: str, *, filter: Filter = None, options: Mapping[str, Any] | None = None
    ) -> SearchResult:
        """Search without blocking the event loop: the async client over HTTP, a worker thread when embedded."""
        if self.url is None:
            return await asyncio.to_thread(lambda: self.search(query, filter=filter, options=options))
        from ragindex.client import AsyncClient

        async with AsyncClient(self.url, api_key=self.api_key, timeout=self.timeout) as client:
            return await client.search(query, set_id=self.set_id, **self._options(filter, options))

    def _options(self, filter: Filter, call: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The search options, a call's own over them, with a call's ``filter`` joined to the options' one."""
        merged = {**self.options, **{k: v for k, v in (call or {}).items() if v is not None and k != "filter"}}
        if isinstance(merged.get("doc_ids"), Sequence):
            merged["doc_ids"] = list(merged["doc_ids"])
        if not filter:
            return merged
        return {**merged, "filter": both_filters(self.options.get("filter"), filter)}

    def close(self) -> None:
        """Close the HTTP client, and give back the shared engine's lease when this searcher took one."""
        with self._lock:
            for closer in self._closers:
                closer()  # runs each close once, here or at collection
            self._closers.clear()
            self._client = None
            if self._owns_engine:
                self._engine = None
