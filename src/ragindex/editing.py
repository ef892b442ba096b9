"""The Engine's chunk management: edit and delete chunks, documents and sources (seed sections 4.4 and 4.5).

A mixin of :class:`ragindex.engine.Engine`, like :class:`~ragindex.maintenance.Maintenance`; each method runs a
:class:`~ragindex.pipeline.manage.ChunkManager` bound to the ACTIVE collection.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragindex.config.settings import Settings
    from ragindex.pipeline.indexer import Indexer
    from ragindex.pipeline.lease import ProcessOwner
    from ragindex.pipeline.manage import ChunkManager
    from ragindex.results import ChunkUpdate, DeleteResult
    from ragindex.store.protocol import TruthStore


class ChunkEditing:
    """Edit and delete the chunks of an :class:`~ragindex.engine.Engine`'s deployment (mixed into the Engine)."""

    if TYPE_CHECKING:  # provided by the Engine
        store: TruthStore
        owner: ProcessOwner
        settings: Settings

        @property
        def kinds(self) -> tuple[str, ...]: ...  # noqa: D102

        def _active_indexer(self) -> Indexer | None: ...

    def _chunk_manager(self) -> ChunkManager:
        from ragindex.pipeline.manage import ChunkManager

        self.owner.begin(release=False)
        return ChunkManager(self.store, self._active_indexer, self.kinds, contextual=self.settings.contextual_chunks)

    def update_chunk(
        self, chunk_id: str, content: str | None = None, metadata: dict[str, Any] | None = None
    ) -> ChunkUpdate:
        """Edit one chunk (seed 4.4): unchanged content re-embeds nothing; changed content is re-indexed in place.

        The chunk keeps its id (the index point id); ``reembedded`` says whether its copies were rewritten. Its
        section is derived again from its chunks, and the section's lexical copies (BM25, learned sparse) are
        rewritten too (``section_id``, ``section_statuses``), so a lexical search finds the new text at once.
        Raises NotFoundError for an unknown or deleted chunk.
        """
        return self._chunk_manager().update_chunk(chunk_id, content, metadata)

    def delete_chunks(self, chunk_ids: Sequence[str]) -> DeleteResult:
        """Delete chunks (seed 4.5): REMOVED in the truth store first (gone from search), then purged from the index.

        Returns the counts (``removed``, ``purged``, ``purge_failed``, ...); a failed purge is left for
        :meth:`~ragindex.engine.Engine.repair`.
        """
        return self._chunk_manager().delete_chunks(chunk_ids)

    def delete_document(self, doc_id: int, *, user_id: int | None = None) -> DeleteResult:
        """Delete a document and its chunks (see :meth:`delete_chunks`)."""
        return self._chunk_manager().delete_document(doc_id, user_id=user_id)

    def delete_source(self, path: str | Path, *, user_id: int = 1, set_id: int = 1) -> DeleteResult:
        """Delete the documents of (user_id, set_id) whose file is ``path`` or lies under that folder."""
        from ragindex.retrieval.search import validate_ids

        validate_ids(user_id=user_id, set_id=set_id)
        return self._chunk_manager().delete_source(path, user_id=user_id, set_id=set_id)
