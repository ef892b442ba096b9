"""Pinned reference queries: keep a set of queries with their current top-k hits, re-check them later.

``ragindex eval --reference FILE --pin QUERIES`` searches each query once and writes FILE: the search options (mode,
fusion, rerank, top_k, tenant and set), the dense model's fingerprint and, per query, the ids and scores of its hits.
``ragindex eval --reference FILE`` searches the same queries with the same options and reports, per query and on
average, the overlap@k (the share of the pinned hits found again in the top k) and the score shift (the mean relative
change of the scores of the pinned hits found again); it fails when the overlap is under ``RAGINDEX_DRIFT_MIN_OVERLAP``
or the shift over ``RAGINDEX_DRIFT_MAX_SCORE_SHIFT``. It is the deliberate counterpart of the score-drift watch
(:mod:`ragindex.retrieval.drift`): the same queries before and after a model upgrade, a re-index or a corpus change.

Hits are chunks, searched without grouping or context (``group_by=none``, ``expand=none``), so the ids compare.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragindex.clock import utcnow
from ragindex.errors import InputError, ValidationError
from ragindex.types import SearchMode

if TYPE_CHECKING:
    from ragindex.engine import Engine

__all__ = ["FORMAT", "PinnedHit", "PinnedQuery", "QueryCheck", "RecheckReport", "ReferenceSet", "pin", "recheck"]

FORMAT = "ragindex-reference/1"
"""The ``format`` of a reference file."""


@dataclass(frozen=True, slots=True)
class PinnedHit:
    """One hit of a pinned query: its chunk, document and score when pinned."""

    chunk_id: str
    doc_id: int
    score: float


@dataclass(frozen=True, slots=True)
class PinnedQuery:
    """A query and its top-k hits when pinned."""

    query: str
    hits: tuple[PinnedHit, ...]


@dataclass(frozen=True, slots=True)
class ReferenceSet:
    """The content of a reference file: search options, the dense fingerprint, the pinned queries."""

    mode: str
    fusion: str
    rerank: bool
    top_k: int
    user_id: int
    set_id: int
    fingerprint: str
    created_at: str
    queries: tuple[PinnedQuery, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written to the file."""
        return {"format": FORMAT, **asdict(self)}

    @classmethod
    def from_dict(cls, data: Any, *, path: str = "") -> ReferenceSet:
        """A reference set from :meth:`to_dict`'s form; InputError naming the file when it is not one."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise InputError(f"{path or 'the file'} is not a ragindex reference file (format {FORMAT})", path=path)
        try:
            queries = tuple(PinnedQuery(str(q["query"]), tuple(_hit(h) for h in q["hits"])) for q in data["queries"])
            return cls(
                mode=str(data["mode"]),
                fusion=str(data["fusion"]),
                rerank=bool(data["rerank"]),
                top_k=int(data["top_k"]),
                user_id=int(data["user_id"]),
                set_id=int(data["set_id"]),
                fingerprint=str(data["fingerprint"]),
                created_at=str(data["created_at"]),
                queries=queries,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{path or 'the reference file'} is damaged: {exc!r}", path=path) from exc

    def save(self, path: str | Path) -> None:
        """Write the set as JSON (replacing the file at once: a crash never leaves half a file)."""
        target = Path(path)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        tmp.replace(target)

    @classmethod
    def load(cls, path: str | Path) -> ReferenceSet:
        """Read a reference file; InputError naming it when it is missing, unreadable or not one."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read the reference file {path}: {exc}", path=str(path)) from exc
        return cls.from_dict(data, path=str(path))


def _hit(data: dict[str, Any]) -> PinnedHit:
    return PinnedHit(str(data["chunk_id"]), int(data["doc_id"]), float(data["score"]))


@dataclass(frozen=True, slots=True)
class QueryCheck:
    """One re-checked query: ``overlap`` = pinned hits found again / pinned hits (1.0 when both are empty).

    ``score_shift``: mean of ``|now - pinned| / |pinned|`` over the hits found again (None when none is).
    """

    query: str
    overlap: float
    score_shift: float | None
    pinned: int
    found: int


@dataclass(frozen=True, slots=True)
class RecheckReport:
    """The re-check of a reference set against the limits it was checked with."""

    queries: tuple[QueryCheck, ...]
    overlap: float
    score_shift: float
    max_score_shift: float
    fingerprint_pinned: str
    fingerprint_now: str
    min_overlap: float
    allowed_shift: float

    @property
    def ok(self) -> bool:
        """Whether the mean overlap and the mean score shift are within the limits."""
        return self.overlap >= self.min_overlap and self.score_shift <= self.allowed_shift

    def to_dict(self) -> dict[str, Any]:
        """``ragindex eval --reference FILE --json``."""
        return {
            "ok": self.ok,
            "overlap": round(self.overlap, 4),
            "score_shift": round(self.score_shift, 4),
            "max_score_shift": round(self.max_score_shift, 4),
            "min_overlap": self.min_overlap,
            "allowed_shift": self.allowed_shift,
            "fingerprint": {"pinned": self.fingerprint_pinned, "now": self.fingerprint_now},
            "queries": [asdict(q) for q in self.queries],
        }


