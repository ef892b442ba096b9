"""The score-drift watch (seed 000 section 9.7): top-1 and top-10 score distributions per source and model.

A model that changes under the same name (a provider updating weights, a re-exported checkpoint), or a corpus that
drifts away from its queries, raises no error: scores move. The watch makes that visible. Each search hands the
scores of every source it ran (``dense``, ``bm25``, ``sparse``, the ``fused`` list of a hybrid search, ``rerank``) to
:meth:`ScoreWatch.observe`, which adds its best score (top-1) and its first ten (top-10) to histograms held in memory
per (source, fingerprint) (:class:`~ragindex.sketch.ScoreSketch`: fixed bins, so their memory is bounded).

The search path stays read-only: a search only touches memory. A background thread (``ragindex-drift``) saves the
held histograms into the truth store every ``drift_flush_seconds``, or as soon as a window's worth of searches is held,
and :meth:`ScoreWatch.close` saves the rest (``Engine.close``: a one-shot ``ragindex search`` adds its search then).
The truth store adds them into windows of ``drift_window_queries`` searches across every process; when a window closes,
its median top-1 score is compared with the reference window's (the first window closed for its source and
fingerprint), and a shift beyond ``drift_max_shift`` logs a warning naming the source and fingerprint. A save that
fails (a read-only store, a database outage) keeps the histograms in memory for the next try and never fails a search.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragindex.config.sections import DriftSettings
from ragindex.errors import RagindexError
from ragindex.sketch import ScoreSketch
from ragindex.store.protocol import ScoreStatsStore
from ragindex.store.records import ScoreBatch, ScoreWindow
from ragindex.store.states import WindowState

__all__ = ["TOP_N", "ScoreWatch", "relative_shift", "score_report"]

log = logging.getLogger(__name__)

TOP_N = 10
"""The scores of a list counted in its top-10 histogram."""


@dataclass
class _Held:
    queries: int = 0
    top1: ScoreSketch = field(default_factory=ScoreSketch)
    top10: ScoreSketch = field(default_factory=ScoreSketch)

    def merge(self, other: _Held) -> None:
        self.queries += other.queries
        self.top1.merge(other.top1)
        self.top10.merge(other.top10)


def relative_shift(value: float | None, reference: float | None) -> float | None:
    """``(value - reference) / |reference|``; None when either is missing or the reference is 0."""
    if value is None or reference is None or reference == 0:
        return None
    return (value - reference) / abs(reference)


class ScoreWatch:
    """Score histograms of searches, held in memory per (source, fingerprint) and saved by a background thread.

    Args:
        store: Where windows are kept (the truth store).
        settings: Window size, shift threshold, save interval, windows kept.
    """

    def __init__(self, store: ScoreStatsStore, settings: DriftSettings) -> None:
        self.store = store
        self.settings = settings
        self._held: dict[tuple[str, str], _Held] = {}
        self._lock = threading.Lock()  # guards _held and _thread: searches of many threads observe at once
        self._flush_lock = threading.Lock()  # one save at a time (the thread, close)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    def observe(self, source: str, fingerprint: str, scores: Sequence[float]) -> None:
        """Count one search's ranked ``scores`` of ``source`` (best first; an empty list counts nothing).

        Memory only: a few dict updates under a lock, never a store call (the search path does not write).
        """
        if not scores:
            return
        with self._lock:
            held = self._held.get((source, fingerprint))
            if held is None:
                held = self._held[(source, fingerprint)] = _Held()
            held.queries += 1
            held.top1.add(scores[0])
            held.top10.extend(scores[:TOP_N])
            full = held.queries >= self.settings.drift_window_queries
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="ragindex-drift", daemon=True)
                self._thread.start()
        if full:
            self._wake.set()

    def held_queries(self) -> dict[tuple[str, str], int]:
        """Searches counted in memory and not saved yet, per (source, fingerprint)."""
        with self._lock:
            return {key: held.queries for key, held in self._held.items()}

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.settings.drift_flush_seconds)
            self._wake.clear()
            if not self._stop.is_set():
                self.flush()

    def flush(self) -> list[ScoreWindow]:
        """Save the held histograms; return the windows that closed (each one checked against its reference).

        Never raises a :class:`~ragindex.errors.RagindexError`: a failed save is logged and its histograms are
        held again for the next one.
        """
        with self._flush_lock:
            with self._lock:
                held, self._held = self._held, {}
            if not held:
                return []
            closed: list[ScoreWindow] = []
            keys = list(held)
            for done, (source, fingerprint) in enumerate(keys):
                h = held[(source, fingerprint)]
                batch = ScoreBatch(source, fingerprint, queries=h.queries, top1=h.top1, top10=h.top10)
                try:
                    closed += self.store.record_scores(
                        [batch],
                        window_queries=self.settings.drift_window_queries,
                        keep_windows=self.settings.drift_keep_windows,
                    )
                except RagindexError as exc:
                    self._hold_again({key: held[key] for key in keys[done:]})
                    (log.debug if self._failing else log.warning)(
                        "search scores were not saved (kept for the next try): %s", exc
                    )
                    self._failing = True
                    break
            else:
                self._failing = False
            for window in closed:
                self._check(window)
            return closed

    def _hold_again(self, held: dict[tuple[str, str], _Held]) -> None:
        with self._lock:
            for key, old in held.items():
                newer = self._held.get(key)
                if newer is not None:
                    old.merge(newer)
                self._held[key] = old

    def _check(self, window: ScoreWindow) -> None:
        """Warn when a closed window's median top-1 score moved beyond ``drift_max_shift`` of the reference's."""
        if window.is_reference:
            log.info(
                "score drift: window %d of %s (%s) is the reference: median top-1 score %.4g over %d searches",
                window.window_no,
                window.source,
                window.fingerprint,
                window.top1.quantile(0.5) or 0.0,
                window.queries,
            )
            return
        try:
            stored = self.store.score_windows(source=window.source, fingerprint=window.fingerprint)
        except RagindexError as exc:
            log.warning("score drift: the reference window could not be read: %s", exc)
            return
        reference = next((w for w in stored if w.is_reference), None)
        if reference is None:
            return
        median, ref_median = window.top1.quantile(0.5), reference.top1.quantile(0.5)
        shift = relative_shift(median, ref_median)
        if shift is not None and abs(shift) > self.settings.drift_max_shift:
            log.warning(
                "score drift: %s (%s): the median top-1 score of the last %d searches is %.4g, %+.0f%% against %.4g "
                "in the reference window (more than the %.0f%% of RAGINDEX_DRIFT_MAX_SHIFT); a model that changed "
                "under the same name or a corpus that moved away from its queries. Check with `ragindex eval "
                "--reference FILE`; `ragindex status --scores --reset` makes the next window the reference",
                window.source,
                window.fingerprint,
                window.queries,
                median,
                shift * 100,
                ref_median,
                self.settings.drift_max_shift * 100,
            )

    def close(self) -> None:
        """Stop the background thread and save what is held (a failure is logged, never raised)."""
        with self._lock:
            self._stop.set()
            thread, self._thread = self._thread, None
        self._wake.set()
        if thread is not None:
            thread.join(timeout=30)
        self.flush()


def score_report(windows: Sequence[ScoreWindow], max_shift: float) -> list[dict[str, Any]]:
    """Per (source, fingerprint): the current window, the last closed one, the reference and the shift.

    ``shift`` is the relative change of the last closed window's median top-1 score against the reference window's
    (None until a second window closed); ``drift`` says whether it is beyond ``max_shift``.
    """
    keys: dict[tuple[str, str], list[ScoreWindow]] = {}
    for window in windows:
        keys.setdefault((window.source, window.fingerprint), []).append(window)
    out: list[dict[str, Any]] = []
    for (source, fingerprint), rows in sorted(keys.items()):
        rows.sort(key=lambda w: w.window_no)
        reference = next((w for w in rows if w.is_reference), None)
        closed = [w for w in rows if w.state == WindowState.CLOSED and not w.is_reference]
        last = closed[-1] if closed else None
        shift = None
        if last is not None and reference is not None:
            shift = relative_shift(last.top1.quantile(0.5), reference.top1.quantile(0.5))
        out.append(
            {
                "source": source,
                "fingerprint": fingerprint,
                "current": _window_dict(rows[-1]),
                "last_closed": _window_dict(last) if last is not None else None,
                "reference": _window_dict(reference) if reference is not None else None,
                "shift": round(shift, 4) if shift is not None else None,
                "drift": shift is not None and abs(shift) > max_shift,
            }
        )
    return out


def _window_dict(window: ScoreWindow) -> dict[str, Any]:
    def stats(sketch: ScoreSketch) -> dict[str, float | None]:
        values = {name: sketch.quantile(q) for name, q in (("p10", 0.1), ("p50", 0.5), ("p90", 0.9))}
        values["mean"] = sketch.mean
        return {k: round(v, 6) if v is not None else None for k, v in values.items()}

    return {
        "window": window.window_no,
        "state": window.state,
        "queries": window.queries,
        "top1": stats(window.top1),
        "top10": stats(window.top10),
        "started_at": window.started_at.isoformat(timespec="seconds"),
        "closed_at": window.closed_at.isoformat(timespec="seconds") if window.closed_at else None,
    }
