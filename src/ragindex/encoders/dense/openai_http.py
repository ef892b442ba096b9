"""Dense encoder over any OpenAI-compatible ``POST /v1/embeddings`` API.

Works with OpenAI, vLLM, Hugging Face TEI, Ollama, DashScope's compatible mode and
``ragindex encoder-server``: the request is ``{"model", "input": [...], "encoding_format": "float"}``
(plus ``"dimensions"`` when asked to send it) and the answer's ``data[i].embedding`` are put back in
input order by ``data[i].index``. Vectors are checked for their dimension and L2-normalised here,
whatever the server did, so that cosine scores stay in [-1, 1] as the index expects.

Retries, timeouts and the handling of the API key are those of
:class:`ragindex.encoders._http.RetryingJsonClient`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ragindex.encoders._http import HttpEncoder, RetryingJsonClient, float_matrix
from ragindex.encoders.precision import PrecisionCacheKey
from ragindex.encoders.prompts import Prompts, resolve_prompts
from ragindex.errors import ConfigurationError, EncodingError
from ragindex.language import Script, model_scripts

log = logging.getLogger(__name__)

_PROBE_TEXT = "ragindex dimension probe"


def embeddings_url(base_url: str) -> str:
    """``{base}/v1/embeddings`` for a base URL given with or without ``/v1`` (or already ending in ``/embeddings``)."""
    base = base_url.rstrip("/")
    if base.endswith("/embeddings"):
        return base
    if base.endswith("/v1"):
        return f"{base}/embeddings"
    return f"{base}/v1/embeddings"


class OpenAIHttpDenseEncoder(HttpEncoder, PrecisionCacheKey):
    """Dense vectors from an OpenAI-compatible embeddings endpoint.

    Args:
        base_url: API root, e.g. ``https://api.openai.com/v1``, ``http://vllm:8000`` or
            ``https://dashscope.aliyuncs.com/compatible-mode/v1``.
        model: Model name sent in every request (``RAGINDEX_DENSE_MODEL``).
        api_key: Bearer token (kept out of logs and error messages).
        dimensions: Expected dimension; any other size in a response is an :class:`EncodingError`.
            Without it the first response fixes the dimension.
        send_dimensions: Send ``dimensions`` in the request (OpenAI text-embedding-3 and other
            Matryoshka models shorten their vectors); servers without that feature reject it, so it
            is off unless asked for.
        batch_size: Texts per request.
        timeout: Seconds per request.
        max_retries: Retries of 5xx / 408 / 429 / network / timeout failures.
        backoff: Linear backoff step in seconds.
        languages: Scripts the model covers; None guesses them from the model name
            (:func:`ragindex.language.model_scripts`: every script unless the name is a known English-only one).
        query_prompt: Text put in front of every query before it is sent (``""``: none); None takes the
            default of the model's family (:func:`ragindex.encoders.prompts.resolve_prompts`; the model's own
            config is not visible through the API).
        document_prompt: Text put in front of every document chunk, resolved the same way.

    Prompts are applied here, on the client: the OpenAI API has no query/document distinction, and a server
    that added its own prompt would add it to both sides. A server must therefore embed the texts as sent
    (``ragindex encoder-server`` does).

    Fingerprint: ``openai:<model>``, plus ``@<dimensions>`` when ``dimensions`` is sent, plus
    ``|prompts=<hash>`` when the model has prompts. The vector
    space is a property of the model, not of the host serving it: moving the same model from OpenAI
    to a self-hosted vLLM, or from a staging to a production URL, must not force a reindex. A request
    ``dimensions`` does change the space (a truncated Matryoshka vector), so it is part of it; the
    expected-dimension check alone is not. The price: two different models published under the same
    name on two hosts look alike; the dimension check catches the common case of that mistake.
    """

    precision = "remote"
    """The server's precision is its own (the cache key's precision)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        dimensions: int | None = None,
        send_dimensions: bool = False,
        batch_size: int = 64,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        languages: Iterable[Script] | None = None,
        query_prompt: str | None = None,
        document_prompt: str | None = None,
    ) -> None:
        if batch_size < 1:
            raise ConfigurationError(f"batch_size must be >= 1, got {batch_size}")
        if send_dimensions and dimensions is None:
            raise ConfigurationError("send_dimensions needs dimensions (RAGINDEX_DENSE_DIMENSIONS)")
        self.url = embeddings_url(base_url)
        self.model = model
        self.prompts: Prompts = resolve_prompts(model, query=query_prompt, document=document_prompt)
        self.languages = frozenset(languages) if languages is not None else model_scripts(model)
        self.expected_dimension = dimensions
        self.send_dimensions = send_dimensions
        self.batch_size = batch_size
        self._dimension = dimensions
        self._http = RetryingJsonClient(
            self.url,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            api_key=api_key,
            service="embeddings API",
        )

    @property
    def fingerprint(self) -> str:
        """``openai:<model>`` (``@<dimensions>`` when the request shortens the vectors; then the prompts' hash)."""
        suffix = f"@{self.expected_dimension}" if self.send_dimensions else ""
        return f"openai:{self.model}{suffix}{self.prompts.fingerprint_suffix}"

    @property
    def dimension(self) -> int:
        """The configured dimension, else the one of the first answer (one probe request if none came yet)."""
        if self._dimension is None:
            self._embed([_PROBE_TEXT])
        assert self._dimension is not None  # set by _embed or raised
        return self._dimension

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Chunk vectors, shape (n, dimension), float32, unit length (the document prompt sent in front)."""
        return self._encode(self.prompts.documents(texts))

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors (the query prompt sent in front: the OpenAI API has no query/document distinction)."""
        return self._encode(self.prompts.queries(texts))

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [self._embed(list(texts[i : i + self.batch_size])) for i in range(0, len(texts), self.batch_size)]
        out = np.concatenate(parts) if len(parts) > 1 else parts[0]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def _embed(self, batch: list[str]) -> np.ndarray:
        payload: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.send_dimensions:
            payload["dimensions"] = self.expected_dimension
        body = self._http.post_json("", payload)
        vectors = self._parse(body, len(batch))
        found = vectors.shape[1]
        if self._dimension is None:
            self._dimension = found
        elif found != self._dimension:
            source = "RAGINDEX_DENSE_DIMENSIONS" if self.expected_dimension is not None else "its first answer"
            raise EncodingError(
                f"embeddings API returned {found}-dimensional vectors for model {self.model!r} but {self._dimension} "
                f"were expected ({source}); check RAGINDEX_DENSE_MODEL / RAGINDEX_DENSE_DIMENSIONS",
                expected=self._dimension,
                got=found,
            )
        return vectors

    def _parse(self, body: Any, n: int) -> np.ndarray:
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != n:
            got = len(data) if isinstance(data, list) else "no"
            raise EncodingError(f"embeddings API answered {got} embeddings for {n} inputs (model {self.model!r})")
        rows: list[Any] = [None] * n
        for position, item in enumerate(data):
            index = item.get("index", position) if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < n or rows[index] is not None:
                raise EncodingError(f"embeddings API answered an invalid or repeated index {index!r}")
            rows[index] = item.get("embedding")
        return float_matrix(
            rows, service="embeddings API", noun="embeddings", hint=" (is encoding_format=float supported?)"
        )
