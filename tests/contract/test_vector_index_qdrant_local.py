"""The vector index contract on QdrantServerIndex in qdrant-client's local mode, plus its own failure rules."""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("qdrant_client", reason="qdrant-client is not installed: pip install 'ragindex[server]'")

from qdrant_client import models

from ragindex.errors import ConfigurationError, IndexBackendError
from ragindex.index.protocol import DensePoint, TenantFilter, VectorIndex, VectorQuery
from ragindex.index.qdrant_server import QdrantServerIndex
from ragindex.testing.contracts import VectorIndexContract
from ragindex.types import SparseVector, VectorKind

TENANT = TenantFilter(1, 1)
CHUNK = "7f9c2f1e-0000-4000-8000-000000000001"


class TestQdrantServerIndexLocalMode(VectorIndexContract):
    @pytest.fixture
    def index(self, tmp_path: Path) -> Iterator[VectorIndex]:
        idx = QdrantServerIndex(path=tmp_path / "qdrant")
        yield idx
        idx.close()


@pytest.fixture
def local(tmp_path: Path) -> Iterator[QdrantServerIndex]:
    idx = QdrantServerIndex(path=tmp_path / "qdrant")
    yield idx
    idx.close()


def test_backend_name_and_optimize(local: QdrantServerIndex) -> None:
    local.upsert_dense("c", 0, [DensePoint(CHUNK, 1, 1, 1, np.ones(4, dtype=np.float32))])
    assert local.backend == "qdrant"
    assert local.optimize("c", 0) is False  # the server optimises by itself


