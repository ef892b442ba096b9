"""A process that contends for the reconciler lock (run by test_reconcile_lock.py; not a test module).

``python reconcile_probe.py URL OWNER hold``: take the lock, print ``held``/``refused``, keep it until a line
arrives on stdin (or the process is killed), print ``released``.
``python reconcile_probe.py URL OWNER try``: print ``held`` or ``refused`` and exit.
``python reconcile_probe.py URL OWNER passes N``: print ``ready``, wait for a line, then run real reconciler
passes until N of them held the lock; print one JSON line: each held pass's (start, end) on the system-wide
monotonic clock, and how many passes were skipped because the other process held the lock.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time

from ragindex.pipeline.reconcile import ReconcilePolicy, Reconciler
from ragindex.store.sql import SqlTruthStore


class TimedReconciler(Reconciler):
    """A reconciler whose passes note when their first action starts and their last one ends."""

    spans: list[tuple[float, float]]
    _start = 0.0

    def release(self) -> list[str]:
        self._start = time.monotonic()
        return super().release()

    def finish(self, touched: set[int]) -> list[int]:
        done = super().finish(touched)
        time.sleep(0.03)  # widen the window in which the other process must be refused
        self.spans.append((self._start, time.monotonic()))
        return done


def main() -> None:
    url, label, mode, *rest = sys.argv[1:]
    owner = f"{socket.gethostname()}:{os.getpid()}:{label}"  # as the service and the workers name themselves
    store = SqlTruthStore(url)
    try:
        if mode in ("hold", "try"):
            with store.reconcile_lock(owner, lease_seconds=600) as held:
                print("held" if held else "refused", flush=True)
                if mode == "hold":
                    sys.stdin.readline()
            print("released", flush=True)
            return
        want = int(rest[0])
        reconciler = TimedReconciler(store, lambda: None, ("dense",), ReconcilePolicy(), owner=owner)
        reconciler.spans = []
        print("ready", flush=True)
        sys.stdin.readline()
        skipped = 0
        for _ in range(5000):
            if len(reconciler.spans) >= want:
                break
            if not reconciler.run_pass().held:
                skipped += 1
            time.sleep(0.002)
        print(json.dumps({"owner": label, "spans": reconciler.spans, "skipped": skipped}), flush=True)
    finally:
        store.close()


if __name__ == "__main__":
    main()
