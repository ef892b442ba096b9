"""The SQL truth store: one class composed of the role modules of this package."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragindex.store.sql.cache import SqlEmbeddingCache
from ragindex.store.sql.calibrations import SqlFusionCalibrations
from ragindex.store.sql.chunk_reads import SqlChunkReads
from ragindex.store.sql.chunks import SqlChunkWrites
from ragindex.store.sql.collections import SqlCollections
from ragindex.store.sql.documents import SqlDocuments
from ragindex.store.sql.fields import SqlMetadataFields
from ragindex.store.sql.owners import SqlOwners
from ragindex.store.sql.parsed import SqlParsedDocuments
from ragindex.store.sql.reconcile import SqlReconcile
from ragindex.store.sql.runs import SqlRuns
from ragindex.store.sql.scores import SqlScoreStats
from ragindex.store.sql.transfer import SqlTransfer


class SqlTruthStore(
    SqlDocuments,
    SqlMetadataFields,
    SqlRuns,
    SqlChunkWrites,
    SqlChunkReads,
    SqlOwners,
    SqlCollections,
    SqlEmbeddingCache,
    SqlReconcile,
    SqlParsedDocuments,
    SqlScoreStats,
    SqlTransfer,
    SqlFusionCalibrations,
):
    """The truth store on SQL (SQLite by default; MySQL/MariaDB and PostgreSQL through the same code).

    It implements every role of :class:`~ragindex.store.protocol.TruthStore`: documents, runs, chunks,
    claims and their owners, collections, the embedding cache, the reconciler's lock and totals and the
    documents' parsed artifacts. Each role
    lives in its own module of this package over the shared :class:`~ragindex.store.sql.core.SqlCore`.

    Args:
        url: SQLAlchemy URL (``sqlite:///path``, ``mysql+pymysql://...``, ``postgresql+psycopg://...``).
    """


if TYPE_CHECKING:
    from ragindex.store.protocol import TruthStore

    def _implements_every_role(store: SqlTruthStore) -> TruthStore:
        return store  # mypy checks here that the SQL store satisfies the whole seam
