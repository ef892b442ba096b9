"""models prepare: export the dense model to ONNX now (at install time) rather than on the first search."""

from __future__ import annotations

from typing import Annotated

import typer

from ragindex.cli.app import app, emit_json, guarded, load_settings, say
from ragindex.errors import ConfigurationError

models_app = typer.Typer(help="The local models: prepare their fast query runtime.", no_args_is_help=True)
app.add_typer(models_app, name="models")


@models_app.command()
def prepare(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Export the local dense model to ONNX into the ONNX cache (once per model; later runs only check it).

    It also writes the int8 copy that encodes queries, and checks it against float32 once
    (``RAGINDEX_QUERY_PRECISION``: ``auto`` or ``int8``; not with ``float32``).

    Searches and small ingests then encode with ONNX Runtime and never import torch. Without this step the
    first search exports it. Exit code 3 when the export fails (the searches then use torch).
    """

    def body() -> None:
        from ragindex import factory
        from ragindex.encoders.dense.sentence_transformers import SentenceTransformerDenseEncoder

        settings = load_settings()
        dense = settings.dense
        if dense.dense_provider != "local" or dense.light_encoder == "off":
            raise ConfigurationError(
                "nothing to prepare: the light encoder needs RAGINDEX_DENSE_PROVIDER=local and "
                "RAGINDEX_LIGHT_ENCODER=auto"
            )
        heavy = SentenceTransformerDenseEncoder(
            dense.dense_model,
            offline=settings.runtime.hf_offline,
            query_prompt=dense.dense_query_prompt,
            document_prompt=dense.dense_document_prompt,
        )
        light = factory.build_light_dense_encoder(settings, heavy)
        path = getattr(light, "model_file", None)
        query = getattr(light, "query_file", None)
        payload = {
            "model": dense.dense_model,
            "onnx": str(path) if path else None,
            "onnx_queries": str(query) if query else None,
        }
        if as_json:
            emit_json(payload)
        elif path is None:
            say(f"{dense.dense_model}: no ONNX equivalent (its pooling is not mean pooling); torch encodes queries")
        else:
            say(f"{dense.dense_model}: ONNX encoder ready at {path}")
            say(f"queries: {query}" if query is not None and query != path else "queries: float32 (the export above)")

    guarded(body)
