"""BM25 sparse vectors from Qdrant's own Bm25 (the same token ids and formula as the server).

The ``Multilingual`` tokenizer segments Chinese (数据治理流程 -> 数据 / 治理 / 流程) and still stems
English; stopwords of both languages are removed. IDF is applied by the index at query time
(``Modifier.Idf``), so documents carry term-frequency weights and queries carry 1.0 per term.
The same configuration must be used at ingest and at query time: it is recorded in the index metadata.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ragindex.errors import EncodingError
from ragindex.types import SparseVector

TUNABLE = frozenset({"k1", "b", "avg_len"})
"""The parameters a user may set (``RAGINDEX_BM25_K1``, ``_B``, ``_AVG_LEN``); the tokenizer and stopwords are fixed."""


class Bm25SparseEncoder:
    """BM25 term weights via ``qdrant_edge.Bm25``.

    Args:
        avg_len: Expected mean chunk length in tokens (length normalisation).
        k1: Term-frequency saturation.
        b: Length normalisation strength.
        pinned: The parameters (``k1``, ``b``, ``avg_len``) the user set; the others are defaults, which
            :meth:`follow` may replace by those an existing collection was built with.
    """

    def __init__(
        self, *, avg_len: float = 150.0, k1: float = 1.5, b: float = 1.0, pinned: Collection[str] = TUNABLE
    ) -> None:
        self.avg_len = avg_len
        self.k1 = k1
        self.b = b
        self.pinned = frozenset(pinned)
        self._model: Any = None

    def follow(self, recorded: Mapping[str, Any]) -> bool:
        """Take a collection's recorded parameters where the user left the default; True if it now matches.

        A collection keeps the BM25 parameters it was built with: when a release changes a default, an index built
        before it goes on working (with its own parameters) instead of failing every search. A parameter the user
        set is never replaced: that mismatch stays an error naming the fix.
        """
        current = self.config
        differ = {k for k in set(current) | set(recorded) if current.get(k) != recorded.get(k)}
        if not differ or not differ <= TUNABLE - self.pinned:
            return not differ
        for key in differ:
            setattr(self, key, float(recorded[key]))
        self._model = None
        return True

    @property
    def config(self) -> dict[str, Any]:
        """The configuration that must match between ingest and query."""
        return {"k1": self.k1, "b": self.b, "avg_len": self.avg_len, "tokenizer": "multilingual", "stopwords": "en+zh"}

    @property
    def name(self) -> str:
        """Identity of the BM25 configuration."""
        return f"qdrant-bm25(k1={self.k1},b={self.b},avg_len={self.avg_len},tokenizer=multilingual)"

    def _load(self) -> Any:
        if self._model is None:
            import qdrant_edge as q

            stopwords = q.StopwordsSet(languages={q.Language.English, q.Language.Chinese})
            config = q.Bm25Config(
                k=self.k1, b=self.b, avg_len=self.avg_len, tokenizer=q.TokenizerType.Multilingual, stopwords=stopwords
            )
            self._model = q.Bm25(config)
        return self._model

    def encode_documents(self, texts: Sequence[str]) -> list[SparseVector]:
        """Term-frequency weights of each chunk."""
        return self._run(texts, query=False)

    def encode_queries(self, texts: Sequence[str]) -> list[SparseVector]:
        """1.0 per distinct query term."""
        return self._run(texts, query=True)

    def _run(self, texts: Sequence[str], *, query: bool) -> list[SparseVector]:
        model = self._load()
        embed = model.embed_query if query else model.embed_document
        try:
            out = []
            for text in texts:
                vector = embed(text)
                pairs = sorted(zip(vector.indices, vector.values, strict=True))
                out.append(SparseVector(tuple(i for i, _ in pairs), tuple(float(v) for _, v in pairs)))
            return out
        except Exception as exc:
            raise EncodingError(f"bm25 encoding failed: {exc}") from exc
