"""Helpers of the claim, lease and lock tests: a generated corpus, the real CLI as a subprocess, polls of the store.

The subprocesses run the installed ``ragindex`` command with a clean environment: the default settings
plus only what a test passes (the data dir, a database URL, a failpoint, a shortened lease where the
test says so). Waiting is always for a condition, with a generous deadline that only stops a hung test.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

CLI = str(Path(sys.executable).with_name("ragindex"))
DEADLINE_S = 300.0  # only a hung process gets this far

_WORDS = (
    ("river", "mountain", "glacier", "basalt", "quartz", "enzyme", "protein", "market", "ledger", "harbor")
    + ("comet", "orbit", "nebula", "violin", "sonata", "bridge", "tunnel", "engine", "turbine", "algae")
    + ("coral", "reef", "desert", "canyon", "forest", "meadow", "falcon", "otter", "beaver", "lantern")
)


def write_corpus(folder: Path, documents: int, paragraphs: int = 3, seed: int = 11) -> Path:
    """``documents`` text files of ``paragraphs`` paragraphs of made-up sentences (a few chunks each)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for d in range(documents):
        paras = [
            " ".join(
                " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 16))).capitalize() + "." for _ in range(8)
            )
            for _ in range(paragraphs)
        ]
        (folder / f"doc{d:03d}.txt").write_text(f"Document {d}\n\n" + "\n\n".join(paras), encoding="utf-8")
    return folder


def env(data_dir: Path, **settings: str) -> dict[str, str]:
    """The environment of a ragindex subprocess: no RAGINDEX_* but the data dir and ``settings`` (NAME=value)."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("RAGINDEX_")}
    out.update(RAGINDEX_DATA_DIR=str(data_dir), OPENBLAS_NUM_THREADS="1")
    out.update({f"RAGINDEX_{k.upper()}": v for k, v in settings.items()})
    return out


def run(data_dir: Path, *args: str, timeout: float = DEADLINE_S, **settings: str) -> subprocess.CompletedProcess[str]:
    """Run ``ragindex ARGS`` to its end; return the CompletedProcess (text output)."""
    return subprocess.run(
        [CLI, *args], env=env(data_dir, **settings), capture_output=True, text=True, timeout=timeout, check=False
    )


def start(data_dir: Path, log: Path, *args: str, **settings: str) -> subprocess.Popen[bytes]:
    """Start ``ragindex ARGS`` in the background, its output going to ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen([CLI, *args], env=env(data_dir, **settings), stdout=out, stderr=subprocess.STDOUT)


def wait_for(what: str, condition: Callable[[], Any], proc: subprocess.Popen[bytes] | None = None) -> Any:
    """Poll ``condition`` until it returns something truthy; fail if ``proc`` ends first or after the deadline."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        value = condition()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the process ended ({proc.returncode}) before: {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for: {what}")
        time.sleep(0.05)


def query(url: str, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    """Rows of one read-only query on the truth store at ``url`` (a fresh connection each time)."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(sql), params)]
    except Exception:  # the table does not exist yet (the process is still migrating): nothing to see
        return []
    finally:
        engine.dispose()


def sqlite_url(data_dir: Path) -> str:
    """The default truth store of a data dir."""
    return f"sqlite:///{data_dir / 'ragindex.db'}"


def indexing(url: str) -> int:
    """How many chunks have a dense or bm25 copy INDEXING (claimed, being written)."""
    rows = query(url, "SELECT COUNT(*) FROM chunks WHERE dense_status = 'INDEXING' OR bm25_status = 'INDEXING'")
    return int(rows[0][0]) if rows else 0


def counts(url: str) -> tuple[int, int]:
    """(documents, chunks) rows in the truth store."""
    docs = query(url, "SELECT COUNT(*) FROM documents")
    chunks = query(url, "SELECT COUNT(*) FROM chunks")
    return (int(docs[0][0]) if docs else 0, int(chunks[0][0]) if chunks else 0)


def stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped (SIGSTOP): state T in /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] in ("T", "t")


def end(proc: subprocess.Popen[bytes]) -> None:
    """Make sure a background process is gone (after a failed test)."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGCONT)
        proc.kill()
        proc.wait(30)


def outcome(proc: subprocess.CompletedProcess[str] | subprocess.Popen[bytes], log: Path | None = None) -> str:
    """Return code and output tail, for assertion messages."""
    if isinstance(proc, subprocess.CompletedProcess):
        return f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    tail = log.read_text(errors="replace")[-3000:] if log is not None else ""
    return f"exit {proc.returncode}\n{tail}"
