"""``ragindex encoder-server``: serve the locally configured models over HTTP."""

from __future__ import annotations

import ipaddress
import os
import signal
from typing import Annotated

import typer

from ragindex.cli.app import app, guarded, load_settings, say
from ragindex.cli.signals import stops


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@app.command("encoder-server")
def encoder_server(
    host: Annotated[str, typer.Option("--host", help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.", min=1, max=65535)] = 8080,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            help="Require `Authorization: Bearer <key>` (default: RAGINDEX_ENCODER_SERVER_API_KEY; none: open).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve the local dense model (and BGE-M3 sparse when RAGINDEX_SPARSE_PROVIDER=bge_m3) over HTTP.

    Routes: POST /encode (bge-m3 server contract), POST /v1/embeddings (OpenAI-compatible),
    GET /v1/models, GET /healthz (liveness), GET /readyz (200 once the models are loaded). Other processes use
    it with RAGINDEX_DENSE_PROVIDER=openai and RAGINDEX_DENSE_URL=http://HOST:PORT, or
    RAGINDEX_SPARSE_PROVIDER=bge_m3_http / remote_bge_m3. Texts are embedded as sent, without prompts: the
    clients add the query and document prompts.
    """

    def body() -> None:
        from ragindex import factory
        from ragindex._optional import require

        require("service", "the encoder server", "fastapi", "uvicorn")
        from ragindex.encoders.server import create_encoder_app
        from ragindex.serving import serve

        settings = load_settings()
        # texts are embedded as sent: the clients put the query / document prompts in front themselves; every
        # request is a document-side encode, which torch serves: the light (ONNX) query encoder is not loaded
        served = {
            "dense_provider": "local",
            "dense_query_prompt": "",
            "dense_document_prompt": "",
            "light_encoder": "off",
        }
        dense = factory.build_dense_encoder(settings.model_copy(update=served))
        sparse = factory.build_sparse_provider(settings) if settings.sparse_provider == "bge_m3" else None
        key = api_key or (
            settings.encoder_server_api_key.get_secret_value() if settings.encoder_server_api_key else None
        )
        if key is None and not _is_loopback(host):
            say(f"warning: serving on {host} without an API key (--api-key)", "yellow")
        sparse_name = sparse.name if sparse is not None else "off"
        say(
            f"encoder server on http://{host}:{port}: dense {dense.fingerprint}, sparse {sparse_name}; loading the "
            "models (GET /readyz answers 200 once they are loaded)"
        )
        failed: list[BaseException] = []

        def warmed(error: BaseException | None, seconds: float) -> None:
            if error is not None:  # the server must not stay up unable to encode: stop it, report the error below
                failed.append(error)
                os.kill(os.getpid(), signal.SIGTERM)
                return
            say(f"ready in {seconds:.1f} s: dense {dense.fingerprint} ({dense.dimension}d), sparse {sparse_name}")

        encoder_app = create_encoder_app(dense, sparse, api_key=key, on_warm_up=warmed)
        received = _note_signals()
        serve(encoder_app, host=host, port=port, http=settings.http, log_level="warning")
        if failed:
            raise failed[0]
        if received:
            say(f"stopped ({signal.Signals(received[0]).name}): the encoder server ended cleanly", "yellow")

    guarded(body)


def _note_signals() -> list[int]:
    """SIGINT/SIGTERM only noted: uvicorn handles them while it runs, then hands the signal back to this handler.

    So the server shuts down gracefully and the command exits 0 (or with the code of a failed model load, which
    stops the server with a SIGTERM of its own).
    """
    received: list[int] = []
    stops.restore()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda sig, _frame: received.append(sig))
    return received
