"""The embedding cache in front of any dense encoder: a vector is never computed twice."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ragindex.encoders.protocol import DenseEncoder, DocumentRouter

if TYPE_CHECKING:
    from ragindex.store.protocol import EmbeddingCacheStore


class CachedDenseEncoder:
    """Looks every (cache_key, content_hash) up first and encodes only the misses, once each.

    Counters ``computed`` and ``reused`` report what the encoder actually did. :meth:`plan` lets a
    :class:`~ragindex.encoders.protocol.DocumentRouter` pick the runtime for a run; the cache key is always
    that of the encoder that computes the vectors.
    """

    def __init__(self, encoder: DenseEncoder, cache: EmbeddingCacheStore) -> None:
        self.encoder = encoder
        self.cache = cache
        self.computed = 0
        self.reused = 0
        self._active: DenseEncoder = encoder

    def plan(self, count: int) -> None:
        """Encode the next run, of ``count`` chunks, with the encoder the router picks for that size."""
        self._active = self.encoder.for_documents(count) if isinstance(self.encoder, DocumentRouter) else self.encoder

    def encode_documents(self, texts: Sequence[str], content_hashes: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` (identified by ``content_hashes``) from the cache or the encoder.

        A run on a router's small-ingest runtime also takes vectors its bulk runtime cached for the same model
        (same fingerprint): restoring a file after a small edit re-embeds nothing. Both runtimes' vectors already
        share the index (cosine >= 0.9999); only newly computed ones go under the active runtime's key.
        """
        key = self._active.cache_key
        found = self.cache.cached_vectors(key, content_hashes)
        bulk_key = self.encoder.cache_key
        rest = [h for h in content_hashes if h not in found]
        if rest and bulk_key != key and self._active.fingerprint == self.encoder.fingerprint:
            found |= self.cache.cached_vectors(bulk_key, rest)
        missing: dict[str, str] = {}
        for text, content_hash in zip(texts, content_hashes, strict=True):
            if content_hash not in found:
                missing.setdefault(content_hash, text)
        if missing:
            vectors = self._active.encode_documents(list(missing.values()))
            fresh = dict(zip(missing, vectors, strict=True))
            self.cache.cache_vectors(key, fresh)
            found.update(fresh)
            self.computed += len(missing)
        self.reused += len(content_hashes) - len(missing)
        return np.stack([found[h] for h in content_hashes]).astype(np.float32, copy=False)
