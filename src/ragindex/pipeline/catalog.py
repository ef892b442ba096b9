"""The collections of a deployment: which one reads and writes use, and the check that it fits the configured models.

Opening a collection with another dense model, BM25 configuration or learned sparse model is a hard error that
names the fix (seed 000 section 9.7); a collection is never filled with two vector spaces.

Reads never write: :meth:`CollectionCatalog.read` only checks. A collection adopts a newly configured learned sparse
provider on the write paths (:meth:`~CollectionCatalog.read_for_write`, :meth:`~CollectionCatalog.write`), which are
also the ones that give its chunks their sparse vectors.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field, replace

from ragindex.encoders.protocol import DenseEncoder, SparseEncoder
from ragindex.errors import FingerprintMismatchError
from ragindex.store.protocol import CollectionStore
from ragindex.store.records import IndexMeta
from ragindex.store.states import CollectionState
from ragindex.types import VectorKind

log = logging.getLogger(__name__)


@dataclass(eq=False)
class CollectionCatalog:
    """The ACTIVE collection of a deployment and its fingerprint checks.

    Args:
        store: Where collections are recorded.
        prefix: The name of the first collection.
        backend: The index backend's name (recorded with each collection).
        dense: Returns the dense encoder (its model loads lazily).
        sparse: The sparse encoders by kind.
    """

    store: CollectionStore
    _: KW_ONLY
    prefix: str
    backend: str
    dense: Callable[[], DenseEncoder]
    sparse: Mapping[str, SparseEncoder]
    _unadopted: set[str] = field(default_factory=set, init=False, repr=False)
    _checked: str | None = field(default=None, init=False, repr=False)
    """The ACTIVE collection that :meth:`read` checked last."""
    """Collections reported as not having adopted the sparse provider."""

    def read(self) -> str | None:
        """The collection searches read (the ACTIVE one), checked against the configured models; None if empty.

        Read-only: a collection that has not adopted the configured sparse provider yet is only reported (once).
        Every search asks: while the ACTIVE collection is the one checked last, one narrow read answers (what a
        collection was built with never changes but for adopting the configured sparse provider, which passes).
        """
        active = self.store.active_collections()
        if len(active) == 1 and active[0] == self._checked:
            return self._checked
        self._checked = self._active(adopt=False)
        return self._checked

    def read_for_write(self) -> str | None:
        """The ACTIVE collection for a write (repair, chunk edits): checked, adopting a new sparse provider."""
        return self._active(adopt=True)

    def _active(self, *, adopt: bool) -> str | None:
        active = [m for m in self.store.list_index_meta() if m.state == CollectionState.ACTIVE]
        if not active:
            return None
        self.check(active[0], adopt=adopt)
        return active[0].collection

    def write(self) -> str:
        """The collection ingests write, created (and recorded as ACTIVE) on the first ingest."""
        collection = self.read_for_write()
        if collection is not None:
            return collection
        name = self.prefix
        self.store.put_index_meta(self.meta_for(name, state=CollectionState.ACTIVE))
        return name

    def meta_for(self, collection: str, *, state: str, dense: DenseEncoder | None = None) -> IndexMeta:
        """The metadata that records what builds ``collection``: the dense fingerprint and the sparse configs."""
        encoder = dense or self.dense()
        bm25 = self.sparse.get(VectorKind.BM25)
        return IndexMeta(
            collection=collection,
            backend=self.backend,
            state=state,
            dense_fingerprint=encoder.fingerprint,
            dense_dim=None,
            sparse_model=self._sparse_name(),
            bm25_config=getattr(bm25, "config", None),
            chunker_config=None,
        )

    def _sparse_name(self) -> str | None:
        """Name of the configured learned sparse encoder (recorded as ``index_meta.sparse_model``), or None."""
        provider = self.sparse.get(VectorKind.SPARSE)
        return provider.name if provider is not None else None

    def _check_sparse_meta(self, meta: IndexMeta, *, adopt: bool) -> None:
        """A collection's learned sparse vectors come from one sparse model: never mix two in one collection.

        A collection built before a sparse provider was configured adopts it on the next write (its shards always
        have the ``sparse`` named vector); until then sparse search finds none of its chunks. Turning the provider
        off only disables sparse search.
        """
        name = self._sparse_name()
        if name is None or meta.sparse_model == name:
            return
        if meta.sparse_model is not None:
            raise FingerprintMismatchError(
                f"collection {meta.collection!r} has sparse vectors built with {meta.sparse_model!r} but the "
                f"configured sparse provider is {name!r}. Restore the RAGINDEX_SPARSE_* settings (provider, model, "
                "top_k, min_weight), or build a new collection with `ragindex reindex --into NAME`.",
                collection=meta.collection,
            )
        if not adopt:
            if meta.collection not in self._unadopted:
                self._unadopted.add(meta.collection)
                log.warning(
                    "collection %s has no vectors of sparse model %s yet: sparse search finds none of its chunks "
                    "until the next ingest or repair gives them",
                    meta.collection,
                    name,
                )
            return
        self.store.put_index_meta(replace(meta, sparse_model=name))
        log.warning(
            "collection %s now records sparse model %s; chunks indexed before get their sparse vectors on the "
            "next ingest or repair",
            meta.collection,
            name,
        )

    def check(self, meta: IndexMeta, *, adopt: bool = False) -> None:
        """Refuse a collection built with other models or BM25 settings (the error names the fix).

        ``adopt``: record a newly configured sparse provider in the collection's metadata (write paths only).
        """
        fingerprint = self.dense().fingerprint
        if meta.dense_fingerprint != fingerprint:
            raise FingerprintMismatchError(
                f"collection {meta.collection!r} was built with {meta.dense_fingerprint!r} but the configured dense "
                f"model is {fingerprint!r}. {_what_changed(meta.dense_fingerprint, fingerprint)}, or build a new "
                "collection with `ragindex reindex --into NAME` (searches keep using the old one until it is "
                "complete).",
                collection=meta.collection,
            )
        bm25 = self.sparse.get(VectorKind.BM25)
        expected = getattr(bm25, "config", None)
        if bm25 is not None and meta.bm25_config is not None and dict(meta.bm25_config) != expected:
            follow = getattr(bm25, "follow", None)
            if follow is not None and follow(meta.bm25_config):
                log.info("collection %s: BM25 parameters as it was built, %s", meta.collection, meta.bm25_config)
                self._check_sparse_meta(meta, adopt=adopt)
                return
            raise FingerprintMismatchError(
                f"collection {meta.collection!r} has BM25 vectors built with {dict(meta.bm25_config)} but the "
                f"settings give {expected}; restore the RAGINDEX_BM25_* settings, or build a new collection with them: "
                "`ragindex reindex --into NAME` (nothing is embedded again).",
                collection=meta.collection,
            )
        self._check_sparse_meta(meta, adopt=adopt)


def _what_changed(recorded: str, configured: str) -> str:
    """The fix for a dense fingerprint mismatch: the model, or (same model) its query / document prompts."""
    if recorded.split("|prompts=")[0] == configured.split("|prompts=")[0]:
        return (
            "The model is the same but its query / document prompts differ: set RAGINDEX_DENSE_QUERY_PROMPT and "
            "RAGINDEX_DENSE_DOCUMENT_PROMPT back to those the collection was built with"
        )
    return "Set RAGINDEX_DENSE_MODEL back"
