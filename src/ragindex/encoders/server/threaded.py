"""Serve an ASGI app with uvicorn on a loopback port in a background thread (tests, notebooks, embedding)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, Self

from ragindex._optional import require
from ragindex.config.http import HttpSettings
from ragindex.errors import ConfigurationError

__all__ = ["ThreadedServer"]


class ThreadedServer:
    """uvicorn in a daemon thread, on a port chosen by the OS unless one is given.

    Args:
        app: The ASGI application (e.g. :func:`ragindex.encoders.server.create_encoder_app`).
        host: Interface to bind (loopback by default).
        port: Port to bind; 0 picks a free one.
        startup_timeout: Seconds to wait for the server to accept connections.

    Use as a context manager: the ``with`` block yields the server, whose :attr:`url` is the base URL;
    leaving it stops uvicorn (running the app's lifespan shutdown) and joins the thread. It runs with the header
    and body deadlines of every ragindex server (:mod:`ragindex.serving`, default
    :class:`~ragindex.config.http.HttpSettings` unless ``http`` is given).
    """

    def __init__(
        self,
        app: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        startup_timeout: float = 30.0,
        http: HttpSettings | None = None,
    ) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.startup_timeout = startup_timeout
        self.http = http
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> Self:
        """Bind the port, start uvicorn and wait until it serves."""
        require("service", "serving over HTTP", "uvicorn")
        import uvicorn

        from ragindex.serving import server_config

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        config = server_config(self.app, http=self.http, log_level="warning", lifespan="on", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._serve, args=(sock,), name=f"uvicorn-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self.startup_timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise ConfigurationError(f"the HTTP server on {self.url} did not start")
            time.sleep(0.02)
        return self

    def _serve(self, sock: socket.socket) -> None:
        try:
            self._server.run(sockets=[sock])
        finally:
            sock.close()

    def stop(self) -> None:
        """Ask uvicorn to exit and wait for its thread (idempotent)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
