"""The encoder server: local models behind ``/encode`` and OpenAI-compatible ``/v1/embeddings`` (needs fastapi).

``create_encoder_app`` builds the app; ``ThreadedServer`` runs any ASGI app on a loopback port in a thread.
"""

from __future__ import annotations

from ragindex.encoders.server.app import create_encoder_app
from ragindex.encoders.server.threaded import ThreadedServer

__all__ = ["ThreadedServer", "create_encoder_app"]
