"""Does the int8 query graph agree with the float32 one? Measured once per model on fixed probe queries.

Dynamic int8 quantization keeps all-MiniLM-L6-v2's query vectors at a cosine of ~0.99 to float32's (nDCG@10
within -0.002..+0.004 on four collections, docs/explanation/light-encoder.md), but nothing promises that for every
model: per-tensor scales on the same model gave a mean of 0.959, and other architectures quantize differently.
So ``RAGINDEX_QUERY_PRECISION=auto`` uses an int8 copy only after it has encoded :data:`PROBE_QUERIES` close
enough to the float32 graph. The figures are kept beside the copy (``model.int8.check.json``), so the check runs
once per model and cache, not once per process; the verdict is taken from the figures at read time, so a changed
threshold needs no new measurement.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ragindex.encoders.dense.onnx import OnnxDenseEncoder

log = logging.getLogger(__name__)

MIN_MEAN_COSINE = 0.98
"""Mean cosine an int8 copy must keep. all-MiniLM-L6-v2 per-channel: ~0.990-0.993 (SciFact queries, the tests'
texts); the per-tensor copy that was rejected for its vectors: 0.959."""

MIN_COSINE = 0.90
"""Lowest cosine of any probe: a floor against a copy that breaks some inputs outright (MiniLM's lowest: ~0.96,
a one-word text)."""

CHECK_VERSION = 2
"""Bump when :data:`PROBE_QUERIES` or the measurement changes: older figures are then measured again (2: the int8
graph encodes one query a call)."""

PROBE_QUERIES: tuple[str, ...] = (
    "TCP",
    "slow start",
    "vitamin D deficiency",
    "python list comprehension",
    "how do I rotate an API key",
    "what causes the seasons on Earth",
    "why does my docker container exit immediately",
    "side effects of long-term aspirin use",
    "difference between a process and a thread",
    "who invented the printing press with movable type",
    "honeybee colony collapse causes",
    "error: could not find a version that satisfies the requirement",
    "SELECT count(*) FROM orders WHERE status = 'open'",
    "2024 annual report revenue by region",
    "Mutations in BRCA1 increase the risk of breast cancer.",
    "Regular exercise reduces all-cause mortality in older adults.",
    "The court held that the contract was void for lack of consideration.",
    "Compare the memory footprint of int8 and float32 models on small CPUs.",
    "How can a small team keep a search index consistent when documents change every hour?",
    "Insulin resistance in skeletal muscle precedes the onset of type 2 diabetes in most patients.",
    "A step-by-step guide to configuring TLS certificates for an nginx reverse proxy behind a load balancer.",
    "get file status",
    "elegant and simple HTTP library for Python, built for human beings",
    "Wie funktioniert die Mülltrennung in Deutschland?",
    "Quelle est la capitale de l'Australie ?",
    "数据治理的主要目标是什么",
    "如何配置防火墙规则",
    "ÉCOLE naïve café",
    "v2.3.1 release notes",
    "1,000 records per second",
    "what is the default timeout",
    "retrieval augmented generation with hybrid search and reranking",
)
"""Query-like texts of many kinds (keywords, questions, claims, code, numbers, other languages and scripts)."""


@dataclass(frozen=True)
class Int8Agreement:
    """How close the int8 query graph's vectors are to the float32 graph's on :data:`PROBE_QUERIES`."""

    mean_cosine: float
    min_cosine: float
    texts: int
    version: int = CHECK_VERSION

    @property
    def accepted(self) -> bool:
        """Close enough for ``auto`` to encode queries with the int8 copy."""
        return self.mean_cosine >= MIN_MEAN_COSINE and self.min_cosine >= MIN_COSINE

    def describe(self) -> str:
        """The figures in words, for logs."""
        return f"mean cosine {self.mean_cosine:.4f}, lowest {self.min_cosine:.4f} over {self.texts} probe queries"


def measure_agreement(encoder: OnnxDenseEncoder) -> Int8Agreement:
    """Encode the probes with ``encoder``'s query graph and its float32 graph (``model_file``), and compare.

    The query prompt is applied to both, as it is to real queries.
    """
    texts = list(PROBE_QUERIES)
    quantized = encoder.encode_queries(texts)
    exact = encoder.encode_queries_with(encoder.model_file, texts)
    cosines = np.sum(quantized * exact, axis=1)
    return Int8Agreement(float(cosines.mean()), float(cosines.min()), len(texts))


def check_file(int8_file: Path) -> Path:
    """Where the figures of ``int8_file`` are kept."""
    return int8_file.with_name(int8_file.name.removesuffix(".onnx") + ".check.json")


def read_agreement(int8_file: Path) -> Int8Agreement | None:
    """The figures measured for this very file, or None (none kept, another file, another check version)."""
    try:
        kept = json.loads(check_file(int8_file).read_text(encoding="utf-8"))
        if kept.get("version") != CHECK_VERSION or kept.get("int8_bytes") != int8_file.stat().st_size:
            return None
        return Int8Agreement(float(kept["mean_cosine"]), float(kept["min_cosine"]), int(kept["texts"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def keep_agreement(int8_file: Path, agreement: Int8Agreement) -> None:
    """Write the figures beside ``int8_file`` (atomically); a read-only cache only means measuring again later."""
    target = check_file(int8_file)
    payload = {**asdict(agreement), "int8_bytes": int8_file.stat().st_size}
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".write-", suffix=".json.tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(payload, out)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        log.debug("cannot keep the int8 check's figures at %s: %s", target, exc)
