"""Collections of the SQL truth store: what built each index copy, and which one reads use."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, insert, select, update

from ragindex.clock import utcnow
from ragindex.store import schema, search_reads
from ragindex.store.records import IndexMeta
from ragindex.store.sql.core import SqlCore
from ragindex.store.sql.rows import meta_row
from ragindex.store.states import CollectionState

_META = schema.index_meta


class SqlCollections(SqlCore):
    """The collections role (:class:`~ragindex.store.protocol.CollectionStore`)."""

    def get_index_meta(self, collection: str) -> IndexMeta | None:
        """Metadata of one collection, or None."""
        with self._tx() as conn:
            row = conn.execute(select(_META).where(_META.c.collection == collection)).first()
        return meta_row(row._mapping) if row else None

    def list_index_meta(self) -> list[IndexMeta]:
        """Every collection's metadata."""
        with self._tx() as conn:
            return [meta_row(r._mapping) for r in conn.execute(select(_META))]

    def active_collections(self) -> list[str]:
        """The names of the ACTIVE collections (one read of one column: every search asks)."""
        with self._errors():
            return search_reads.active_collections(self._search_sql)

    def put_index_meta(self, meta: IndexMeta) -> None:
        """Insert or replace a collection's metadata."""
        now = utcnow()
        values = {
            "backend": meta.backend,
            "state": meta.state,
            "dense_fingerprint": meta.dense_fingerprint,
            "dense_dim": meta.dense_dim,
            "sparse_model": meta.sparse_model,
            "bm25_config": dict(meta.bm25_config) if meta.bm25_config is not None else None,
            "chunker_config": dict(meta.chunker_config) if meta.chunker_config is not None else None,
            "updated_at": now,
        }
        with self._tx() as conn:
            if conn.execute(select(_META.c.collection).where(_META.c.collection == meta.collection)).first():
                conn.execute(update(_META).where(_META.c.collection == meta.collection).values(**values))
            else:
                conn.execute(insert(_META).values(collection=meta.collection, created_at=now, **values))

    def set_active_collection(self, collection: str) -> None:
        """Make ``collection`` the one reads use, retiring the previous active one, in one transaction."""
        now = utcnow()
        with self._tx() as conn:
            conn.execute(
                update(_META)
                .where(_META.c.state == CollectionState.ACTIVE)
                .values(state=CollectionState.RETIRED, updated_at=now)
            )
            conn.execute(
                update(_META)
                .where(_META.c.collection == collection)
                .values(state=CollectionState.ACTIVE, updated_at=now)
            )

    def delete_index_meta(self, collection: str) -> None:
        """Forget a dropped collection."""
        with self._tx() as conn:
            conn.execute(delete(_META).where(_META.c.collection == collection))

    def index_meta_created_at(self, collection: str) -> datetime | None:
        """When a collection's metadata was first recorded (a reindex build's start), or None."""
        with self._tx() as conn:
            row = conn.execute(select(_META.c.created_at).where(_META.c.collection == collection)).first()
        return row[0] if row else None
