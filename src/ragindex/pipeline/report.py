"""The report of an ingest: counts per outcome, every failure with its file and error, each file's outcome."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

OUTCOMES = ("added", "changed", "rechunked", "retried", "unchanged", "removed", "failed", "skipped")
"""The keys of :attr:`IngestReport.documents`; each document of a run is counted under one of them."""


@dataclass
class IngestReport:
    """What an ingest did; ``chunks.embedded`` counts vectors the encoder actually computed.

    ``documents.retried`` counts documents that had FAILED before and succeeded now; ``documents.failed``
    counts the documents (or unreadable files) of ``failures``, one entry each:
    ``{"path", "source", "stage", "error", "doc_id"}`` (``stage`` is LOADING, CHUNKING, DENSE, BM25 or SPARSE).
    ``files`` (``per_file`` ingests, e.g. upload jobs) gives each file's outcome:
    ``{"path", "filename", "status", "documents", "error"}`` with status succeeded, unchanged, skipped or failed.
    """

    documents: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    chunks: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("total", "sections", "embedded", "reused", "removed", "failed"), 0)
    )
    failures: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    duration_ms: float = 0.0
    stage_ms: dict[str, float] = field(default_factory=dict)
    files: list[dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON printed by ``ragindex ingest --json``: every field, in order, times rounded to 0.1 ms."""
        out = {
            **asdict(self),
            "duration_ms": round(self.duration_ms, 1),
            "stage_ms": {k: round(v, 1) for k, v in self.stage_ms.items()},
        }
        if self.files is None:
            del out["files"]
        return out


def file_outcomes(per_file: dict[str, dict[str, int]], failures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each file's outcome: failed (with its first error), unchanged, skipped or succeeded."""
    errors: dict[str, str] = {}
    for failure in failures:
        errors.setdefault(failure["path"], failure["error"])
    out = []
    for uri, counts in per_file.items():
        documents = {k: n for k, n in counts.items() if n}
        if uri in errors or documents.get("failed"):
            status = "failed"
        elif set(documents) <= {"unchanged"}:
            status = "unchanged"
        elif set(documents) <= {"skipped"}:
            status = "skipped"
        else:
            status = "succeeded"
        out.append(
            {
                "path": uri,
                "filename": Path(uri).name,
                "status": status,
                "documents": documents,
                "error": errors.get(uri),
            }
        )
    return out
