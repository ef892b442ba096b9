"""Keeping the cyclic garbage collector's full passes short in the long-running processes ragindex owns.

A full collection (generation 2) walks every container object the process holds. In the HTTP service that is the
app, the modules, torch's and the models' Python objects and the settings: the service process's full collections
took 114-145 ms under load (every search in flight waited, and they made the slowest 1% of a load run; torch's
objects alone ~40 ms), a search process's 30-45 ms. :func:`freeze_heap` moves what is alive once start-up is done
into the collector's permanent generation (:func:`gc.freeze`), so later full collections walk only what was
allocated since (docs/service.md, "Pauses and hand-offs").

Only a process ragindex owns is frozen: ``ragindex serve``, ``ragindex worker`` and the search processes call
:func:`own_process` first. In an application that embeds the service or the engine, the heap is the
application's, and :func:`freeze_heap` does nothing.
"""

from __future__ import annotations

import gc

_owned = False


def own_process() -> None:
    """Mark this process as one ragindex runs (a server, a worker, a search process): :func:`freeze_heap` acts."""
    global _owned
    _owned = True


def freeze_heap(*, collect: bool = True) -> int:
    """Exempt every object alive now from later collections (after one collection); return how many are frozen.

    Called when a process's long-lived objects are built (the service once its model has loaded, a thread once it
    imported torch). Objects freed later are still freed by reference counting; only cycles among them wait for
    ``gc.unfreeze``. Without ``collect`` it takes no time (the collection holds the GIL for ~0.1 s in the service),
    and cycles that are garbage now are kept. In a process not marked by :func:`own_process`: nothing, 0.
    """
    if not _owned:
        return 0
    if collect:
        gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
