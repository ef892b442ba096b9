"""The score-drift watch and the read-only search path on the real engine (SQLite, Qdrant Edge, the shipped model)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event
from typer.testing import CliRunner

from ragindex.cli import commands  # noqa: F401 - registers the commands
from ragindex.cli import eval as _eval  # noqa: F401 - registers eval
from ragindex.cli.app import app
from ragindex.engine import Engine
from ragindex.errors import StoreError
from ragindex.store.records import IndexMeta

pytestmark = pytest.mark.integration

# corpus (tests/conftest.py): bees, photosynthesis, TCP: one chunk each
ON_TOPIC = ("queen of the honeybee colony", "light water and carbon dioxide into sugar", "TCP slow start window")
OFF_TOPIC = ("medieval castle architecture", "jazz saxophone improvisation", "the rules of cricket")
MODEL = "st:sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture
def engine_settings() -> dict[str, Any]:
    # windows of 3 searches; the background thread would save only after an hour: the tests flush
    return {"drift_window_queries": 3, "drift_flush_seconds": 3600}


@contextmanager
def statements(engine: Engine) -> Iterator[list[tuple[str, str]]]:
    """(thread name, statement) of every SQL statement the engine's truth store runs meanwhile (BEGIN IMMEDIATE too)."""
    seen: list[tuple[str, str]] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append((threading.current_thread().name, " ".join(statement.split())))

    event.listen(engine.store.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine.store.engine, "before_cursor_execute", record)


def writes(seen: list[tuple[str, str]], thread: str | None = None) -> list[str]:
    """The statements of ``seen`` (of one thread) that are not reads."""
    return [s for t, s in seen if thread in (None, t) and not s.upper().startswith(("SELECT", "PRAGMA"))]


def search_everything(engine: Engine) -> None:
    """Searches of every mode and shape: each must find something (the corpus is indexed)."""
    for mode in ("dense", "bm25", "hybrid"):
        for query in ON_TOPIC:
            assert engine.search(query, user_id=1, set_id=1, mode=mode).hits, (mode, query)
    assert engine.search(ON_TOPIC[0], user_id=1, set_id=1, expand="neighbours", group_by="document").hits
    assert engine.search(ON_TOPIC[0], user_id=1, set_id=1, doc_ids=[1, 2, 3], score_threshold=0.0).hits
    assert engine.search("   ", user_id=1, set_id=1).hits == ()
    assert engine.search(ON_TOPIC[0], user_id=1, set_id=2).hits == ()  # a set with nothing in it


def test_the_search_path_never_writes(engine: Engine) -> None:
    searcher = threading.current_thread().name
    with statements(engine) as seen:
        search_everything(engine)
    assert any(t == searcher for t, _ in seen), "the listener saw the searches' reads"
    assert writes(seen, searcher) == []
    # windows of 3 searches filled up: the watch's own thread saved them meanwhile, and wrote nothing else
    others = {t for t, s in seen if s in writes(seen) and t != searcher}
    assert others <= {"ragindex-drift"}
    assert all("score_stats" in s or s == "BEGIN IMMEDIATE" for s in writes(seen))

    assert engine.score_watch is not None
    engine.score_watch.flush()  # nothing held: the next search cannot fill a window and wake the writer
    engine.search(ON_TOPIC[0], user_id=1, set_id=1, mode="dense")
    assert engine.score_watch.held_queries()  # held in memory ...
    with statements(engine) as seen:
        engine.score_watch.flush()  # ... until the watch's writer saves it
    assert any(s.startswith(("INSERT INTO score_stats", "UPDATE score_stats")) for s in writes(seen))


