"""Issue 11, lock discipline: one owner process for the embedded index, checked before anything is written.

Real processes on one data dir (SQLite + Qdrant Edge, default settings): `ragindex serve` holds the index,
so `ragindex ingest` and `ragindex repair` exit 4 naming the serve process and write nothing to the truth
store; two `ragindex ingest` at once: the second fails fast naming the first, which finishes unaffected.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest

from claimkit import counts, end, indexing, outcome, run, sqlite_url, start, stopped, wait_for, write_corpus

pytestmark = pytest.mark.integration


def owner_record(data: Path) -> dict[str, object]:
    """The index's owner.json (empty while nobody holds the lock)."""
    try:
        record = json.loads((data / "index" / "owner.json").read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_command_refused_by_the_running_service_writes_nothing(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn", reason="the HTTP service needs its extra: pip install 'ragindex[service]'")
    corpus = write_corpus(tmp_path / "corpus", 3)
    data = tmp_path / "data"
    url = sqlite_url(data)
    log = tmp_path / "serve.log"
    serve = start(data, log, "serve", "--port", str(free_port()), "--log-level", "warning", warm_up="false")
    try:
        record = wait_for("the service to hold the index", lambda: owner_record(data), serve)
        assert record["pid"] == serve.pid and "serve" in str(record["command"])
        before = counts(url)
        for args in (["ingest", str(corpus)], ["repair", "--json"], ["delete", "--doc-id", "1"]):
            refused = run(data, *args)
            assert refused.returncode == 4, outcome(refused)
            assert f"process {serve.pid}" in refused.stderr and "ragindex serve" in refused.stderr, refused.stderr
            assert "nothing was written" in refused.stderr
            assert counts(url) == before, f"`{' '.join(args)}` wrote to the truth store although refused"
        assert owner_record(data)["pid"] == serve.pid, "the refused commands overwrote the owner record"
        assert serve.poll() is None
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(60)
        finally:
            end(serve)
    assert owner_record(data) == {}, "the service left its owner record behind"


def test_two_ingests_the_second_fails_fast_naming_the_first(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus", 12)
    data = tmp_path / "data"
    url = sqlite_url(data)
    log = tmp_path / "first.log"
    # the first freezes (SIGSTOP) holding its claims and the index: a 12-file ingest on the light encoder is over
    # in about a second, and a second ingest that found everything indexed would rightly have nothing to do
    first = start(data, log, "ingest", str(corpus), "--json", failpoints="dense.after_encode=stop")
    try:
        wait_for("the first ingest to stop holding its claims", lambda: stopped(first.pid) and indexing(url), first)
        second = run(data, "ingest", str(corpus), "--json")
        assert second.returncode == 4, outcome(second)
        assert f"process {first.pid}" in second.stderr and "ragindex ingest" in second.stderr, second.stderr
        while first.poll() is None:  # the failpoint stops it again at each batch: resume it each time
            if stopped(first.pid):
                first.send_signal(signal.SIGCONT)
            time.sleep(0.05)
        assert first.wait(600) == 0, outcome(first, log)
    finally:
        end(first)
    report = json.loads(log.read_text().strip().splitlines()[-1])
    assert report["documents"]["added"] == 12 and report["chunks"]["failed"] == 0
    verify = run(data, "verify", "--json")
    assert verify.returncode == 0, outcome(verify)
    assert not (data / "index" / "owner.json").exists()
    assert os.path.exists(data / "index" / "owner.lock")  # the lock file stays; only its flock comes and goes
