"""The base of the service's pure ASGI middleware."""

from __future__ import annotations

from typing import Any


class HttpMiddleware:
    """Pure ASGI middleware that acts on HTTP calls (:meth:`handle`) and passes every other call through."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Handle one ASGI call."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.handle(scope, receive, send)

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Handle one HTTP request (the subclass's work)."""
        raise NotImplementedError