def test_a_read_only_truth_store_still_serves_every_search(
    make_engine: Callable[..., Engine], engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    engine.close()
    with make_engine() as reader:
        reader.store.engine.dispose()  # every connection from now on is read-only
        event.listen(reader.store.engine, "connect", lambda conn, _record: conn.execute("PRAGMA query_only = ON"))
        with pytest.raises(StoreError, match="readonly"):
            reader.store.put_index_meta(IndexMeta("probe", "edge", "RETIRED", "x", None, None, None, None))
        search_everything(reader)
        with caplog.at_level(logging.WARNING, logger="ragindex.retrieval.drift"):
            reader.close()  # the scores cannot be saved: a warning, not a failure
    assert "search scores were not saved" in caplog.text


def test_windows_per_source_and_model_and_a_shift_warns(engine: Engine, caplog: pytest.LogCaptureFixture) -> None:
    watch = engine.score_watch
    assert watch is not None
    for query in ON_TOPIC:
        engine.search(query, user_id=1, set_id=1)  # hybrid: dense, bm25 and the fused list
    watch.flush()  # returns once everything held is saved (by the watch's thread, or here)
    closed = engine.store.score_windows()
    assert {(w.source, w.window_no, w.state, w.is_reference) for w in closed} == {
        ("dense", 1, "CLOSED", True),
        ("bm25", 1, "CLOSED", True),
        ("fused", 1, "CLOSED", True),
    }
    dense = next(w for w in closed if w.source == "dense")
    assert dense.fingerprint == engine.dense.fingerprint == MODEL
    assert dense.queries == 3 and dense.top1.count == 3 and dense.top10.count == 9  # three chunks in the set
    bm25 = next(w for w in closed if w.source == "bm25")
    assert bm25.fingerprint == engine.sparse["bm25"].name
    assert next(w for w in closed if w.source == "fused").fingerprint == "dbsf:dense+bm25"

    with caplog.at_level(logging.WARNING, logger="ragindex.retrieval.drift"):
        for query in OFF_TOPIC:
            engine.search(query, user_id=1, set_id=1, mode="dense")
        watch.flush()
    shifted = engine.store.score_windows(source="dense")[-1]
    assert (shifted.window_no, shifted.state, shifted.is_reference) == (2, "CLOSED", False)
    warning = next(r.getMessage() for r in caplog.records if "score drift" in r.getMessage())
    assert f"dense ({MODEL})" in warning and "RAGINDEX_DRIFT_MAX_SHIFT" in warning

    report = {entry["source"]: entry for entry in engine.score_report()}
    assert set(report) == {"dense", "bm25", "fused"}
    assert report["dense"]["drift"] is True and report["dense"]["shift"] < -0.2
    assert report["dense"]["reference"]["top1"]["p50"] > report["dense"]["last_closed"]["top1"]["p50"]
    assert report["bm25"]["shift"] is None and report["bm25"]["drift"] is False  # one window so far


def test_close_saves_what_is_held_and_another_engine_adds_to_the_window(
    make_engine: Callable[..., Engine], engine: Engine
) -> None:
    engine.search(ON_TOPIC[0], user_id=1, set_id=1, mode="dense")
    engine.close()
    with make_engine() as other:
        assert [(w.source, w.state, w.queries) for w in other.store.score_windows()] == [("dense", "OPEN", 1)]
        other.search(ON_TOPIC[1], user_id=1, set_id=1, mode="dense")
    with make_engine() as third:
        (window,) = third.store.score_windows()
        assert (window.window_no, window.queries) == (1, 2)


def test_the_watch_can_be_turned_off(make_engine: Callable[..., Engine], corpus: Path) -> None:
    with make_engine(drift_enabled=False) as engine:
        engine.ingest([corpus])
        assert engine.score_watch is None
        assert engine.search(ON_TOPIC[0], user_id=1, set_id=1).hits
    with make_engine() as reader:
        assert reader.store.score_windows() == []


def cli(data: Path, *args: str) -> tuple[int, Any]:
    """Exit code and parsed JSON (``--json``), else stdout followed by stderr."""
    result = CliRunner().invoke(app, ["--data-dir", str(data), *args])
    if "--json" in args and result.exit_code in (0, 1):
        return result.exit_code, json.loads(result.stdout)
    return result.exit_code, result.stdout + result.stderr


def test_status_scores_shows_the_windows_and_reset_forgets_them(engine: Engine, tmp_path: Path) -> None:
    for query in ON_TOPIC:
        engine.search(query, user_id=1, set_id=1, mode="dense")
    engine.close()
    data = tmp_path / "d"

    code, report = cli(data, "status", "--scores", "--json")
    assert code == 0
    (dense,) = report["scores"]
    assert (dense["source"], dense["fingerprint"], dense["drift"]) == ("dense", MODEL, False)
    assert dense["reference"]["queries"] == 3 and dense["reference"]["top1"]["p50"] > 0.3

    code, text = cli(data, "status", "--scores")
    assert code == 0 and "search scores" in text and "dense" in text

    code, text = cli(data, "status", "--reset")
    assert code == 2 and "--reset goes with --scores" in text
    code, report = cli(data, "status", "--scores", "--reset", "--json")
    assert code == 0 and report["scores_reset"] == 1 and report["scores"] == []


def test_eval_reference_pins_and_rechecks_queries(engine: Engine, corpus: Path, tmp_path: Path) -> None:
    engine.close()
    data, ref = tmp_path / "d", tmp_path / "ref.json"
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps({"_id": str(i), "text": q}) + "\n" for i, q in enumerate(ON_TOPIC)))

    code, summary = cli(data, "eval", "--reference", str(ref), "--pin", str(queries), "--modes", "bm25", "--json")
    assert code == 0 and summary == {"pinned": 3, "hits": 3, "reference": str(ref), "mode": "bm25"}
    pinned = json.loads(ref.read_text())
    assert pinned["mode"] == "bm25" and pinned["top_k"] == 10 and pinned["fingerprint"] == "-"
    assert [len(q["hits"]) for q in pinned["queries"]] == [1, 1, 1]

    code, report = cli(data, "eval", "--reference", str(ref), "--json")
    assert code == 0 and report["ok"] is True
    assert report["overlap"] == 1.0 and report["score_shift"] == 0.0

    # more documents on the same terms: the pinned hits stay first, their BM25 scores change (IDF, avg length)
    for i in range(4):
        (corpus / f"more{i}.txt").write_text(f"Honeybee notes {i}: the queen, the colony and light and sugar.")
    with Engine(engine.settings) as again:
        again.ingest([corpus])
    code, report = cli(data, "eval", "--reference", str(ref), "--json", "--max-score-shift", "0.001")
    assert code == 1 and report["ok"] is False
    assert report["score_shift"] > 0.001 and report["allowed_shift"] == 0.001

    # the TCP document gone: its query finds none of its pinned hits
    (corpus / "tcp.txt").unlink()
    with Engine(engine.settings) as again:
        again.ingest([corpus])
    code, report = cli(data, "eval", "--reference", str(ref), "--json", "--max-score-shift", "10")
    assert code == 1 and report["overlap"] < 0.8
    tcp = next(q for q in report["queries"] if q["query"] == ON_TOPIC[2])
    assert (tcp["overlap"], tcp["found"], tcp["score_shift"]) == (0.0, 0, None)

    code, text = cli(data, "eval", "--reference", str(ref), "--top-k", "3")
    assert code == 2 and "read from the reference file" in text
    code, text = cli(data, "eval")
    assert code == 2 and "give a BEIR dataset directory, or --reference FILE" in text
