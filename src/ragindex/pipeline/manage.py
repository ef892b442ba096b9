"""Chunk management: edit one chunk, delete chunks, a document or the documents of a source (seed 4.4, 4.5).

*Update*: unchanged content re-embeds nothing (only metadata is merged, when given); changed
content goes through the state machine (every enabled kind back to PENDING), then the index
stages run for exactly that chunk, so its copies are rewritten under the same point id. With
sections, the chunk's section is derived again from its chunks in the same transaction
(:mod:`ragindex.pipeline.section_text`), and its lexical copies (BM25, learned sparse) are rewritten
with the chunk's dense one: a lexical search finds the new text at once, and no longer the old.

*Delete*: the truth store flips the rows to REMOVED first, so the chunks leave search at once
(retrieval backfill drops every hit whose chunk is not ACTIVE); then the index copies are
purged, idempotently. A purge that fails leaves the rows REMOVED with ``purged_at`` NULL, and
``repair`` purges them later (the index copy is never the only record of a delete). The sections
of deleted chunks are derived again from the chunks they keep (REMOVED with them when none is left).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ragindex.errors import NotFoundError, ValidationError
from ragindex.pipeline.indexer import Indexer
from ragindex.pipeline.section_text import SectionTexts
from ragindex.results import ChunkUpdate, DeleteResult
from ragindex.store.protocol import TruthStore
from ragindex.store.records import ChunkRow
from ragindex.store.states import Lifecycle
from ragindex.types import Unit

log = logging.getLogger(__name__)

SAMPLE = 20  # ids listed in a result (counts are always complete)


class ChunkManager:
    """Update and delete operations over the truth store and the ACTIVE collection.

    Args:
        store: The truth store.
        indexer: Returns an Indexer bound to the ACTIVE collection, or None when no collection exists yet.
        kinds: Enabled vector kinds in stage order (``dense`` first).
        contextual: Edited chunks and sections get their ``Title > Heading`` line, as ingest gives it
            (``RAGINDEX_CONTEXTUAL_CHUNKS``).
    """

    def __init__(
        self,
        store: TruthStore,
        indexer: Callable[[], Indexer | None],
        kinds: Sequence[str],
        *,
        contextual: bool = True,
    ) -> None:
        self.store = store
        self._indexer_factory = indexer
        self._indexer: Indexer | None = None
        self.kinds = tuple(kinds)
        self.sections = SectionTexts(store, self.kinds, contextual)

    def _get_indexer(self) -> Indexer | None:
        if self._indexer is None:
            self._indexer = self._indexer_factory()
        return self._indexer

    # ------------------------------------------------------------------ update
    def update_chunk(
        self, chunk_id: str, content: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> ChunkUpdate:
        """Replace a chunk's content and/or merge metadata; re-embed only if the content changed.

        A changed text is written with its section's new text (derived from the section's chunks) in one
        transaction; then the chunk's copies and the section's lexical copies are indexed.
        """
        if content is None and metadata is None:
            raise ValidationError("content", "give new content, metadata, or both")
        if content is not None and not content.strip():
            raise ValidationError("content", "must not be empty (delete the chunk instead)")
        chunk = self._active_chunk(chunk_id)
        if metadata:
            self.store.update_chunk_metadata(chunk_id, metadata)
        changed = self.sections.edit_chunk(chunk, content) if content is not None else []
        failed: dict[str, str] = {}
        computed = reused = 0
        if changed:
            failed = self._index(changed)
            computed, reused = self._dense_counts()
        row = self._active_chunk(chunk_id)
        section = self.store.get_chunks([row.section_id]) if row.section_id else []
        return ChunkUpdate(
            chunk_id=chunk_id,
            content_changed=chunk_id in changed,
            reembedded=chunk_id in changed and not failed,
            metadata_updated=bool(metadata),
            statuses={k: row.status_of(k) for k in self.kinds},
            embedded=computed,
            reused=reused,
            failed=failed,
            section_id=row.section_id,
            section_statuses={k: section[0].status_of(k) for k in self.kinds} if section else {},
        )

    def _index(self, ids: Sequence[str]) -> dict[str, str]:
        """Index the PENDING copies of rows (chunks and sections), dense first; kind -> an error, for those failed."""
        indexer = self._get_indexer()
        if indexer is None:  # pragma: no cover - a chunk exists only once a collection was recorded
            raise NotFoundError("no ACTIVE collection to index into; run `ragindex ingest` first")
        failed: dict[str, str] = {}
        for kind in indexer.kinds:
            rows = self.store.pending_chunks(kind, chunk_ids=list(ids))
            result = indexer.run(kind, rows)
            if result.failed:
                failed[kind] = next(iter(result.failed.values()))
            if result.skipped:
                failed[kind] = "claimed by another worker; it finishes the chunk"
        return failed

    def _dense_counts(self) -> tuple[int, int]:
        indexer = self._get_indexer()
        return indexer.dense_counts() if indexer is not None else (0, 0)

    def _active_chunk(self, chunk_id: str) -> ChunkRow:
        rows = self.store.get_chunks([chunk_id])
        if not rows or rows[0].lifecycle_status != Lifecycle.ACTIVE:
            raise NotFoundError(f"chunk {chunk_id} not found (or deleted)", chunk_id=chunk_id)
        return rows[0]

    # ------------------------------------------------------------------ delete
    def delete_chunks(self, chunk_ids: Sequence[str]) -> DeleteResult:
        """REMOVE chunks by id, then purge their index copies. Unknown ids: NotFoundError, nothing changed."""
        ids = list(dict.fromkeys(chunk_ids))
        if not ids:
            raise ValidationError("chunk_ids", "give at least one chunk id")
        rows = self.store.get_chunks(ids)
        unknown = sorted(set(ids) - {r.chunk_id for r in rows})
        if unknown:
            raise NotFoundError(f"unknown chunk id(s): {', '.join(unknown[:10])}", chunk_ids=unknown[:10])
        removed = self.store.remove_chunks(ids)
        sections = [r.section_id for r in rows if r.section_id is not None and r.chunk_id in set(removed)]
        refreshed = self.sections.refresh(sections)  # their text loses the deleted chunks
        if refreshed.rewritten and self._get_indexer() is not None:
            self._index(refreshed.rewritten)  # a failure stays PENDING/FAILED: the next repair indexes it
        return self._purge(removed, [*ids, *refreshed.removed], doc_ids=())

    def delete_document(self, doc_id: int, *, user_id: int | None = None) -> DeleteResult:
        """REMOVE a document and its chunks, then purge their index copies."""
        self.store.get_document(doc_id, user_id=user_id)  # NotFoundError for unknown ids
        removed = self.store.remove_documents([doc_id])
        everything = [c.chunk_id for c in self.store.chunks_of_document(doc_id, include_removed=True, unit=None)]
        return self._purge(removed, everything, doc_ids=(doc_id,))

    def delete_source(self, path: str | Path, *, user_id: int, set_id: int) -> DeleteResult:
        """REMOVE every ACTIVE document of (user_id, set_id) whose file is ``path`` or lies under it."""
        target = Path(path).expanduser()
        prefix = str(target.resolve())
        docs = self.store.find_documents_under(user_id, set_id, prefix)
        if not docs and str(target) != prefix:  # documents recorded under the path as given
            docs = self.store.find_documents_under(user_id, set_id, str(target))
        if not docs:
            raise NotFoundError(
                f"no document of user {user_id}, set {set_id} comes from {prefix}", path=prefix, user_id=user_id
            )
        doc_ids = [d.doc_id for d in docs]
        removed = self.store.remove_documents(doc_ids)
        everything = [
            c.chunk_id for d in doc_ids for c in self.store.chunks_of_document(d, include_removed=True, unit=None)
        ]
        return self._purge(removed, everything, doc_ids=tuple(doc_ids))

    def delete_keys(self, keys: Sequence[str], *, user_id: int, set_id: int) -> DeleteResult:
        """REMOVE the set's ACTIVE documents with these keys (records' keys, files' source paths), then purge them.

        Deleting a key twice, or one that names no document, removes nothing; such keys are listed in ``missing``.
        """
        wanted = list(dict.fromkeys(keys))
        found = self.store.documents_by_key(user_id, set_id, wanted)
        doc_ids = [d.doc_id for d in found.values()]
        removed = self.store.remove_documents(doc_ids)
        everything = [
            c.chunk_id for d in doc_ids for c in self.store.chunks_of_document(d, include_removed=True, unit=None)
        ]
        result = self._purge(removed, everything, doc_ids=tuple(doc_ids))
        return replace(result, missing=tuple(k for k in wanted if k not in found))

    def _purge(self, removed: Sequence[str], candidates: Iterable[str], *, doc_ids: Sequence[int]) -> DeleteResult:
        """Purge the index copies of the REMOVED, not yet purged chunks among ``candidates``."""
        wanted = set(candidates)
        rows = [r for r in self.store.removed_unpurged() if r.chunk_id in wanted] if wanted else []
        purged, failed = purge_rows(self.store, self._get_indexer(), rows)
        sections = {r.chunk_id for r in rows if r.unit == Unit.SECTION}  # counted as the chunks they hold
        removed = [cid for cid in removed if cid not in sections]
        return DeleteResult(
            removed=len(removed),
            purged=len(purged),
            purge_failed=len(failed),
            doc_ids=tuple(doc_ids),
            chunk_ids=tuple(removed[:SAMPLE]),
            errors=tuple(sorted(set(failed.values()))[:5]),
            next_action="ragindex repair" if failed else None,
        )


def purge_rows(
    store: TruthStore, indexer: Indexer | None, rows: Sequence[ChunkRow]
) -> tuple[list[str], dict[str, str]]:
    """Purge REMOVED rows from the ACTIVE collection; with no collection there is nothing to delete."""
    if not rows:
        return [], {}
    if indexer is None:
        ids = [r.chunk_id for r in rows]
        store.mark_purged(ids)
        return ids, {}
    return indexer.purge(rows)
