"""The vector index contract on the embedded backend, Qdrant Edge."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragindex.index.protocol import VectorIndex
from ragindex.index.qdrant_edge import QdrantEdgeIndex
from ragindex.testing.contracts import VectorIndexContract
from ragindex.testing.contracts.vector_index import COLLECTION, _points


class TestQdrantEdgeIndex(VectorIndexContract):
    @pytest.fixture
    def index(self, tmp_path: Path) -> Iterator[VectorIndex]:
        idx = QdrantEdgeIndex(tmp_path / "index")
        yield idx
        idx.close()


def test_opening_a_bucket_loads_its_shard_and_takes_the_lock(tmp_path: Path) -> None:
    """``open_bucket`` does ahead what a bucket's first query does: take the directory's lock and load the shard."""
    writer = QdrantEdgeIndex(tmp_path / "index")
    writer.upsert_dense(COLLECTION, 0, _points())
    writer.close()
    reader = QdrantEdgeIndex(tmp_path / "index")
    reader.open_bucket(COLLECTION, 1)  # missing: nothing to load, nothing taken
    assert not reader.ownership.held
    reader.open_bucket(COLLECTION, 0)
    assert reader.ownership.held
    assert reader.count(COLLECTION, 0) == len(_points())
    reader.close()
