"""One document to the drafts the truth store records: its chunks, then its sections over them.

:class:`DocumentCutter` is what an ingest runs on each new or changed document after loading it: the configured
chunker, the per-document chunk limit, the sections (:func:`~ragindex.chunking.sections.with_sections`) and their
context lines. It pickles, so that it can run in the parse child under the file's time limit
(:meth:`ragindex.loaders.isolated.IsolatedParser.cut`), where a runaway chunker is killed with its process instead
of holding the ingest.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragindex.chunking.protocol import Chunker
from ragindex.chunking.sections import with_sections
from ragindex.errors import DocumentTooLargeError
from ragindex.types import ChunkDraft, Document


@dataclass(frozen=True, slots=True)
class Cut:
    """A document's drafts: its sections first (when it has sections), then its chunks."""

    drafts: list[ChunkDraft]
    chunks: int  # how many of the drafts are chunks (the rest are sections)

    @property
    def sections(self) -> int:
        """How many of the drafts are sections."""
        return len(self.drafts) - self.chunks


@dataclass(frozen=True, slots=True)
class DocumentCutter:
    """Chunks a document, checks the chunk limit, and adds its sections.

    Args:
        chunker: The configured chunker.
        max_chunks: Most chunks one document may give (``RAGINDEX_MAX_CHUNKS_PER_DOCUMENT``).
        section_max_chars: Section size limit; 0: no sections.
        contextual: Give chunks and sections their ``Title > Heading`` context line.
    """

    chunker: Chunker
    max_chunks: int
    section_max_chars: int = 0
    contextual: bool = False

    def cut(self, document: Document) -> Cut:
        """The drafts of ``document``.

        Raises:
            DocumentTooLargeError: It gives more than ``max_chunks`` chunks.
        """
        chunks = self.chunker.chunk(document)
        if len(chunks) > self.max_chunks:
            raise DocumentTooLargeError(
                f"{document.source_uri} gives {len(chunks)} chunks, over the limit of {self.max_chunks} "
                "(RAGINDEX_MAX_CHUNKS_PER_DOCUMENT)",
                chunks=len(chunks),
                limit=self.max_chunks,
            )
        drafts = with_sections(document, chunks, max_chars=self.section_max_chars, contextual=self.contextual)
        return Cut(drafts, len(chunks))