def read_queries(path: str | Path) -> list[str]:
    """Queries from a file: JSON lines with a ``text`` (BEIR) or ``query`` field (``.jsonl``), else one a line.

    Raises:
        InputError: The file cannot be read, a JSON line has neither field, or there is no query.
    """
    file = Path(path)
    try:
        lines = [line.strip() for line in file.read_text(encoding="utf-8").splitlines()]
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the queries file {file}: {exc}", path=str(file)) from exc
    queries: list[str] = []
    for number, line in enumerate(lines, 1):
        if not line:
            continue
        if file.suffix != ".jsonl":
            queries.append(line)
            continue
        try:
            row = json.loads(line)
            queries.append(str(row["text"] if "text" in row else row["query"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(
                f"{file}:{number}: a JSON line needs a `text` or `query` field ({exc!r})", path=str(file)
            ) from exc
    if not queries:
        raise InputError(f"{file} holds no query", path=str(file))
    return list(dict.fromkeys(queries))


_OPTIONS = ("mode", "fusion", "rerank", "top_k", "user_id", "set_id")


def _search(engine: Engine, query: str, options: dict[str, Any]) -> list[PinnedHit]:
    result = engine.search(
        query,
        user_id=options["user_id"],
        set_id=options["set_id"],
        mode=options["mode"],
        top_k=options["top_k"],
        fusion=options["fusion"],
        rerank=options["rerank"],
        expand="none",
        group_by="none",
    )
    return [PinnedHit(h.chunk_id, h.doc_id, h.score) for h in result.hits]


def _fingerprint(engine: Engine, mode: str) -> str:
    """The dense model's fingerprint (``-`` for a mode without dense: the model is then not loaded)."""
    return engine.dense.fingerprint if mode in (SearchMode.DENSE, SearchMode.HYBRID) else "-"


def pin(
    engine: Engine,
    queries: Sequence[str],
    *,
    mode: str = "hybrid",
    top_k: int | None = None,
    user_id: int = 1,
    set_id: int = 1,
    fusion: str | None = None,
    rerank: bool | None = None,
) -> ReferenceSet:
    """Search each query once and keep its top-k hits (ids and scores) with the options that found them.

    Defaults (``top_k``, ``fusion``, ``rerank``) are resolved from the engine's settings and recorded, so that a
    re-check under other settings still searches as the pin did.
    """
    if not queries:
        raise ValidationError("queries", "give at least one query to pin")
    settings = engine.settings
    options: dict[str, Any] = {
        "mode": mode,
        "fusion": fusion or settings.fusion,
        "rerank": settings.rerank_enabled if rerank is None else rerank,
        "top_k": settings.default_top_k if top_k is None else top_k,
        "user_id": user_id,
        "set_id": set_id,
    }
    pinned = tuple(PinnedQuery(q, tuple(_search(engine, q, options))) for q in queries)
    return ReferenceSet(
        **options,
        fingerprint=_fingerprint(engine, mode),
        created_at=utcnow().isoformat(timespec="seconds"),
        queries=pinned,
    )


def recheck(
    engine: Engine, reference: ReferenceSet, *, min_overlap: float | None = None, max_score_shift: float | None = None
) -> RecheckReport:
    """Search the pinned queries again as they were pinned; overlap@k and score shift against the pin.

    Limits default to ``RAGINDEX_DRIFT_MIN_OVERLAP`` and ``RAGINDEX_DRIFT_MAX_SCORE_SHIFT``.
    """
    options = {name: getattr(reference, name) for name in _OPTIONS}
    checks = []
    for pinned in reference.queries:
        now = {h.chunk_id: h.score for h in _search(engine, pinned.query, options)}
        found = [h for h in pinned.hits if h.chunk_id in now]
        overlap = len(found) / len(pinned.hits) if pinned.hits else (0.0 if now else 1.0)
        shifts = [abs(now[h.chunk_id] - h.score) / max(abs(h.score), 1e-9) for h in found]
        shift = statistics.fmean(shifts) if shifts else None
        checks.append(QueryCheck(pinned.query, overlap, shift, len(pinned.hits), len(found)))
    shifts = [c.score_shift for c in checks if c.score_shift is not None]
    settings = engine.settings
    return RecheckReport(
        queries=tuple(checks),
        overlap=statistics.fmean(c.overlap for c in checks) if checks else 1.0,
        score_shift=statistics.fmean(shifts) if shifts else 0.0,
        max_score_shift=max(shifts, default=0.0),
        fingerprint_pinned=reference.fingerprint,
        fingerprint_now=_fingerprint(engine, reference.mode),
        min_overlap=settings.drift_min_overlap if min_overlap is None else min_overlap,
        allowed_shift=settings.drift_max_score_shift if max_score_shift is None else max_score_shift,
    )
