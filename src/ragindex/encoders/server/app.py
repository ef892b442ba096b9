"""The encoder server: the locally configured models behind HTTP (``ragindex encoder-server``).

Routes:

* ``POST /encode``: the bge-m3-server / bge-m3-service contract of seed section 6.6
  (``{"texts", "return_dense", "return_sparse", "return_colbert"?, "max_length"?, "batch_size"?}`` ->
  ``{"dense"?: [[...]], "sparse"?: [{"<token_id>": weight}]}``), so that the ``bge_m3_http`` and
  ``remote_bge_m3`` providers of other processes can use this one's models;
* ``POST /v1/embeddings``: OpenAI-compatible (``input`` a string or a list of strings,
  ``encoding_format`` ``float`` or ``base64``), for the ``openai`` dense provider and any OpenAI client;
* ``GET /v1/models``;
* ``GET /healthz`` (liveness: the process answers, at once) and ``GET /readyz`` (readiness: 503 until the models
  are loaded and have encoded once, 200 after; 503 with the error when loading failed).

Encoding runs on one dedicated worker thread, never on the event loop: requests are served while a
batch encodes, and batches do not fight over the CPU's cores. The app's start-up queues the warm-up (load each
model, encode one text the way the routes do) on that thread, so the port answers at once, ``/readyz`` says when
the first request will not wait for a model load, and a request sent earlier waits behind the warm-up. With an API
key every route but ``/healthz`` and ``/readyz`` requires ``Authorization: Bearer <key>``.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from ragindex.errors import RagindexError

if TYPE_CHECKING:
    from ragindex.encoders.protocol import DenseEncoder, SparseEncoder
    from ragindex.types import SparseVector

__all__ = ["MAX_TEXTS", "WarmUpDone", "create_encoder_app"]

log = logging.getLogger(__name__)

MAX_TEXTS = 4096
T = TypeVar("T")
WarmUpDone = Callable[[BaseException | None, float], None]
"""Called when the warm-up ends: its error (None: ready) and how long it took in seconds."""


class EncodeRequest(BaseModel):
    """Body of ``POST /encode`` (FlagEmbedding's defaults: dense on, sparse off).

    ``max_length`` and ``batch_size`` are accepted for the contract's sake; the served encoders keep
    their configured limits (``RAGINDEX_SPARSE_MAX_LENGTH``, the dense model's maximum sequence length,
    ``RAGINDEX_EMBED_BATCH_SIZE``), so every client gets the same vectors for the same text.
    """

    texts: list[str] = Field(max_length=MAX_TEXTS)
    return_dense: bool = True
    return_sparse: bool = False
    return_colbert: bool = False
    max_length: int | None = Field(None, ge=1)
    batch_size: int | None = Field(None, ge=1)


class EmbeddingsRequest(BaseModel):
    """Body of ``POST /v1/embeddings`` (token-id inputs are not supported)."""

    input: str | list[str]
    model: str | None = None
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(None, ge=1)
    user: str | None = None


class _Worker:
    """One thread that runs every encode; created on first use, shut down with the app."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None

    async def run(self, fn: Callable[[], T]) -> T:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragindex-encoder")
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    def shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None


def _served_names(dense: DenseEncoder | None, model_name: str | None) -> list[str]:
    """Model names ``/v1/embeddings`` answers to: the given name, the encoder's model name and fingerprint."""
    names: list[str] = []
    candidates = [model_name, getattr(dense, "model_name", None)]
    if dense is not None:
        fingerprint = dense.fingerprint
        candidates += [fingerprint.split(":", 1)[-1], fingerprint]
    for name in candidates:
        if isinstance(name, str) and name and name not in names:
            names.append(name)
    return names


def _accepts(names: Sequence[str], requested: str | None) -> bool:
    """A request names the served model by any served name, or by its bare name (``all-MiniLM-L6-v2``)."""
    if not requested:
        return True
    if requested in names:
        return True
    return "/" not in requested and any(n.rsplit("/", 1)[-1] == requested for n in names)


def _sparse_dict(vector: SparseVector) -> dict[str, float]:
    return {str(i): float(v) for i, v in zip(vector.indices, vector.values, strict=True)}


def _count_tokens(texts: Sequence[str]) -> int:
    """Approximate usage: whitespace-separated words (the OpenAI ``usage`` block is informational)."""
    return sum(len(t.split()) for t in texts)


class _EncoderService:
    """The route handlers over one dense and one sparse encoder."""

    def __init__(
        self, dense: DenseEncoder | None, sparse: SparseEncoder | None, api_key: str | None, model_name: str | None
    ) -> None:
        self.dense = dense
        self.sparse = sparse
        self.api_key = api_key
        self.names = _served_names(dense, model_name)
        self.served = self.names[0] if self.names else "none"
        self.sparse_hint = "RAGINDEX_SPARSE_PROVIDER=bge_m3"
        self.worker = _Worker()
        self.readiness: dict[str, Any] = {"status": "loading"}
        self.dimension: int | None = None

    def _warm_models(self) -> None:
        """Load each served model and encode one text through the routes' own calls (on the encoding thread)."""
        if self.dense is not None:
            self.dense.encode_documents(["warm up"])
            self.dimension = self.dense.dimension
        if self.sparse is not None:
            _sparse_weights(self.sparse, ["warm up"])

    async def warm_up(self, done: WarmUpDone | None = None) -> None:
        """Run :meth:`_warm_models` on the encoding thread; ``/readyz`` answers 200 after it, or 503 with its error."""
        began = time.perf_counter()
        error: BaseException | None = None
        try:
            await self.worker.run(self._warm_models)
        except Exception as exc:
            error = exc
            message = exc.message if isinstance(exc, RagindexError) else f"{type(exc).__name__}: {exc}"
            log.error("the encoder server's models did not load: %s", message)
            self.readiness = {"status": "failed", "error": message}
        else:
            self.readiness = {"status": "ready"}
        if done is not None:
            done(error, time.perf_counter() - began)

    def authorize(self, request: Request) -> None:
        """Require ``Authorization: Bearer <key>`` when a key is set."""
        if self.api_key is None:
            return
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(token.strip().encode(), self.api_key.encode()):
            raise HTTPException(401, "missing or invalid bearer token", headers={"WWW-Authenticate": "Bearer"})

    async def in_worker(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the encoding thread; encoder failures become HTTP 500."""
        try:
            return await self.worker.run(fn)
        except RagindexError as exc:
            raise HTTPException(500, f"{type(exc).__name__}: {exc.message}") from exc

    def need_dense(self) -> DenseEncoder:
        """The dense encoder, or 400 when none is served."""
        if self.dense is None:
            raise HTTPException(400, "this encoder server serves no dense model")
        return self.dense

    async def healthz(self) -> dict[str, Any]:
        """Liveness and what is served."""
        dense = self.served if self.dense is not None else None
        return {"status": "ok", "dense": dense, "sparse": getattr(self.sparse, "name", None)}

    async def readyz(self) -> JSONResponse:
        """Readiness: 200 once the models are loaded and have encoded once; 503 while loading, or after a failure."""
        dense = self.served if self.dense is not None else None
        body = {**self.readiness, "dense": dense, "sparse": getattr(self.sparse, "name", None)}
        return JSONResponse(body, status_code=200 if self.readiness["status"] == "ready" else 503)

    async def models(self) -> dict[str, Any]:
        """OpenAI's model list: the served dense model."""
        data = [{"id": self.served, "object": "model", "created": 0, "owned_by": "ragindex"}] if self.dense else []
        return {"object": "list", "data": data}

    async def encode(self, body: EncodeRequest) -> dict[str, Any]:
        """The bge-m3 ``/encode`` contract."""
        if body.return_colbert:
            raise HTTPException(400, "return_colbert is not supported by this encoder server")
        dense = self.need_dense() if body.return_dense else None
        sparse = self.sparse
        if body.return_sparse and sparse is None:
            raise HTTPException(400, f"this encoder server serves no sparse model; start it with {self.sparse_hint}")
        texts = body.texts

        def run() -> dict[str, Any]:
            out: dict[str, Any] = {}
            if dense is not None:
                out["dense"] = dense.encode_documents(texts).tolist() if texts else []
            if body.return_sparse and sparse is not None:
                out["sparse"] = _sparse_weights(sparse, texts)
            return out

        return await self.in_worker(run)

    async def embeddings(self, body: EmbeddingsRequest) -> dict[str, Any]:
        """OpenAI's ``/v1/embeddings``."""
        dense = self.need_dense()
        if not _accepts(self.names, body.model):
            raise HTTPException(404, f"model {body.model!r} is not served here; served: {', '.join(self.names)}")
        texts = [body.input] if isinstance(body.input, str) else body.input
        if len(texts) > MAX_TEXTS:
            raise HTTPException(400, f"at most {MAX_TEXTS} inputs per request, got {len(texts)}")

        def run() -> np.ndarray:
            if body.dimensions is not None and body.dimensions != dense.dimension:
                size = dense.dimension
                raise HTTPException(400, f"model {self.served!r} gives {size}-dimensional vectors; no `dimensions`")
            return dense.encode_documents(texts) if texts else np.zeros((0, 0), dtype=np.float32)

        vectors = await self.in_worker(run)
        data = []
        for i, row in enumerate(vectors):
            if body.encoding_format == "base64":
                embedding: Any = base64.b64encode(row.astype("<f4").tobytes()).decode("ascii")
            else:
                embedding = row.tolist()
            data.append({"object": "embedding", "index": i, "embedding": embedding})
        tokens = _count_tokens(texts)
        return {
            "object": "list",
            "data": data,
            "model": body.model or self.served,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


def _sparse_weights(sparse: SparseEncoder, texts: list[str]) -> list[dict[str, float]]:
    """Raw ``lexical_weights`` when the encoder has them (local BGE-M3), else its document vectors."""
    raw = getattr(sparse, "lexical_weights", None)
    if callable(raw):
        return [{str(k): float(v) for k, v in w.items()} for w in raw(texts)]
    return [_sparse_dict(v) for v in sparse.encode_documents(texts)]


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """OpenAI's error shape under ``/v1/``, FastAPI's ``{"detail"}`` elsewhere."""
    assert isinstance(exc, HTTPException)
    if request.url.path.startswith("/v1/"):
        kind = "authentication_error" if exc.status_code == 401 else "invalid_request_error"
        if exc.status_code >= 500:
            kind = "server_error"
        content: dict[str, Any] = {"error": {"message": str(exc.detail), "type": kind, "code": exc.status_code}}
    else:
        content = {"detail": exc.detail}
    return JSONResponse(content, status_code=exc.status_code, headers=exc.headers)


def create_encoder_app(
    dense: DenseEncoder | None,
    sparse: SparseEncoder | None,
    *,
    api_key: str | None = None,
    model_name: str | None = None,
    sparse_hint: str = "RAGINDEX_SPARSE_PROVIDER=bge_m3",
    warm_up: bool = True,
    on_warm_up: WarmUpDone | None = None,
) -> FastAPI:
    """Build the encoder server's FastAPI app.

    Args:
        dense: Dense encoder served by ``/encode`` (``return_dense``) and ``/v1/embeddings``, or None.
        sparse: Sparse encoder served by ``/encode`` (``return_sparse``), or None. An encoder with raw
            ``lexical_weights(texts)`` (local BGE-M3) answers those, uncleaned, so the client's
            ``top_k`` / ``min_weight`` alone decide; any other answers its ``encode_documents``.
        api_key: Bearer token required on every route but ``/healthz`` (None: open).
        model_name: Name reported by ``/v1/models`` and in answers (default: the dense model's name).
        sparse_hint: The setting that enables sparse, named when a client asks for it without one.
        warm_up: Load the models at start-up, on the encoding thread (``/readyz`` is 503 until they are loaded);
            False: they load on the first request, and ``/readyz`` is 200 at once.
        on_warm_up: Called on the event loop when the warm-up ends, with its error (None: ready) and its duration.

    Returns:
        The app; its lifespan starts the warm-up and shuts the encoding thread down.
    """
    service = _EncoderService(dense, sparse, api_key or None, model_name)
    service.sparse_hint = sparse_hint

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        warming = asyncio.create_task(service.warm_up(on_warm_up)) if warm_up else None
        if warming is None:
            service.readiness = {"status": "ready"}
        try:
            yield
        finally:
            service.worker.shutdown()  # waits for a warm-up under way (a model load cannot be interrupted)
            if warming is not None:
                await warming

    app = FastAPI(title="ragindex encoder server", lifespan=lifespan)
    app.add_exception_handler(HTTPException, _http_error)
    guarded = [Depends(service.authorize)]
    app.get("/healthz")(service.healthz)
    app.get("/readyz", response_model=None)(service.readyz)
    app.get("/v1/models", dependencies=guarded)(service.models)
    app.post("/encode", dependencies=guarded)(service.encode)
    app.post("/v1/embeddings", dependencies=guarded)(service.embeddings)
    return app
