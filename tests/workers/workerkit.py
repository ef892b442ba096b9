"""Helpers of the worker tests: queue names, the webhook receiver, the worker subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Queues:
    """Unique queue names of one test run (their Redis keys are deleted afterwards)."""

    tag: str
    ingest: str
    results: str


@dataclass
class WebhookReceiver:
    """A loopback HTTP server recording the JSON bodies POSTed to it."""

    url: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class WorkerProcess:
    """``ragindex worker`` as a subprocess (its output goes to a log file shown on failure)."""

    def __init__(self, env: dict[str, str], log: Path, *args: str) -> None:
        self.log = log
        self._out = log.open("wb")
        command = [sys.executable, "-c", "from ragindex.cli import main; main()", "worker", *args]
        self.proc = subprocess.Popen(command, env=env, stdout=self._out, stderr=subprocess.STDOUT)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def stop(self, timeout: float = 60.0) -> int:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(f"the worker ignored SIGTERM for {timeout} s:\n{self.output()}") from None
        finally:
            self._out.close()


def worker_env(**values: str) -> dict[str, str]:
    """The test process's environment without RAGINDEX_* settings, plus ``values``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGINDEX_")}
    env.update(values)
    return env