def test_missing_named_vector_is_no_data(local: QdrantServerIndex, caplog: pytest.LogCaptureFixture) -> None:
    """A collection made elsewhere without the ``sparse`` vector: sparse searches return [] with a warning."""
    local._client.create_collection(
        "legacy_0",
        vectors_config={VectorKind.DENSE: models.VectorParams(size=4, distance=models.Distance.COSINE)},
        sparse_vectors_config={VectorKind.BM25: models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    local.upsert_dense("legacy", 0, [DensePoint(CHUNK, 1, 1, 1, np.ones(4, dtype=np.float32))])
    query = VectorQuery(VectorKind.SPARSE, sparse=SparseVector((1,), (1.0,)))
    with caplog.at_level(logging.WARNING):
        assert local.search("legacy", 0, query, TENANT, limit=5) == []
    assert "legacy" in caplog.text
    assert "sparse" in caplog.text
    with pytest.raises(IndexBackendError, match="ragindex repair"):
        local.update_sparse("legacy", 0, VectorKind.SPARSE, {CHUNK: SparseVector((1,), (1.0,))})
    dense = local.search(
        "legacy", 0, VectorQuery(VectorKind.DENSE, dense=np.ones(4, dtype=np.float32)), TENANT, limit=5
    )
    assert [cid for cid, _ in dense] == [CHUNK]


def test_close_is_idempotent_and_releases_the_path(tmp_path: Path) -> None:
    first = QdrantServerIndex(path=tmp_path / "q")
    first.upsert_dense("c", 0, [DensePoint(CHUNK, 1, 1, 1, np.ones(4, dtype=np.float32))])
    first.close()
    first.close()
    with QdrantServerIndex(path=tmp_path / "q") as second:
        assert second.count("c", 0) == 1
        assert second.has_bucket("c", 0)


def test_needs_exactly_one_location(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        QdrantServerIndex()
    with pytest.raises(ConfigurationError):
        QdrantServerIndex(url="http://127.0.0.1:6333", path=tmp_path)


def test_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "qdrant_client", None)
    with pytest.raises(ConfigurationError, match=r"pip install 'ragindex\[server\]'"):
        QdrantServerIndex(url="http://127.0.0.1:6333")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def unreachable() -> Iterator[QdrantServerIndex]:
    idx = QdrantServerIndex(url=f"http://127.0.0.1:{_free_port()}", timeout=1)
    yield idx
    idx.close()


def test_unreachable_server_is_a_backend_error(unreachable: QdrantServerIndex) -> None:
    assert unreachable.url is not None
    started = time.monotonic()
    dense = VectorQuery(VectorKind.DENSE, dense=np.ones(4, dtype=np.float32))
    calls = [
        lambda: unreachable.search("c", 0, dense, TENANT, limit=5),
        lambda: unreachable.has_bucket("c", 0),
        lambda: unreachable.fused_search("c", 0, [dense], TENANT, limit=5, candidates=5, fusion="rrf"),
        lambda: unreachable.count("c", 0),
        lambda: unreachable.delete_points("c", 0, [CHUNK]),
        lambda: unreachable.upsert_dense("c", 0, [DensePoint(CHUNK, 1, 1, 1, np.ones(4, dtype=np.float32))]),
    ]
    for call in calls:
        with pytest.raises(IndexBackendError, match="unreachable") as caught:
            call()
        assert unreachable.url in str(caught.value)
        assert caught.value.__cause__ is not None
        assert caught.value.context["backend"] == "qdrant"
    assert time.monotonic() - started < 30


def test_writes_recreate_a_collection_dropped_elsewhere(local: QdrantServerIndex) -> None:
    """The cache of known collections must not turn a collection dropped by another client into an error."""
    point = DensePoint(CHUNK, 1, 1, 1, np.ones(4, dtype=np.float32))
    local.upsert_dense("c", 0, [point])
    local._client.delete_collection("c_0")  # as another process would
    local.upsert_dense("c", 0, [point])
    assert local.count("c", 0) == 1


# ---------------------------------------------------------------------- server answers, from a stub HTTP server
class _Stub(BaseHTTPRequestHandler):
    status = 200
    body = b"{}"

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    do_GET = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def stub() -> Iterator[tuple[type[_Stub], QdrantServerIndex]]:
    handler = type("Handler", (_Stub,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    idx = QdrantServerIndex(url=f"http://127.0.0.1:{server.server_address[1]}", timeout=5)
    try:
        yield handler, idx
    finally:
        idx.close()
        server.shutdown()
        server.server_close()
        thread.join()


def _qdrant_error(status: int, message: str) -> tuple[int, bytes]:
    return status, json.dumps({"status": {"error": message}, "time": 0.0}).encode()


def test_server_missing_collection_is_no_data(
    stub: tuple[type[_Stub], QdrantServerIndex], caplog: pytest.LogCaptureFixture
) -> None:
    handler, idx = stub
    handler.status, handler.body = _qdrant_error(404, "Not found: Collection `c_0` doesn't exist!")
    dense = VectorQuery(VectorKind.DENSE, dense=np.ones(4, dtype=np.float32))
    with caplog.at_level(logging.WARNING):
        assert idx.search("c", 0, dense, TENANT, limit=5) == []
        assert idx.fused_search("c", 0, [dense], TENANT, limit=5, candidates=5, fusion="dbsf") == []
    assert "collection c bucket 0 does not exist" in caplog.text
    assert idx.count("c", 0) == 0
    assert idx.vectors_present("c", 0) == {}
    idx.delete_points("c", 0, [CHUNK])
    idx.set_payload("c", 0, CHUNK, {"user_id": 2})
    idx.drop_collection("c", 2)
    with pytest.raises(IndexBackendError, match="ragindex repair"):
        idx.update_sparse("c", 0, VectorKind.BM25, {CHUNK: SparseVector((1,), (1.0,))})


def test_server_missing_named_vector_is_no_data(
    stub: tuple[type[_Stub], QdrantServerIndex], caplog: pytest.LogCaptureFixture
) -> None:
    handler, idx = stub
    handler.status, handler.body = _qdrant_error(400, "Wrong input: Not existing vector name error: sparse")
    query = VectorQuery(VectorKind.SPARSE, sparse=SparseVector((1,), (1.0,)))
    with caplog.at_level(logging.WARNING):
        assert idx.search("c", 0, query, TENANT, limit=5) == []
    assert "'sparse'" in caplog.text


def test_server_failure_is_a_backend_error(stub: tuple[type[_Stub], QdrantServerIndex]) -> None:
    handler, idx = stub
    handler.status, handler.body = _qdrant_error(500, "Service internal error: disk full")
    dense = VectorQuery(VectorKind.DENSE, dense=np.ones(4, dtype=np.float32))
    with pytest.raises(IndexBackendError, match="disk full") as caught:
        idx.search("c", 0, dense, TENANT, limit=5)
    assert idx.url is not None
    assert idx.url in str(caught.value)
    assert caught.value.__cause__ is not None
    with pytest.raises(IndexBackendError, match="disk full"):
        idx.count("c", 0)
    with pytest.raises(IndexBackendError, match="disk full"):
        idx.delete_points("c", 0, [CHUNK])
