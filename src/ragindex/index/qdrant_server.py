"""The scale-out index: a Qdrant server (or qdrant-client's local mode) through ``qdrant-client``.

Same layout and semantics as :class:`ragindex.index.qdrant_edge.QdrantEdgeIndex`: one physical
collection ``{collection}_{bucket}`` per bucket with the named vectors ``dense`` (cosine), ``bm25``
(sparse, IDF modifier) and ``sparse``; point id = chunk_id; payload = {chunk_id, user_id, set_id,
doc_id}. BM25 vectors are computed on the client with ``qdrant_edge.Bm25``, so scores equal Edge's.

Facts that shape this module (``shared/research/qdrant-edge.md`` section 6):

* plain ``FusionQuery(fusion=RRF)`` uses k=2 in local mode, so RRF is always sent as
  ``RrfQuery(rrf=Rrf(k=..., weights=...))``;
* ids come back as ``str`` (Edge: ``uuid.UUID``); both are normalised with ``str()``;
* local mode ignores payload indexes (and warns), so they are only created on a server;
* local mode raises ``ValueError``/``KeyError`` where a server answers 404/400, and it is not
  thread-safe, so every local-mode call is serialised;
* the client must be closed explicitly (:meth:`QdrantServerIndex.close`).

Failure rules (seed section 9.3): a missing collection (or a missing named vector) on a read is
"no data": ``[]`` and a warning; an unreachable server or any other failure raises
:class:`ragindex.errors.IndexBackendError` naming the URL, with the client's exception as ``__cause__``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ragindex._optional import require
from ragindex.closing import Closing
from ragindex.errors import ConfigurationError, IndexBackendError, RagindexError
from ragindex.index import _qdrant
from ragindex.index._qdrant import PAYLOAD_INDEXES, SCROLL_PAGE, QdrantSearch, QueryPlan
from ragindex.index.protocol import DensePoint, ScoredIds, SparsePoint
from ragindex.index.routing import physical_name
from ragindex.types import SparseVector, VectorKind

if TYPE_CHECKING:
    from qdrant_client import QdrantClient, models

log = logging.getLogger(__name__)

_T = TypeVar("_T")

_LOCAL_MISSING_COLLECTION = re.compile(r"^Collection .* not found$")
_LOCAL_MISSING_VECTOR = re.compile(r"vector .* is not found in the collection|Not existing vector name")


class _Failure(Enum):
    """How a client exception is handled."""

    NO_COLLECTION = "no collection"
    NO_VECTOR = "no such named vector"
    UNREACHABLE = "unreachable"
    OTHER = "other"


def _classify(exc: BaseException) -> _Failure:
    """Sort a qdrant-client / httpx / grpc / local-mode exception into a :class:`_Failure`."""
    import httpx
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    source = exc.source if isinstance(exc, ResponseHandlingException) else exc
    if isinstance(source, httpx.TransportError | ConnectionError | TimeoutError):
        return _Failure.UNREACHABLE
    code = getattr(exc, "code", None)
    if callable(code):  # grpc.RpcError (only with prefer_grpc; kept so a gRPC client maps the same way)
        name = getattr(code(), "name", "")
        if name in ("UNAVAILABLE", "DEADLINE_EXCEEDED"):
            return _Failure.UNREACHABLE
        if name == "NOT_FOUND":
            return _Failure.NO_COLLECTION
    if isinstance(exc, UnexpectedResponse):
        content = exc.content.decode("utf-8", errors="replace")
        if "Not existing vector name" in content:
            return _Failure.NO_VECTOR
        if exc.status_code == 404 and "ollection" in content:
            return _Failure.NO_COLLECTION
        return _Failure.OTHER
    if isinstance(exc, ValueError):  # local mode signals both "no data" cases with ValueError
        text = str(exc)
        if _LOCAL_MISSING_COLLECTION.search(text):
            return _Failure.NO_COLLECTION
        if _LOCAL_MISSING_VECTOR.search(text):
            return _Failure.NO_VECTOR
    return _Failure.OTHER


IN_MEMORY = ":memory:"
"""``RAGINDEX_QDRANT_PATH=:memory:``: qdrant-client's local mode in memory (its on-disk mode commits one SQLite
transaction per point, which makes large loads slow; nothing persists in memory: tests and benchmarks only)."""


class QdrantServerIndex(QdrantSearch, Closing):
    """Bucket collections on a Qdrant server, or in qdrant-client's local mode (tests, small setups).

    Args:
        url: Server URL (``http://qdrant:6333``); exactly one of ``url`` and ``path``.
        api_key: Server API key, sent with every request.
        path: Directory of qdrant-client's embedded local mode (one process; payload indexes ignored).
        timeout: Request timeout in seconds (qdrant-client rounds it up to whole seconds).

    Raises:
        ConfigurationError: qdrant-client is not installed, or not exactly one of ``url``/``path``.
    """

    backend = "qdrant"

    def __init__(
        self,
        *,
        url: str | None = None,
        api_key: str | None = None,
        path: Path | None = None,
        timeout: float = 10.0,
    ) -> None:
        if (url is None) == (path is None):
            raise ConfigurationError(
                "QdrantServerIndex needs exactly one of url (a Qdrant server) or path (local mode)"
            )
        require("server", "the Qdrant server backend (RAGINDEX_QDRANT_URL)", "qdrant_client")
        from qdrant_client import QdrantClient

        self.url = url
        self.path = path
        self._local = path is not None
        self._where = f"local Qdrant at {path}" if path is not None else f"Qdrant server at {url}"
        self._known: set[str] = set()
        self._field_indexes: set[tuple[str, str]] = set()  # (collection, payload key) known to have its index
        self._lock = threading.RLock()
        self._closed = False
        if path is not None:
            if str(path) != IN_MEMORY:  # qdrant-client's in-memory local mode: nothing on disk (tests, benchmarks)
                path.mkdir(parents=True, exist_ok=True)
            # local mode is one process; the lock below serialises its calls across threads
            self._client: QdrantClient = QdrantClient(path=str(path), force_disable_check_same_thread=True)
        else:
            self._client = QdrantClient(
                url=url,
                api_key=api_key,
                timeout=max(1, math.ceil(timeout)),
                check_compatibility=False,  # the check warns from a thread when the server is down
            )

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Close the client (local mode: persist and release the directory)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._client.close()
            except Exception as exc:  # closing must not mask the caller's own error
                log.warning("closing the qdrant client (%s) failed: %s", self._where, exc)

    # ------------------------------------------------------------------ error handling
    def _error(self, what: str, exc: BaseException) -> IndexBackendError:
        if _classify(exc) is _Failure.UNREACHABLE:
            cause = getattr(exc, "source", None) or exc
            return IndexBackendError(
                f"the {self._where} is unreachable ({what}: {type(cause).__name__}: {cause}); "
                "check that the server runs and that the configured URL and port are right",
                backend=self.backend,
                url=self.url,
            )
        if isinstance(exc, KeyError) and exc.args:  # local mode's "no such point"
            detail = f"no point with id {exc.args[0]}"
        else:  # ResponseHandlingException has no text of its own, only a source
            detail = str(exc) or repr(getattr(exc, "source", exc))
        return IndexBackendError(f"{what} on the {self._where} failed: {detail}", backend=self.backend, url=self.url)

    def _call(self, what: str, fn: Callable[[], _T]) -> _T:
        """Run one client call, translating every foreign exception into :class:`IndexBackendError`."""
        with self._lock if self._local else contextlib.nullcontext():
            try:
                return fn()
            except RagindexError:
                raise
            except Exception as exc:
                raise self._error(what, exc) from exc

    def _read(
        self,
        what: str,
        collection: str,
        bucket: int,
        fn: Callable[[], _T],
        *,
        using: str | None = None,
        warn: bool = True,
    ) -> _T | None:
        """Like :meth:`_call`, but a missing collection or named vector is "no data": ``None`` (+ a warning)."""

        def read() -> _T | None:
            try:
                return fn()
            except RagindexError:
                raise
            except Exception as exc:
                failure = _classify(exc)
                if failure is _Failure.NO_COLLECTION:
                    if warn:
                        log.warning("collection %s bucket %s does not exist: no hits", collection, bucket)
                    return None
                if failure is _Failure.NO_VECTOR:
                    log.warning(
                        "collection %s bucket %s has no vector %r configured: no hits", collection, bucket, using
                    )
                    return None
                raise  # translated by _call

        return self._call(what, read)

    # ------------------------------------------------------------------ collections
    def has_bucket(self, collection: str, bucket: int) -> bool:
        """Whether the bucket's collection exists."""
        name = physical_name(collection, bucket)
        return bool(self._call("collection check", lambda: self._client.collection_exists(name)))

    def open_bucket(self, collection: str, bucket: int) -> None:
        """Nothing to open ahead: the server holds its collections open."""

    def _ensure_collection(self, collection: str, bucket: int, dim: int) -> str:
        """Create the bucket's collection (and, on a server, its payload indexes) once per process."""
        from qdrant_client import models

        name = physical_name(collection, bucket)
        if name in self._known:
            return name
        with self._lock:
            if name in self._known:
                return name
            client = self._client

            def create() -> None:
                if client.collection_exists(name):
                    existing = set(client.get_collection(name).payload_schema) if not self._local else set()
                else:
                    existing = set()
                    try:
                        client.create_collection(
                            name,
                            vectors_config={
                                VectorKind.DENSE: models.VectorParams(size=dim, distance=models.Distance.COSINE)
                            },
                            sparse_vectors_config={
                                VectorKind.BM25: models.SparseVectorParams(modifier=models.Modifier.IDF),
                                VectorKind.SPARSE: models.SparseVectorParams(),
                            },
                        )
                    except Exception:
                        if not client.collection_exists(name):  # otherwise another writer created it first
                            raise
                if self._local:  # local mode ignores payload indexes and warns about them
                    return
                for field in PAYLOAD_INDEXES:
                    if field in existing:
                        continue
                    # integer indexes have no is_tenant flag; is_principal groups storage by user_id (as on Edge)
                    params = models.IntegerIndexParams(
                        type=models.IntegerIndexType.INTEGER, lookup=True, range=False, is_principal=field == "user_id"
                    )
                    client.create_payload_index(name, field, field_schema=params, wait=True)

            self._call(f"creating collection {name}", create)
            self._known.add(name)
            return name

    def ensure_field_indexes(self, collection: str, bucket: int, fields: Mapping[str, str]) -> None:
        """Create the keyword, float or integer payload index of each metadata field the collection lacks."""
        from qdrant_client import models

        from ragindex.filters import payload_key

        name = physical_name(collection, bucket)
        wanted = {payload_key(f): _qdrant.FIELD_INDEX_KINDS[kind] for f, kind in fields.items()}
        if self._local or all((name, key) in self._field_indexes for key in wanted):
            return  # local mode ignores payload indexes (and warns about each)
        schemas: dict[str, models.PayloadSchemaType | models.IntegerIndexParams] = {
            "keyword": models.PayloadSchemaType.KEYWORD,
            "float": models.PayloadSchemaType.FLOAT,
            "integer": models.IntegerIndexParams(type=models.IntegerIndexType.INTEGER, lookup=True, range=False),
        }
        client = self._client

        def create() -> None:
            existing = set(client.get_collection(name).payload_schema)
            for key, kind in wanted.items():
                if key not in existing:
                    client.create_payload_index(name, key, field_schema=schemas[kind], wait=True)
                self._field_indexes.add((name, key))

        try:
            self._call(f"indexing the metadata fields of {name}", create)
        except IndexBackendError as exc:  # a filter still works without its index: slower, never wrong
            log.warning("cannot create the payload indexes of %s in %s: %s", sorted(wanted), name, exc)

    def drop_collection(self, collection: str, bucket_count: int) -> None:
        """Delete every bucket collection of a logical collection (missing ones are skipped)."""
        for bucket in range(bucket_count):
            name = physical_name(collection, bucket)
            with self._lock:
                self._known.discard(name)
            self._read(
                "delete collection",
                collection,
                bucket,
                functools.partial(self._client.delete_collection, name),
                warn=False,
            )

    def optimize(self, collection: str, bucket: int) -> bool:
        """Always False: a Qdrant server builds and merges its indexes itself, in the background."""
        return False

    # ------------------------------------------------------------------ writes
    def upsert_dense(self, collection: str, bucket: int, points: Sequence[DensePoint]) -> None:
        """Write whole points (dense vector + payload), creating the collection on first write."""
        if not points:
            return
        from qdrant_client import models

        dim = int(points[0].vector.shape[0])
        name = self._ensure_collection(collection, bucket, dim)
        batch = [
            models.PointStruct(
                id=p.chunk_id,
                vector={VectorKind.DENSE: [float(x) for x in p.vector.tolist()]},
                payload=_qdrant.payload(p),
            )
            for p in points
        ]
        upsert = functools.partial(self._client.upsert, name, points=batch, wait=True)
        done = self._read("upsert", collection, bucket, upsert, warn=False)
        if done is None:  # dropped by another process since this one cached it: create it again, once
            with self._lock:
                self._known.discard(name)
            self._ensure_collection(collection, bucket, dim)
            self._call("upsert", upsert)

    def upsert_sparse(
        self, collection: str, bucket: int, name: str, points: Sequence[SparsePoint], *, dense_dim: int
    ) -> None:
        """Write whole points without a dense vector (payload + sparse ``name``), creating the collection if needed."""
        if not points:
            return
        from qdrant_client import models

        physical = self._ensure_collection(collection, bucket, dense_dim)
        batch = [
            models.PointStruct(
                id=p.chunk_id,
                vector={name: models.SparseVector(indices=list(p.vector.indices), values=list(p.vector.values))},
                payload=_qdrant.payload(p),
            )
            for p in points
        ]
        self._call(f"{name} upsert", functools.partial(self._client.upsert, physical, points=batch, wait=True))

    def update_sparse(self, collection: str, bucket: int, name: str, vectors: Mapping[str, SparseVector]) -> None:
        """Partial vector update: set sparse vector ``name`` on existing points (dense and payload untouched)."""
        if not vectors:
            return
        from qdrant_client import models

        physical = physical_name(collection, bucket)
        batch = [
            models.PointVectors(
                id=cid, vector={name: models.SparseVector(indices=list(v.indices), values=list(v.values))}
            )
            for cid, v in vectors.items()
        ]
        done = self._read(
            f"{name} vector update",
            collection,
            bucket,
            lambda: self._client.update_vectors(physical, points=batch, wait=True),
            using=name,
        )
        if done is None:
            raise IndexBackendError(
                f"bucket {bucket} of collection {collection!r} (or its vector {name!r}) does not exist on the "
                f"{self._where}; run `ragindex repair`",
                backend=self.backend,
                url=self.url,
            )

    def delete_points(self, collection: str, bucket: int, chunk_ids: Sequence[str]) -> None:
        """Delete points by id (idempotent: unknown ids and a missing collection are fine)."""
        if not chunk_ids:
            return
        from qdrant_client import models

        name = physical_name(collection, bucket)
        selector = models.PointIdsList(points=list(chunk_ids))
        with self._lock if self._local else contextlib.nullcontext():
            try:
                self._client.delete(name, points_selector=selector, wait=True)
            except Exception as exc:
                if _classify(exc) is not _Failure.NO_COLLECTION:
                    raise self._error("delete", exc) from exc

    def set_payload(self, collection: str, bucket: int, chunk_id: str, payload: Mapping[str, object]) -> None:
        """Merge payload keys into one point (a missing collection is skipped, a missing point is an error)."""
        name = physical_name(collection, bucket)
        with self._lock if self._local else contextlib.nullcontext():
            try:
                self._client.set_payload(name, payload=dict(payload), points=[chunk_id], wait=True)
            except Exception as exc:
                if _classify(exc) is not _Failure.NO_COLLECTION:
                    raise self._error("set_payload", exc) from exc

    # ------------------------------------------------------------------ reads
    def _query(self, collection: str, bucket: int, plan: QueryPlan) -> ScoredIds:
        from qdrant_client import models

        name = physical_name(collection, bucket)
        flt = _qdrant.tenant_filter(models, plan.tenant)
        if plan.fusion is None:
            (source,) = plan.sources
            query = functools.partial(
                self._client.query_points,
                name,
                query=_qdrant.query_vector(models, source),
                using=source.using,
                query_filter=flt,
                limit=plan.limit,
                score_threshold=plan.score_threshold,
                with_payload=False,
                with_vectors=False,
            )
        else:
            fusion: models.RrfQuery | models.FusionQuery
            if isinstance(plan.fusion, _qdrant.Rrf):  # never plain FusionQuery(RRF): local mode would use k=2
                fusion = models.RrfQuery(rrf=models.Rrf(k=plan.fusion.k, weights=plan.fusion.weights))
            else:
                fusion = models.FusionQuery(fusion=models.Fusion.DBSF)
            prefetch = [
                models.Prefetch(
                    query=_qdrant.query_vector(models, vq), using=vq.using, limit=plan.candidates, filter=flt
                )
                for vq in plan.sources
            ]
            query = functools.partial(
                self._client.query_points,
                name,
                prefetch=prefetch,
                query=fusion,
                query_filter=flt,
                limit=plan.limit,
                with_payload=False,
            )
        response = self._read(plan.what, collection, bucket, query, using=plan.using)
        return [] if response is None else [(str(p.id), float(p.score)) for p in response.points]

    def vectors_present(self, collection: str, bucket: int) -> dict[str, frozenset[str]]:
        """Every point id of a bucket with the names of the vectors it holds (a section point has no ``dense``)."""
        name = physical_name(collection, bucket)
        out: dict[str, frozenset[str]] = {}
        offset: models.ExtendedPointId | None = None
        while True:
            page = self._read(
                "scroll",
                collection,
                bucket,
                functools.partial(
                    self._client.scroll,
                    name,
                    limit=SCROLL_PAGE,
                    offset=offset,
                    with_payload=False,
                    with_vectors=True,
                ),
                warn=False,
            )
            if page is None:
                return out
            records, offset = page
            for record in records:
                vector = record.vector if isinstance(record.vector, dict) else {}
                out[str(record.id)] = frozenset(vector)
            if offset is None:
                return out

    def count(self, collection: str, bucket: int) -> int:
        """Exact point count of a bucket (0 if it does not exist)."""
        name = physical_name(collection, bucket)
        result = self._read("count", collection, bucket, lambda: self._client.count(name, exact=True), warn=False)
        return 0 if result is None else int(result.count)
