"""Truth vs index, bucket by bucket: every ACTIVE+SUCCESS copy present, nothing else present.

And truth vs truth: every section's text is what its chunks make (:func:`~ragindex.pipeline.section_text.drifted`),
so the lexical copies, which index sections, hold the chunks' current text. A drifted section counts as a mismatch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragindex.index.protocol import VectorIndex
from ragindex.pipeline.section_text import drifted_sections
from ragindex.store.protocol import TruthStore
from ragindex.store.states import IndexStatus
from ragindex.types import VectorKind


@dataclass
class BucketReport:
    """Differences found in one bucket."""

    bucket: int
    expected: int = 0
    present: int = 0
    missing: dict[str, list[str]] = field(default_factory=dict)  # kind -> chunk ids marked SUCCESS but absent
    orphans: list[str] = field(default_factory=list)  # points with no ACTIVE truth row
    unfinished: dict[str, int] = field(default_factory=dict)  # kind -> ACTIVE chunks not (yet) SUCCESS
    drifted: list[str] = field(default_factory=list)  # sections whose text is no longer what their chunks make

    @property
    def ok(self) -> bool:
        """No missing copy, no orphan, nothing unfinished, no drifted section."""
        return (
            not any(self.missing.values())
            and not self.orphans
            and not any(self.unfinished.values())
            and not self.drifted
        )


@dataclass
class VerifyReport:
    """Per-bucket differences between the truth store and the index."""

    collection: str | None
    buckets: list[BucketReport]

    @property
    def ok(self) -> bool:
        """True when truth and index agree everywhere."""
        return all(b.ok for b in self.buckets)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (ids truncated to 20 per list)."""
        return {
            "ok": self.ok,
            "collection": self.collection,
            "buckets": [
                {
                    "bucket": b.bucket,
                    "ok": b.ok,
                    "expected_points": b.expected,
                    "index_points": b.present,
                    "missing": {k: v[:20] for k, v in b.missing.items() if v},
                    "missing_count": {k: len(v) for k, v in b.missing.items() if v},
                    "orphans": b.orphans[:20],
                    "orphan_count": len(b.orphans),
                    "unfinished": {k: v for k, v in b.unfinished.items() if v},
                    "drifted_sections": b.drifted[:20],
                    "drifted_count": len(b.drifted),
                }
                for b in self.buckets
            ],
        }


def verify(
    store: TruthStore, index: VectorIndex, collection: str | None, bucket_count: int, sparse_kinds: Sequence[str]
) -> VerifyReport:
    """Compare the truth store with the index (read-only)."""
    if collection is None:
        return VerifyReport(collection=None, buckets=[])
    kinds = (VectorKind.DENSE, *sparse_kinds)
    buckets = sorted(set(store.buckets_in_use()) | {b for b in range(bucket_count) if index.has_bucket(collection, b)})
    drifted = drifted_sections(store)
    reports = []
    for bucket in buckets:
        expected = store.expected_points(bucket)
        present = index.vectors_present(collection, bucket)
        report = BucketReport(bucket=bucket, expected=len(expected), present=len(present))
        for kind in kinds:
            report.missing[kind] = sorted(
                cid
                for cid, statuses in expected.items()
                if statuses.get(kind) == IndexStatus.SUCCESS and kind not in present.get(cid, frozenset())
            )
            report.unfinished[kind] = sum(
                1 for statuses in expected.values() if statuses.get(kind) not in (None, IndexStatus.SUCCESS)
            )
        report.orphans = sorted(cid for cid in present if cid not in expected)
        report.drifted = drifted.get(bucket, [])
        reports.append(report)
    return VerifyReport(collection=collection, buckets=reports)
