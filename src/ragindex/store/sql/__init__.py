"""The SQL implementation of the truth store, one module per role over a shared core."""

from ragindex.store.sql.store import SqlTruthStore

__all__ = ["SqlTruthStore"]
