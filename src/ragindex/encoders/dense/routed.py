"""One dense model, two runtimes: ONNX Runtime for queries and small ingests, torch for bulk; plus a query LRU.

Importing torch and loading the model take ~3.6 s of a one-shot ``ragindex search`` on two cores; the ONNX
export of the same model loads in ~0.4 s and encodes a query in a few milliseconds. Both give the same
vectors (cosine >= 0.9999, tested), so they share the fingerprint and an index built by one is searched by
the other. Bulk ingests stay on torch (bf16 autocast where the CPU has it).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence

import numpy as np

from ragindex.encoders.protocol import DenseEncoder
from ragindex.encoders.wrapping import InnerIdentity
from ragindex.errors import RagindexError

log = logging.getLogger(__name__)


class QueryVectorCache:
    """A thread-safe LRU of query vectors keyed by (model fingerprint, text); ``size`` 0 keeps nothing.

    The fingerprint includes the model's query and document prompts, so a key names the text the model read.

    Attributes:
        hits: Lookups answered from the cache.
        misses: Lookups that had to be encoded.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> np.ndarray | None:
        """The cached vector (read-only) or None; a hit becomes the most recent entry."""
        with self._lock:
            vector = self._items.get(key)
            if vector is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return vector

    def put(self, key: Hashable, vector: np.ndarray) -> None:
        """Keep a read-only copy of ``vector``, evicting the least recently used entry beyond ``size``."""
        if self.size <= 0:
            return
        kept = np.array(vector, dtype=np.float32, copy=True)
        kept.setflags(write=False)
        with self._lock:
            self._items[key] = kept
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


class RoutedDenseEncoder(InnerIdentity):
    """A :class:`DenseEncoder` that encodes queries with a light encoder and documents with the heavy one.

    The light encoder (:class:`~ragindex.encoders.dense.onnx.OnnxDenseEncoder`) is built on first use by
    ``light``; if that fails (an export to a read-only or full cache dir, a missing runtime), one warning is
    logged and the heavy encoder takes over for the life of this object: a search never fails for it.
    ``light`` returning None (a model the export does not reproduce) means heavy without a warning.

    Args:
        heavy: The torch encoder (its fingerprint, cache key and languages are this encoder's).
        light: Builds the light encoder (None: no light encoder).
        max_batch: Ingests of at most this many chunks use the light encoder (see :meth:`for_documents`).
        query_cache: Query vectors kept (LRU by fingerprint and text).
        all_documents: Every ingest and :meth:`encode_documents` use the light encoder, whatever its size
            (``RAGINDEX_DENSE_PRECISION=int8``: the light encoder is the int8 one); the heavy one only if the light
            one is unavailable.
    """

    def __init__(
        self,
        heavy: DenseEncoder,
        light: Callable[[], DenseEncoder | None] | None = None,
        *,
        max_batch: int = 256,
        query_cache: int = 1024,
        all_documents: bool = False,
    ) -> None:
        self.heavy = heavy
        self.all_documents = all_documents
        self._light_factory = light
        self._light: DenseEncoder | None = None
        self._light_ready = light is None
        self._lock = threading.Lock()
        self.max_batch = max_batch
        self.queries = QueryVectorCache(query_cache)

    @property
    def inner(self) -> DenseEncoder:
        """The heavy encoder: its fingerprint, cache key and languages are this encoder's.

        The light encoder is the same model; :meth:`encode_documents` uses the heavy cache key, a small ingest the
        light one.
        """
        return self.heavy

    @property
    def dimension(self) -> int:
        """Vector dimension: prepares the light encoder (the search's ``model_load`` phase), else loads torch."""
        light = self.light()
        return light.dimension if light is not None else self.heavy.dimension

    def light(self) -> DenseEncoder | None:
        """The light encoder, built on the first call; None when there is none or it failed (warned once)."""
        if not self._light_ready:
            with self._lock:
                if not self._light_ready:
                    try:
                        self._light = self._light_factory() if self._light_factory is not None else None
                    except RagindexError as exc:
                        self._disable(exc)
                    self._light_ready = True
        return self._light

    def prepare_queries(self) -> None:
        """Build what encodes queries now: the light encoder, its query session loaded (torch waits for an encode)."""
        self.light()

    def _disable(self, exc: RagindexError) -> None:
        log.warning("the light (ONNX) dense encoder is unavailable, torch encodes instead: %s", exc.message)
        self._light = None

    def for_documents(self, count: int) -> DenseEncoder:
        """The encoder for an ingest embedding ``count`` chunks: light up to ``max_batch`` (any, all_documents)."""
        if count <= self.max_batch or self.all_documents:
            light = self.light()
            if light is not None:
                return light
        return self.heavy

    def bulk(self, count: int) -> bool:
        """Whether an ingest of ``count`` chunks goes to the heavy encoder (over ``max_batch``, or no light one)."""
        if self._light_factory is None:
            return True
        return not self.all_documents and count > self.max_batch

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Chunk vectors from the heavy encoder (whose :attr:`cache_key` this encoder reports).

        With ``all_documents``, from :meth:`for_documents`'s pick (the light one), as a caching caller keys them.
        """
        if self.all_documents:
            return self.for_documents(len(texts)).encode_documents(texts)
        return self.heavy.encode_documents(texts)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors: cached ones, the others from the light encoder (the heavy one if it is unavailable)."""
        keys = [(self.fingerprint, text) for text in texts]
        found = {i: v for i, key in enumerate(keys) if (v := self.queries.get(key)) is not None}
        missing = [i for i in range(len(texts)) if i not in found]
        if missing or not texts:
            fresh = self._encode_queries([texts[i] for i in missing])
            for i, vector in zip(missing, fresh, strict=True):
                self.queries.put(keys[i], vector)
                found[i] = vector
            if not texts:
                return fresh
        return np.stack([found[i] for i in range(len(texts))]).astype(np.float32, copy=False)

    def _encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        light = self.light()
        if light is not None:
            try:
                return light.encode_queries(texts)
            except RagindexError as exc:
                with self._lock:
                    self._disable(exc)
        return self.heavy.encode_queries(texts)

    def close(self) -> None:
        """Close the heavy encoder if it holds resources (an HTTP client)."""
        close = getattr(self.heavy, "close", None)
        if callable(close):
            close()
