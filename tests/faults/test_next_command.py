"""Issue 11, first bullet: after kill -9, Ctrl-C or SIGTERM during `ragindex ingest`, the *next single* command
(`ingest` or `repair`) leaves `ragindex verify` at exit 0, with default settings and without waiting.

The real CLI ingests a generated corpus with the real model (several claim batches), and the test
signals it once the truth store shows claims in flight (chunks INDEXING: mid-embedding). Nothing in
these tests shortens a timeout or a lease: the dead process's claims are released, and its runs closed,
because the next command holds the embedded index lock, which proves their owner gone. After SIGINT or SIGTERM the
process stops at its next safe point and gives its claims back before it exits (130 / 143), so nothing is left
INDEXING at all.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from claimkit import counts, indexing, outcome, query, run, sqlite_url, start, wait_for, write_corpus

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DOCUMENTS = 24  # ~200 chunks with the default chunker: a few embedding batches of 64


def interrupted_ingest(tmp_path: Path, signum: int) -> tuple[Path, Path, str]:
    """Start `ragindex ingest`, send ``signum`` while claims are in flight; return (corpus, data dir, url)."""
    corpus = write_corpus(tmp_path / "corpus", DOCUMENTS)
    data = tmp_path / "data"
    url = sqlite_url(data)
    log = tmp_path / "ingest.log"
    proc = start(data, log, "ingest", str(corpus), "--json")
    try:
        wait_for("chunks INDEXING (mid-embedding)", lambda: indexing(url), proc)
        proc.send_signal(signum)
        proc.wait(120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert proc.returncode != 0, f"the ingest finished before the signal: {outcome(proc, log)}"
    expected = {signal.SIGKILL: -signal.SIGKILL, signal.SIGINT: 130, signal.SIGTERM: 143}[signal.Signals(signum)]
    assert proc.returncode == expected, outcome(proc, log)
    return corpus, data, url


@pytest.mark.parametrize(
    "signum", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM], ids=["sigkill", "sigint", "sigterm"]
)
@pytest.mark.parametrize("next_command", ["ingest", "repair"])
def test_the_next_command_converges_without_waiting(tmp_path: Path, signum: int, next_command: str) -> None:
    corpus, data, url = interrupted_ingest(tmp_path, signum)
    if signum in (signal.SIGINT, signal.SIGTERM):
        # a clean stop: the process gave back what it had claimed, and its owner row, before it exited
        assert indexing(url) == 0
        assert query(url, "SELECT COUNT(*) FROM claim_owners") == [(0,)]
    else:
        assert indexing(url) > 0, "the killed process left claims behind (the case this test is about)"
    verify = run(data, "verify", "--json")
    assert verify.returncode == 1, f"verify saw nothing unfinished after the interruption: {outcome(verify)}"

    args = ["ingest", str(corpus), "--json"] if next_command == "ingest" else ["repair", "--json"]
    done = run(data, *args)
    assert done.returncode == 0, outcome(done)
    verify = run(data, "verify", "--json")
    assert verify.returncode == 0, outcome(verify)
    assert indexing(url) == 0
    documents, chunks = counts(url)
    assert documents == DOCUMENTS and chunks > DOCUMENTS
    statuses = query(url, "SELECT DISTINCT dense_status FROM chunks WHERE dense_status IS NOT NULL")
    assert statuses == [("SUCCESS",)]
    # the interrupted process's runs and documents are closed too, not left PROCESSING
    assert query(url, "SELECT COUNT(*) FROM pipeline_runs WHERE status = 'PROCESSING'") == [(0,)]
    assert query(url, "SELECT DISTINCT status FROM documents") == [("SUCCESS",)]
    if next_command == "repair":
        assert '"ok": true' in done.stdout
