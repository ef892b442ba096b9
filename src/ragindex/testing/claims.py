"""The claim-drain loop shared by the contention test and ``bench.claims``."""

from __future__ import annotations

import time
from typing import Any

from ragindex.store.protocol import ClaimStore
from ragindex.store.records import Claim
from ragindex.types import VectorKind

APPROACHES = ("claim", "claim_next")


def drain_claims(store: ClaimStore, approach: str, batch: int) -> dict[str, Any]:
    """Claim -> mark_success dense batches until nothing is pending; report what this worker got.

    ``claim``: ``pending_chunks`` then the compare-and-set ``claim`` (concurrent selections overlap);
    ``claim_next``: select and claim in one transaction. Raises AssertionError if ``mark_success``
    does not move every chunk the claim owns.
    """
    if approach not in APPROACHES:
        raise ValueError(f"unknown approach {approach!r}; valid: {', '.join(APPROACHES)}")
    got: list[str] = []
    claims = partial = empty = 0
    started = time.time()
    while True:
        claim: Claim
        if approach == "claim_next":
            claim = store.claim_next(VectorKind.DENSE, batch)
            if not claim.chunk_ids:
                empty += 1
                if not store.pending_chunks(VectorKind.DENSE, limit=1):
                    break
                continue
        else:
            rows = store.pending_chunks(VectorKind.DENSE, limit=batch)
            if not rows:
                break
            claim = store.claim(VectorKind.DENSE, [r.chunk_id for r in rows])
            if not claim.chunk_ids:
                empty += 1
                continue
        claims += 1
        partial += not claim.complete
        got.extend(claim.chunk_ids)
        moved = store.mark_success(claim)
        if moved != len(claim.chunk_ids):
            raise AssertionError(f"mark_success moved {moved} of {len(claim.chunk_ids)} owned chunks")
    return {"got": got, "claims": claims, "partial": partial, "empty": empty, "start": started, "end": time.time()}
