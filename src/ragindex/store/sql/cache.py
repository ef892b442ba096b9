"""The embedding cache of the SQL truth store: (model key, content hash) -> float32 vector."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from sqlalchemy import select

from ragindex.clock import utcnow
from ragindex.store import schema
from ragindex.store.sql.core import SqlCore, batches, insert_ignoring_duplicates

_CACHE = schema.embedding_cache.c


class SqlEmbeddingCache(SqlCore):
    """The embedding-cache role (:class:`~ragindex.store.protocol.EmbeddingCacheStore`)."""

    def cached_vectors(self, model_key: str, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """content_hash -> float32 vector for the hashes cached under ``model_key``."""
        out: dict[str, np.ndarray] = {}
        with self._tx() as conn:
            for part in batches(sorted(set(content_hashes))):
                for content_hash, dim, blob in conn.execute(
                    select(_CACHE.content_hash, _CACHE.dim, _CACHE.vector).where(
                        _CACHE.model_key == model_key, _CACHE.content_hash.in_(part)
                    )
                ):
                    vector = np.frombuffer(blob, dtype=np.float32)
                    if vector.shape[0] == dim:
                        out[content_hash] = vector
        return out

    def cache_vectors(self, model_key: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Store vectors under (model_key, content_hash); existing entries are left as they are."""
        if not vectors:
            return
        now = utcnow()
        with self._tx() as conn:
            present: set[str] = set()
            for part in batches(list(vectors)):
                query = select(_CACHE.content_hash).where(_CACHE.model_key == model_key, _CACHE.content_hash.in_(part))
                present.update(r[0] for r in conn.execute(query))
            rows = [
                {
                    "model_key": model_key,
                    "content_hash": h,
                    "dim": int(v.shape[0]),
                    "vector": np.ascontiguousarray(v, dtype=np.float32).tobytes(),
                    "created_at": now,
                }
                for h, v in sorted(vectors.items())  # one key order for all writers (fewer lock waits)
                if h not in present
            ]
            if rows:
                # another worker may cache the same content between the select and this insert
                conn.execute(insert_ignoring_duplicates(conn, schema.embedding_cache), rows)
