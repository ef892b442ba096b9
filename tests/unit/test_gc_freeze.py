"""ragindex.gc_freeze: only a process ragindex owns is frozen; there, start-up objects leave the GC's full walks.

Each case runs in a fresh interpreter: freezing the test process's heap would outlive the test.
"""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import gc, sys
from ragindex import gc_freeze
if sys.argv[1] == "own":
    gc_freeze.own_process()
kept = [[i] for i in range(50_000)]  # long-lived containers built at start-up
frozen = gc_freeze.freeze_heap()
print(frozen, gc.get_freeze_count(), len(gc.get_objects(2)))
"""


def _run(mode: str) -> tuple[int, int, int]:
    out = subprocess.run([sys.executable, "-c", CHECK, mode], capture_output=True, text=True, check=True).stdout
    frozen, count, old = (int(x) for x in out.split())
    return frozen, count, old


def test_an_owned_process_freezes_what_is_alive() -> None:
    frozen, count, old = _run("own")
    assert frozen == count > 50_000  # the start-up containers are in the permanent generation
    assert old < 1_000  # and no longer in the oldest one, which full collections walk


def test_a_host_application_heap_is_left_alone() -> None:
    frozen, count, old = _run("host")
    assert frozen == count == 0
    assert old > 50_000
