"""The score-drift watch's role of the SQL truth store: windows of top-1 / top-10 score histograms.

Every process that searches adds its scores to the OPEN window of each (source, fingerprint); the window closes once
it has counted ``window_queries`` searches, and the next batch opens the next one. The row is locked while a batch is
merged into it (``SELECT ... FOR UPDATE``; on SQLite the write lock, ``BEGIN IMMEDIATE``), so batches of concurrent
processes add up instead of overwriting each other. Two processes opening the same next window collide on its primary
key: the loser merges into the winner's row on its retry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, and_, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from ragindex.clock import utcnow
from ragindex.errors import StoreError
from ragindex.sketch import ScoreSketch
from ragindex.store import schema
from ragindex.store.records import ScoreBatch, ScoreWindow
from ragindex.store.score_windows import merge_batch, stats_key
from ragindex.store.sql.core import SqlCore, given
from ragindex.store.sql.rows import record
from ragindex.store.states import WindowState

S = schema.score_stats.c
_ATTEMPTS = 20  # each collision means another process opened the window: progress, not a livelock


class SqlScoreStats(SqlCore):
    """The score-drift watch's role (:class:`~ragindex.store.protocol.ScoreStatsStore`)."""

    def record_scores(
        self, batches: Sequence[ScoreBatch], *, window_queries: int, keep_windows: int
    ) -> list[ScoreWindow]:
        """Add each batch to the OPEN window of its (source, fingerprint); return the windows this call closed.

        A window closes once it has counted ``window_queries`` searches (a batch is never split, so a window can
        count more). The first window closed for a key becomes its reference; of the other closed windows, the
        last ``keep_windows`` are kept.
        """
        closed: list[ScoreWindow] = []
        for batch in batches:
            if batch.queries < 1:
                continue
            for attempt in range(_ATTEMPTS):
                try:
                    window = self._record_one(batch, window_queries, keep_windows)
                    break
                except StoreError as exc:
                    if not isinstance(exc.__cause__, IntegrityError) or attempt == _ATTEMPTS - 1:
                        raise
            if window is not None:
                closed.append(window)
        return closed

    def _record_one(self, batch: ScoreBatch, window_queries: int, keep_windows: int) -> ScoreWindow | None:
        key = stats_key(batch.source, batch.fingerprint)
        with self._claim_tx() as conn:
            latest = conn.execute(
                select(schema.score_stats)
                .where(S.stats_key == key)
                .order_by(S.window_no.desc())
                .limit(1)
                .with_for_update()
            ).first()
            write = merge_batch(
                batch,
                latest._mapping if latest is not None else None,
                window_queries=window_queries,
                has_reference=lambda: self._has_reference(conn, key),
                now=utcnow(),
            )
            if write.new:
                conn.execute(insert(schema.score_stats).values(write.row))
            else:
                conn.execute(
                    update(schema.score_stats)
                    .where(S.stats_key == key, S.window_no == write.number)
                    .values(write.changes())
                )
            if write.closed is not None:
                conn.execute(
                    delete(schema.score_stats).where(
                        S.stats_key == key,
                        S.state == WindowState.CLOSED,
                        S.is_reference.is_(False),
                        S.window_no <= write.number - keep_windows,
                    )
                )
        return write.closed

    @staticmethod
    def _has_reference(conn: Connection, key: str) -> bool:
        found = conn.execute(
            select(S.window_no).where(and_(S.stats_key == key, S.is_reference.is_(True))).limit(1)
        ).first()
        return found is not None

    def score_windows(self, *, source: str | None = None, fingerprint: str | None = None) -> list[ScoreWindow]:
        """Every stored window (optionally of one source and/or fingerprint), by source, fingerprint and number."""
        query = (
            select(schema.score_stats)
            .where(*given((S.source, source), (S.fingerprint, fingerprint)))
            .order_by(S.source, S.fingerprint, S.window_no)
        )
        with self._tx() as conn:
            return [_window(r._mapping) for r in conn.execute(query)]

    def clear_score_stats(self, *, source: str | None = None, fingerprint: str | None = None) -> int:
        """Forget the windows (optionally of one source and/or fingerprint); the next closed one is the reference."""
        with self._tx() as conn:
            result = conn.execute(
                delete(schema.score_stats).where(*given((S.source, source), (S.fingerprint, fingerprint)))
            )
        return int(result.rowcount or 0)


def _window(m: Mapping[Any, Any]) -> ScoreWindow:
    sketches = {metric: ScoreSketch.from_dict(m[metric]) for metric in ("top1", "top10")}
    return record(ScoreWindow, m, is_reference=bool(m["is_reference"]), **sketches)
