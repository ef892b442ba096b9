"""The processes a process started, read from Linux's ``/proc`` (tests and benchmarks of the service)."""

from __future__ import annotations

from pathlib import Path


def descendants(pid: int) -> list[int]:
    """Every living descendant of ``pid`` (children first, then theirs), from ``/proc/<pid>/task/*/children``.

    Empty off Linux or once ``pid`` is gone. The service's search processes (``RAGINDEX_SEARCH_PROCESSES``) are
    among them.
    """
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids = [int(k) for k in (task / "children").read_text().split()]
        except OSError:  # the thread or the process ended while we read
            continue
        for kid in kids:
            out += [kid, *descendants(kid)]
    return out
