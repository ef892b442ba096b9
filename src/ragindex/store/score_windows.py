"""How a batch of search scores changes its key's latest window, free of SQLAlchemy and of any one database.

Every process that searches adds its scores to the OPEN window of each (source, fingerprint); the window closes once
it has counted ``window_queries`` searches, and the next batch opens the next one. :func:`merge_batch` computes the
row a batch leaves behind; the SQL store (:mod:`ragindex.store.sql.scores`, every dialect) and the one-shot search's
SQLite store (:mod:`ragindex.store.sqlite_search`) each read the latest row under their write lock and write this
one, so both keep the same windows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ragindex.sketch import ScoreSketch
from ragindex.store.records import ScoreBatch, ScoreWindow
from ragindex.store.states import WindowState

FINGERPRINT_CHARS = 512
KEY_COLUMNS = ("stats_key", "window_no")
_QUANTILES = {"p10": 0.1, "p50": 0.5, "p90": 0.9}


def stats_key(source: str, fingerprint: str) -> str:
    """The primary key part naming one (source, fingerprint): sha256 of both (fingerprints can be long paths)."""
    return hashlib.sha256(f"{source}\0{fingerprint}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class WindowWrite:
    """The row one batch leaves: ``new`` (insert it) or not (update the latest row), and the window it closed."""

    row: dict[str, Any]  # every column of ``score_stats``; sketches as dicts, timestamps as naive UTC datetimes
    new: bool
    closed: ScoreWindow | None

    @property
    def number(self) -> int:
        """The window's number."""
        return int(self.row["window_no"])

    def changes(self) -> dict[str, Any]:
        """The columns an update of the existing row sets (all but its key)."""
        return {name: value for name, value in self.row.items() if name not in KEY_COLUMNS}


def merge_batch(
    batch: ScoreBatch,
    latest: Mapping[Any, Any] | None,
    *,
    window_queries: int,
    has_reference: Callable[[], bool],
    now: datetime,
) -> WindowWrite:
    """The row ``batch`` leaves for its key, given the key's ``latest`` row (None: no window yet).

    ``latest`` needs ``window_no``, ``state``, ``queries``, ``started_at`` and the ``top1`` / ``top10`` sketches as
    dicts. ``has_reference`` is asked only when the window closes: the first window closed for a key becomes its
    reference.
    """
    top1, top10 = batch.top1.copy(), batch.top10.copy()
    if latest is not None and latest["state"] == WindowState.OPEN:
        number, queries, started = (
            int(latest["window_no"]),
            int(latest["queries"]) + batch.queries,
            latest["started_at"],
        )
        top1.merge(ScoreSketch.from_dict(latest["top1"]))
        top10.merge(ScoreSketch.from_dict(latest["top10"]))
        new = False
    else:
        number, queries, started = (int(latest["window_no"]) + 1 if latest else 1), batch.queries, now
        new = True
    full = queries >= window_queries
    is_reference = full and not has_reference()
    fingerprint = batch.fingerprint[:FINGERPRINT_CHARS]
    row: dict[str, Any] = {
        "stats_key": stats_key(batch.source, batch.fingerprint),
        "window_no": number,
        "source": batch.source,
        "fingerprint": fingerprint,
        "state": WindowState.CLOSED if full else WindowState.OPEN,
        "is_reference": is_reference,
        "queries": queries,
        "top1": top1.to_dict(),
        "top10": top10.to_dict(),
        **_quantile_columns("top1", top1),
        **_quantile_columns("top10", top10),
        "started_at": started,
        "updated_at": now,
        "closed_at": now if full else None,
    }
    closed = None
    if full:
        closed = ScoreWindow(
            source=batch.source,
            fingerprint=fingerprint,
            window_no=number,
            state=WindowState.CLOSED,
            is_reference=is_reference,
            queries=queries,
            top1=top1,
            top10=top10,
            started_at=started,
            updated_at=now,
            closed_at=now,
        )
    return WindowWrite(row=row, new=new, closed=closed)


def _quantile_columns(metric: str, sketch: ScoreSketch) -> dict[str, float | None]:
    return {f"{metric}_{name}": sketch.quantile(q) for name, q in _QUANTILES.items()}
