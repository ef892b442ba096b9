"""``ragindex encoder-server``: serve the locally configured models over HTTP."""

from __future__ import annotations

import ipaddress
from typing import Annotated

import typer

from ragindex.cli.app import app, err, guarded, load_settings, say
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
    GET /v1/models, GET /healthz. Other processes use it with RAGINDEX_DENSE_PROVIDER=openai and
    RAGINDEX_DENSE_URL=http://HOST:PORT, or RAGINDEX_SPARSE_PROVIDER=bge_m3_http / remote_bge_m3.
    Texts are embedded as sent, without prompts: the clients add the query and document prompts.
    """

    def body() -> None:
        from ragindex import factory
        from ragindex._optional import require

        require("service", "the encoder server", "fastapi", "uvicorn")
        import uvicorn

        from ragindex.encoders.server import create_encoder_app

        settings = load_settings()
        # texts are embedded as sent: the clients put the query / document prompts in front themselves
        served = {"dense_provider": "local", "dense_query_prompt": "", "dense_document_prompt": ""}
        dense = factory.build_dense_encoder(settings.model_copy(update=served))
        sparse = factory.build_sparse_provider(settings) if settings.sparse_provider == "bge_m3" else None
        key = api_key or (
            settings.encoder_server_api_key.get_secret_value() if settings.encoder_server_api_key else None
        )
        if key is None and not _is_loopback(host):
            say(f"warning: serving on {host} without an API key (--api-key)", "yellow")
        dimension = dense.dimension  # load the models now, not on the first request
        if sparse is not None:
            sparse.encode_documents(["warm up"])
        err.print(
            f"encoder server on http://{host}:{port}: dense {dense.fingerprint} ({dimension}d), "
            f"sparse {sparse.name if sparse is not None else 'off'}",
            markup=False,
            highlight=False,
        )
        stops.restore()  # uvicorn stops gracefully on SIGINT/SIGTERM and exits 0
        uvicorn.run(create_encoder_app(dense, sparse, api_key=key), host=host, port=port, log_level="warning")

    guarded(body)
