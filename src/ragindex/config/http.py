"""The settings of ragindex's HTTP servers (``serve``, ``watch --serve``, ``encoder-server``, ``mcp --host``)."""

from __future__ import annotations

from pydantic import Field

from ragindex.config.base import SettingsSection


class HttpSettings(SettingsSection):
    """HTTP servers: how long `serve`, `encoder-server` and `mcp --host` wait for a slow client."""

    http_header_timeout_seconds: float = Field(
        10.0,
        gt=0,
        description="A request's headers must all arrive within this many seconds (from the connection for its "
        "first request, from its first byte for a next one on a kept-alive connection); else 408 and the connection "
        "is closed. Headers are a few hundred bytes: a client that trickles them holds a connection, it does not "
        "send a request.",
    )
    http_body_timeout_seconds: float = Field(
        30.0,
        gt=0,
        description="A request body that stops arriving for this many seconds gets 408 and the connection is "
        "closed; it is also the grace time of `RAGINDEX_HTTP_BODY_MIN_RATE`.",
    )
    http_body_min_rate: int = Field(
        1024,
        ge=0,
        description="Slowest average rate of a request body in bytes/s: a body may take "
        "`RAGINDEX_HTTP_BODY_TIMEOUT_SECONDS` plus one second per this many bytes, else 408 (a 50 MB upload "
        "over a 1 Mbit/s link needs ~125 kB/s). 0: only the idle timeout applies.",
    )
