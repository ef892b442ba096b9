"""Encoder precision: float32, bf16 autocast, or bf16 weights (where the CPU computes bf16 natively).

``bfloat16`` runs float32 weights under ``torch.autocast``: matrix products in bf16, the rest (layer norms,
softmax, the pooled sum) in float32. ``bfloat16-weights`` casts the weights themselves: every operation runs in
bf16, which is faster again (measured in docs/benchmarks.md) at a small further cost in precision.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Protocol

_NATIVE_BF16_FLAGS = ("amx_bf16", "avx512_bf16")
BF16_WEIGHTS = "bfloat16-weights"


@cache
def cpu_has_native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU advertises native bf16 arithmetic (AMX or AVX-512 BF16); on others bf16 is slower."""
    try:
        flags = cpuinfo.read_text(errors="replace")
    except OSError:
        return False
    words = set(flags.split())
    return any(flag in words for flag in _NATIVE_BF16_FLAGS)


def resolve_precision(setting: str, device: str = "cpu") -> str:
    """Turn the ``dense_precision`` setting into ``float32``, ``bfloat16`` or ``bfloat16-weights`` for ``device``.

    ``auto`` on a CPU with native bf16 casts the weights: SciFact nDCG@10 0.6913 dense / 0.7363 hybrid against
    0.6926 / 0.7364 in float32 and 0.6912 / 0.7364 with autocast (docs/benchmarks.md), at about 1.6x the speed
    of autocast.
    """
    if setting != "auto":
        return setting
    if device.startswith("cuda"):
        return "bfloat16"
    return BF16_WEIGHTS if device == "cpu" and cpu_has_native_bf16() else "float32"


class _Identified(Protocol):
    @property
    def fingerprint(self) -> str: ...

    @property
    def precision(self) -> str: ...


class PrecisionCacheKey:
    """Base of the dense encoders whose embedding-cache key is their fingerprint plus their ``precision``."""

    @property
    def cache_key(self: _Identified) -> str:
        """Fingerprint plus precision: vectors of another precision (``bfloat16``, ``remote``) never share entries."""
        return f"{self.fingerprint}|{self.precision}"
