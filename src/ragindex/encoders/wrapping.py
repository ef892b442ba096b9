"""A dense encoder that wraps another: identity (fingerprint, cache key, dimension, scripts) comes from ``inner``."""

from __future__ import annotations

from typing import Any, Protocol

from ragindex.encoders.protocol import DenseEncoder
from ragindex.language import Script


class _Wrapping(Protocol):
    @property
    def inner(self) -> DenseEncoder: ...


class InnerIdentity:
    """Base of the encoders whose fingerprint, cache key and scripts are those of the encoder ``inner``."""

    @property
    def fingerprint(self: _Wrapping) -> str:
        """See :attr:`DenseEncoder.fingerprint`."""
        return self.inner.fingerprint

    @property
    def cache_key(self: _Wrapping) -> str:
        """See :attr:`DenseEncoder.cache_key`."""
        return self.inner.cache_key

    @property
    def languages(self: _Wrapping) -> frozenset[Script]:
        """See :attr:`DenseEncoder.languages`."""
        return self.inner.languages


class DenseEncoderWrapper(InnerIdentity):
    """Base of encoders that change how vectors are computed, never which: everything unknown goes to ``inner``.

    Args:
        inner: The wrapped encoder.
    """

    def __init__(self, inner: DenseEncoder) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (copy, pickle): never recurse
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def dimension(self) -> int:
        """See :attr:`DenseEncoder.dimension`."""
        return self.inner.dimension
