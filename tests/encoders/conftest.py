"""The project's own encoder server, started once per module on a free loopback port in a thread.

Dense: the shipped all-MiniLM-L6-v2 in float32 (so that vectors compare to 1e-5 whatever the batch).
Sparse: the local BGE-M3 encoder on a tiny random checkpoint (built here, nothing downloaded); where that
encoder is not available, Qdrant's BM25 stands in (a real sparse encoder, not a mock of the clients).
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ragindex.encoders.dense.sentence_transformers import SentenceTransformerDenseEncoder

if TYPE_CHECKING:
    from ragindex.encoders.server import ThreadedServer

API_KEY = "sk-test-encoder-key-5f1c2e"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture(scope="session")
def api_key() -> str:
    return API_KEY


@pytest.fixture(scope="session")
def local_dense() -> SentenceTransformerDenseEncoder:
    return SentenceTransformerDenseEncoder(MODEL, precision="float32")


@pytest.fixture(scope="session")
def local_sparse(tmp_path_factory: pytest.TempPathFactory) -> Any:
    try:
        from ragindex.encoders.sparse.bge_m3 import BgeM3SparseEncoder
        from ragindex.testing.tiny_models import build_tiny_bge_m3
    except ImportError:
        from ragindex.encoders.sparse.bm25 import Bm25SparseEncoder

        return Bm25SparseEncoder()
    path = build_tiny_bge_m3(tmp_path_factory.mktemp("models") / "tiny-bge-m3", seed=11)
    return BgeM3SparseEncoder(str(path), top_k=10_000)


@pytest.fixture(scope="module")
def encoder_server(local_dense: SentenceTransformerDenseEncoder, local_sparse: Any) -> Iterator[ThreadedServer]:
    """Encoder server with dense + sparse and an API key; ``server.requests`` counts (path, status)."""
    served = pytest.importorskip("ragindex.encoders.server", reason="the encoder server needs ragindex[service]")
    app = served.create_encoder_app(local_dense, local_sparse, api_key=API_KEY)
    requests: list[tuple[str, int]] = []

    @app.middleware("http")
    async def count(request: Any, call_next: Any) -> Any:
        response = await call_next(request)
        requests.append((request.url.path, response.status_code))
        return response

    with served.ThreadedServer(app) as server:
        server.requests = requests  # type: ignore[attr-defined]
        yield server


@pytest.fixture(scope="module")
def dense_only_server(local_dense: SentenceTransformerDenseEncoder) -> Iterator[ThreadedServer]:
    served = pytest.importorskip("ragindex.encoders.server", reason="the encoder server needs ragindex[service]")
    with served.ThreadedServer(served.create_encoder_app(local_dense, None)) as server:
        yield server


# ---------------------------------------------------------------- a scripted stdlib HTTP server
Reply = tuple[Any, ...]  # status, JSON body, seconds to sleep before answering[, extra headers]


class ScriptedServer:
    """A tiny real HTTP server whose n-th request gets ``script(n, path, body)``; it counts requests."""

    def __init__(self, script: Callable[[int, str, Any], Reply]) -> None:
        self.script = script
        self.requests: list[str] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"null")
                with outer._lock:
                    outer.requests.append(self.path)
                    outer.headers.append(dict(self.headers))
                    n = len(outer.requests)
                reply = outer.script(n, self.path, body)
                status, payload, delay = reply[:3]
                extra = reply[3] if len(reply) > 3 else {}
                if delay:
                    threading.Event().wait(delay)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in extra.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join()


@pytest.fixture
def scripted() -> Iterator[Callable[[Callable[[int, str, Any], Reply]], ScriptedServer]]:
    servers: list[ScriptedServer] = []

    def start(script: Callable[[int, str, Any], Reply]) -> ScriptedServer:
        server = ScriptedServer(script).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)


@pytest.fixture
def tmp_files(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "cats.md").write_text(
        "# Cats\n\nCats are small domesticated felines that purr, chase mice and sleep most of the day.\n"
    )
    (docs / "volcanoes.md").write_text(
        "# Volcanoes\n\nA volcano erupts when molten magma and ash escape through the crust of the earth.\n"
    )
    (docs / "bread.md").write_text(
        "# Bread\n\nBaking bread: knead flour, water, yeast and salt into dough, let it rise, then bake it.\n"
    )
    return docs
