"""The search processes' index reads run off the owner's index thread where the index allows it (Qdrant Edge).

``reads_of`` picks the index an :class:`~ragindex.service.search_pool.IndexServer` connection thread calls: the Edge
index itself (every Edge call holds the GIL, so a read never overlaps a write, and a shard closed meanwhile raises
``IndexBackendError``), else the serial proxy. Real Qdrant Edge shards and qdrant-client's local mode, real threads.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import numpy as np

from ragindex.errors import IndexBackendError
from ragindex.index.protocol import DensePoint, TenantFilter, VectorQuery
from ragindex.index.qdrant_edge import QdrantEdgeIndex
from ragindex.index.qdrant_server import QdrantServerIndex
from ragindex.threads import IndexThread, reads_of
from ragindex.types import VectorKind

DIM = 16
TENANT = TenantFilter(user_id=1, set_id=1)


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    unit: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit


def _points(rng: np.random.Generator, first: int, n: int) -> list[DensePoint]:
    return [DensePoint(str(uuid.UUID(int=first + i)), 1, 1, first + i, v) for i, v in enumerate(_unit(rng, n))]


def test_reads_skip_the_index_thread_only_where_the_index_allows_it(tmp_path: Path) -> None:
    thread = IndexThread()
    edge = QdrantEdgeIndex(tmp_path / "edge")
    local = QdrantServerIndex(path=tmp_path / "qdrant")
    try:
        assert reads_of(thread.serial(edge)) is edge
        serial_local = thread.serial(local)  # qdrant-client's local mode is plain Python: its calls stay serial
        assert reads_of(serial_local) is serial_local
        assert reads_of(edge) is edge
    finally:
        thread.shutdown()
        edge.close()
        local.close()


def test_a_read_is_not_queued_behind_the_index_threads_work(tmp_path: Path) -> None:
    thread = IndexThread()
    edge = QdrantEdgeIndex(tmp_path / "index")
    writer = thread.serial(edge)
    rng = np.random.default_rng(3)
    writer.upsert_dense("c", 0, _points(rng, 0, 20))
    busy, release = threading.Event(), threading.Event()

    def long_write() -> None:  # an ingest's queue of writes, or an optimize: the index thread is taken
        busy.set()
        release.wait(60)

    held = thread.submit(long_write)
    try:
        assert busy.wait(10)
        query = VectorQuery(VectorKind.DENSE, dense=_unit(rng, 1)[0])
        assert len(reads_of(writer).search("c", 0, query, TENANT, limit=5)) == 5
        assert not held.done()  # answered while the index thread was still busy
    finally:
        release.set()
        held.result(10)
        thread.shutdown()
        edge.close()


def test_edge_reads_beside_writes_and_a_drop_answer_or_fail_cleanly(tmp_path: Path) -> None:
    """Reads on their own thread while the index thread writes, deletes, drops and re-creates the collection."""
    thread = IndexThread()
    edge = QdrantEdgeIndex(tmp_path / "index")
    writer, reader = thread.serial(edge), reads_of(thread.serial(edge))
    rng = np.random.default_rng(11)
    writer.upsert_dense("c", 0, _points(rng, 0, 50))
    query = VectorQuery(VectorKind.DENSE, dense=_unit(np.random.default_rng(5), 1)[0])
    stop, answered, unexpected = threading.Event(), threading.Event(), list[BaseException]()

    def read() -> None:
        while not stop.is_set():
            try:
                if reader.search("c", 0, query, TENANT, limit=5):
                    answered.set()
            except IndexBackendError:  # a shard closed between its lookup and the query: the search is retried
                continue
            except BaseException as exc:  # anything else is the defect this test looks for
                unexpected.append(exc)
                return

    reading = threading.Thread(target=read)
    reading.start()
    try:
        assert answered.wait(30)
        for round_ in range(1, 16):
            fresh = _points(rng, round_ * 1000, 50)
            writer.upsert_dense("c", 0, fresh)
            writer.delete_points("c", 0, [p.chunk_id for p in fresh[:25]])
            if round_ % 5 == 0:
                writer.drop_collection("c", 1)
                writer.upsert_dense("c", 0, _points(rng, round_ * 1000 + 500, 10))
    finally:
        stop.set()
        reading.join(30)
        thread.shutdown()
    try:
        assert not unexpected, unexpected
        assert len(reader.search("c", 0, query, TENANT, limit=50)) == 10  # the last re-created collection, whole
    finally:
        edge.close()
