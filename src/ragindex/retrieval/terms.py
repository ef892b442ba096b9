"""Query terms and the chunk of a section that best matches them (which chunk stands for a lexical hit)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragindex.store.records import ChunkText

_WORD = re.compile(r"[^\W\d_]{3,}|\d+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")


def query_terms(query: str) -> frozenset[str]:
    """Lower-cased words of three letters or more, numbers, and the character bigrams of CJK runs."""
    text = query.lower()
    terms = set(_WORD.findall(_CJK.sub(" ", text)))
    for run in _CJK.findall(text):
        terms |= {run[i : i + 2] for i in range(max(len(run) - 1, 1))}
    return frozenset(terms)


def best_match(terms: frozenset[str], chunks: Sequence[ChunkText]) -> str:
    """The id of the chunk containing most of ``terms`` (the first one on a tie)."""
    best, best_hits = chunks[0].chunk_id, -1
    if len(chunks) == 1:  # the only chunk: nothing to compare
        return best
    for chunk in chunks:
        hits = sum(map(chunk.content.lower().__contains__, terms))  # how many terms are in its text
        if hits > best_hits:
            best, best_hits = chunk.chunk_id, hits
    return best
