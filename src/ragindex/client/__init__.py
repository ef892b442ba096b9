"""A typed client of the ragindex HTTP service (``ragindex serve``), blocking and asyncio.

>>> from ragindex.client import Client                       # doctest: +SKIP
>>> with Client("http://127.0.0.1:8000", api_key=key) as c:  # doctest: +SKIP
...     result = c.search("which moon is the largest", set_id=1, top_k=3)

Needs only the core install (httpx, pydantic); errors come back as the service's
:class:`~ragindex.errors.RagindexError` classes (see :mod:`ragindex.client.errors`).
"""

from __future__ import annotations

from ragindex.client import models
from ragindex.client.aio import AsyncClient
from ragindex.client.calls import UploadFile
from ragindex.client.models import *  # noqa: F403  (the answers' models, listed in models.__all__)
from ragindex.client.sync import Client

__all__ = ["AsyncClient", "Client", "UploadFile"]
__all__ += models.__all__
