"""Issue 13, point 4: `ragindex watch` end to end, with real file events and real processes.

`watch --serve` syncs a folder and answers searches over HTTP from the same process (it owns the index).
Each change (create, modify, rename, delete) is polled through that search until it is searchable or
gone; the deadline only stops a hung test (the latency bound is measured by ``bench/watch.py``). A file
written in two parts with a pause shorter than the debounce is synced once, whole; a second process gets
the "in use by process N" error; deleting most of the folder at once is refused by the mass-deletion guard;
SIGTERM ends the process with exit 0 and ``ragindex verify`` then finds the index and the truth store equal.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from claimkit import end, outcome, run, start

pytestmark = pytest.mark.integration

DEADLINE_S = 120.0  # per change; only a hung watcher gets this far


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def events(log: Path) -> list[dict[str, Any]]:
    """The JSON lines `watch --json` printed so far (the service's log lines are skipped)."""
    out = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:  # a line being written
                continue
    return out


def until(what: str, condition: Callable[[], Any], proc: Any) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        value = condition()
        if value:
            return value
        if proc.poll() is not None:
            raise AssertionError(f"watch ended ({proc.returncode}) before: {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for: {what}")
        time.sleep(0.05)


def test_watch_serve_syncs_each_change_and_stops_cleanly(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn", reason="watch --serve needs the service extra: pip install 'ragindex[service]'")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "base.md").write_text("# Base\n\nA note about lighthouses and harbours.\n")
    data = tmp_path / "data"
    settings = {"remove_guard_min_documents": "4"}
    created = run(data, "keys", "create", "--user-id", "1", "--json", **settings)
    assert created.returncode == 0, outcome(created)
    key = json.loads(created.stdout)["key"]
    port = free_port()
    log = tmp_path / "watch.log"
    proc = start(
        data, log, "watch", str(folder), "--serve", "--port", str(port), "--log-level", "warning", "--json", **settings
    )
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key}"}, timeout=60)

    def found(word: str) -> set[str]:
        try:
            response = client.post("/v1/search", json={"query": word, "set_id": 1, "mode": "bm25", "top_k": 10})
        except httpx.TransportError:  # the service is still starting
            return {"?"}
        response.raise_for_status()
        return {hit["filename"] for hit in response.json()["hits"]}

    try:
        ready = until("the ready line", lambda: [e for e in events(log) if e["event"] == "ready"], proc)
        assert ready[0]["documents"]["added"] == 1
        until("the service", lambda: found("lighthouses") == {"base.md"}, proc)

        notes = folder / "notes.md"
        notes.write_text("# Notes\n\nThe quokka smiles on Rottnest island.\n")
        until("a created file is searchable", lambda: found("quokka") == {"notes.md"}, proc)

        notes.write_text("# Notes\n\nThe axolotl regrows its limbs.\n")
        until("a modified file is searchable as modified", lambda: found("axolotl") == {"notes.md"}, proc)
        assert found("quokka") == set(), "the old content is gone from search"

        notes.rename(folder / "renamed.md")
        until("a renamed file is found under its new name", lambda: found("axolotl") == {"renamed.md"}, proc)

        (folder / "renamed.md").unlink()
        until("a deleted file is gone from search", lambda: found("axolotl") == set(), proc)

        with (folder / "partial.md").open("w") as out:  # a slow writer: a pause shorter than the 0.3 s debounce
            out.write("# Partial\n\nThe pangolin curls up.\n")
            out.flush()
            time.sleep(0.15)
            out.write("\nThe narwhal dives deep.\n")
        until("a file written in two parts is searchable", lambda: found("narwhal") == {"partial.md"}, proc)
        syncs = [e for e in events(log) if e.get("path", "").endswith("partial.md")]
        assert [e["event"] for e in syncs] == ["added"], f"synced half-written: {syncs}"

        second = run(data, "ingest", str(folder), **settings)
        assert second.returncode == 4, outcome(second)
        assert f"in use by process {proc.pid}" in second.stderr and "watch" in second.stderr, second.stderr

        by_path = {e["path"]: e["event"] for e in events(log) if "path" in e}
        assert by_path[str(folder / "renamed.md")] == "removed"
        moved = [e for e in events(log) if e["event"] == "moved"]
        assert moved and moved[0]["source"] == str(notes) and moved[0]["embedded"] == 0, moved
        assert all(e["latency_ms"] > 0 for e in events(log) if e["event"] != "ready")

        for i in range(4):
            (folder / f"extra{i}.md").write_text(f"# Extra {i}\n\nThe walrus number {i} basks.\n")
        until("four more files", lambda: len(found("walrus")) == 4, proc)
        for name in ("base.md", "partial.md", "extra0.md", "extra1.md", "extra2.md"):
            (folder / name).unlink()  # 5 of 6 documents at once: an unmounted disk looks like this
        refused = until("the guard", lambda: [e for e in events(log) if e["event"] == "refused"], proc)
        assert "refusing to remove 5 of the 6 documents" in refused[0]["error"], refused
        assert len(found("walrus")) == 4 and found("narwhal") == {"partial.md"}, "the guard kept them"
    finally:
        client.close()
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(60)
        finally:
            end(proc)
    assert code == 0, outcome(proc, log)
    verified = run(data, "verify", "--json")
    assert verified.returncode == 0, outcome(verified)


def test_watch_prints_a_line_per_change_and_stops_on_sigint(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    data = tmp_path / "data"
    log = tmp_path / "watch.log"
    proc = start(data, log, "watch", str(folder))
    try:
        until("the ready line", lambda: "watching for changes" in log.read_text(), proc)
        (folder / "a.txt").write_text("Otters hold hands while they sleep.")
        line = until(
            "the change line",
            lambda: [ln for ln in log.read_text().splitlines() if " added a.txt: " in ln],
            proc,
        )
        assert "1 chunks (1 embedded) searchable in " in line[0], line

        def printed(text: str) -> Callable[[], bool]:
            return lambda: text in log.read_text()

        shutil.rmtree(folder)  # the watched folder vanishes: a deletion (one document, under the guard's minimum)
        until("the removal", printed(" removed a.txt: gone from search in "), proc)
        folder.mkdir()  # ... and comes back: watched again
        (folder / "b.txt").write_text("Beavers build dams of branches.")
        until("a file of the folder that came back", printed(" added b.txt: "), proc)
        (folder / "c.txt").write_text("Falcons dive faster than any other bird.")
        until("a file saved after it came back", printed(" added c.txt: "), proc)
        os.kill(proc.pid, signal.SIGINT)
        code = proc.wait(60)
    finally:
        end(proc)
    assert code == 0, outcome(proc, log)
    assert "stopped (SIGINT)" in log.read_text()
    found = run(data, "search", "falcons", "--mode", "bm25", "--json")
    assert [h["filename"] for h in json.loads(found.stdout)["hits"]] == ["c.txt"], outcome(found)
    gone = run(data, "search", "otters", "--mode", "bm25", "--json")
    assert json.loads(gone.stdout)["hits"] == [], outcome(gone)
    assert run(data, "verify").returncode == 0


def test_watch_of_a_missing_path_is_exit_2(tmp_path: Path) -> None:
    missing = run(tmp_path / "data", "watch", str(tmp_path / "nope"))
    assert missing.returncode == 2, outcome(missing)
    assert "path does not exist" in missing.stderr
