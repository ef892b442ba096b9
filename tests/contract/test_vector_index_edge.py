"""The vector index contract on the embedded backend, Qdrant Edge."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragindex.index.protocol import VectorIndex
from ragindex.index.qdrant_edge import QdrantEdgeIndex
from ragindex.testing.contracts import VectorIndexContract


class TestQdrantEdgeIndex(VectorIndexContract):
    @pytest.fixture
    def index(self, tmp_path: Path) -> Iterator[VectorIndex]:
        idx = QdrantEdgeIndex(tmp_path / "index")
        yield idx
        idx.close()
