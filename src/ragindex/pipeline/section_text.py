"""A section's text from its chunks: what an edit, a delete and repair write, and what verify compares.

Ingest records a section as the document's text over its run of chunks, with a ``Title > Heading`` context line
(:func:`ragindex.chunking.sections.with_sections`); BM25 and learned sparse index that text. When a chunk's text is
edited or a chunk is deleted, no document text holds the new version any more, so the section is derived again from
its ACTIVE chunks: joined in document order with each overlap written once (as ``expand=section`` joins them,
:func:`ragindex.retrieval.context.join_chunks`), under the context line ingest gives it. Its content hash changes, so
its lexical copies go back to PENDING through the usual state machine and are written again under the same point
id; a section left without chunks is REMOVED and purged like any removed row.

A section has *drifted* when its text is no longer what its chunks make (:func:`drifted`): a chunk edited by a version
that did not follow edits into sections, or a row changed by hand. ``verify`` reports those sections and ``repair``
derives them again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ragindex.chunking.sections import context_line
from ragindex.errors import IntegrityError, NotFoundError
from ragindex.retrieval.context import join_chunks
from ragindex.store.protocol import TruthStore
from ragindex.store.records import ChunkRow, ChunkText, DocumentFilter, RowText
from ragindex.store.states import Lifecycle

PAGE = 200  # documents read per page by the drift pass
_TRIES = 5  # compare-and-set attempts against concurrent edits of one section


def drifted(section: str, chunks: Sequence[str]) -> bool:
    """Whether a section's text is no longer what its chunks make.

    Ingest cuts a section out of the document over its chunks, so each chunk is a slice of it (the slices may
    overlap) and every character of it that is not whitespace lies in some chunk. A table piece repeats its header
    rows above its slice, so a chunk not found whole is looked for without its first lines. Drift: a chunk's text
    is not in the section, or text of the section is in no chunk (an edit or a delete the section did not follow),
    or the section has no chunk at all. Every place a chunk's text occurs counts as covered, so repeated text (a
    rule of dashes, a repeated line) never looks like a gap.

    Args:
        section: The section's stored text.
        chunks: The texts of its ACTIVE chunks.
    """
    pieces = [piece for piece in chunks if piece.strip()]
    if not pieces:
        return True
    spans: list[tuple[int, int]] = []
    for piece in pieces:
        tail = _found_tail(section, piece)
        if tail is None:
            return True
        at = section.find(tail)
        while at >= 0:
            spans.append((at, at + len(tail)))
            at = section.find(tail, at + 1)
    return _uncovered(section, spans)


def _found_tail(section: str, piece: str) -> str | None:
    """``piece`` if ``section`` holds it, else its longest tail of whole lines that ``section`` holds (or None)."""
    tail = piece
    while True:
        if tail.strip() and tail in section:
            return tail
        cut = tail.find("\n")
        if cut < 0:
            return None
        tail = tail[cut + 1 :]


def _uncovered(section: str, spans: list[tuple[int, int]]) -> bool:
    """Whether some character of ``section`` that is not whitespace lies in none of ``spans``."""
    cursor = 0
    for start, end in sorted(spans):
        if start > cursor and not section[cursor:start].isspace():
            return True
        cursor = max(cursor, end)
    return cursor < len(section) and not section[cursor:].isspace()


def drifted_sections(store: TruthStore) -> dict[int, list[str]]:
    """The ids of the ACTIVE sections whose text drifted from their chunks, by bucket (read-only).

    Documents are read a page at a time, each page's rows once.
    """
    out: dict[int, list[str]] = {}
    after = 0
    while page := store.document_page(DocumentFilter(), after=after, limit=PAGE):
        for section in store.section_texts([d.doc_id for d in page]):
            if drifted(section.content, section.chunks):
                out.setdefault(section.bucket_id, []).append(section.section_id)
        after = page[-1].doc_id
    return out


@dataclass(frozen=True, slots=True)
class Refreshed:
    """What :meth:`SectionTexts.refresh` did: sections written again (now PENDING), and those REMOVED."""

    rewritten: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


@dataclass
class SectionTexts:
    """Writes chunk edits with their sections, and derives sections again from their chunks.

    Args:
        store: The truth store.
        kinds: The enabled vector kinds; a rewritten row gets its own kinds among them back to PENDING.
        contextual: Rows get their ``Title > Heading`` context line (``RAGINDEX_CONTEXTUAL_CHUNKS``).
    """

    store: TruthStore
    kinds: Sequence[str]
    contextual: bool
    _titles: dict[int, str | None] = field(default_factory=dict, init=False, repr=False)

    def edit_chunk(self, chunk: ChunkRow, content: str) -> list[str]:
        """Give a chunk new text and its section the text its chunks now make, in one transaction.

        Returns the ids whose text changed (none when ``content`` is the chunk's text already); those rows are
        PENDING for their own kinds. Raises NotFoundError for a chunk deleted meanwhile, and IntegrityError when
        its section kept changing under concurrent edits.
        """
        for _ in range(_TRIES):
            title = self._title(chunk.doc_id)
            context = context_line(title, chunk.section, content) if self.contextual and chunk.section else None
            edit = RowText(chunk.chunk_id, content, context, chunk.content_hash)
            if edit.content_hash == chunk.content_hash:
                return []
            texts = [edit]
            if chunk.section_id is not None:
                section = self._derive(chunk.section_id, {chunk.chunk_id: content})
                if section is not None:
                    texts.append(section)
            changed = self.store.rewrite_rows(texts, self.kinds)
            if changed is not None:
                return changed
            chunk = self._active(chunk.chunk_id)
        raise IntegrityError(
            f"chunk {chunk.chunk_id}'s section changed under {_TRIES} concurrent edits; edit it again",
            chunk_id=chunk.chunk_id,
        )

    def refresh(self, section_ids: Sequence[str]) -> Refreshed:
        """Derive sections again from their ACTIVE chunks; a section left without chunks is REMOVED.

        A section deleted meanwhile is skipped. The REMOVED ones still need their index copies purged.
        """
        done = Refreshed()
        for section_id in dict.fromkeys(section_ids):
            for _ in range(_TRIES):
                try:
                    text = self._derive(section_id, {})
                    if text is None:
                        done.removed.extend(self.store.remove_chunks([section_id]))
                        break
                    changed = self.store.rewrite_rows([text], self.kinds)
                except NotFoundError:
                    break
                if changed is not None:
                    done.rewritten.extend(changed)
                    break
            else:
                raise IntegrityError(
                    f"section {section_id} changed under {_TRIES} concurrent edits; run `ragindex repair` again",
                    chunk_id=section_id,
                )
        return done

    def _derive(self, section_id: str, edits: Mapping[str, str]) -> RowText | None:
        """A section's text from its ACTIVE chunks (``edits``: chunk id -> its new text); None without chunks."""
        rows = self.store.get_chunks([section_id])
        if not rows or rows[0].lifecycle_status != Lifecycle.ACTIVE:
            raise NotFoundError(f"section {section_id} not found (or deleted)", chunk_id=section_id)
        section = rows[0]
        members = self.store.section_chunks([section_id]).get(section_id, [])
        if not members:
            return None
        pieces = [ChunkText(m.chunk_id, edits.get(m.chunk_id, m.content), m.start_line, m.end_line) for m in members]
        text, _spans = join_chunks(pieces)
        title = self._title(section.doc_id)
        context = context_line(title, section.section, text) if self.contextual else None
        return RowText(section_id, text, context, section.content_hash)

    def _active(self, chunk_id: str) -> ChunkRow:
        rows = self.store.get_chunks([chunk_id])
        if not rows or rows[0].lifecycle_status != Lifecycle.ACTIVE:
            raise NotFoundError(f"chunk {chunk_id} not found (or deleted)", chunk_id=chunk_id)
        return rows[0]

    def _title(self, doc_id: int) -> str | None:
        """The title ingest recorded for a document (what its context lines start with)."""
        if doc_id not in self._titles:
            title = self.store.get_document(doc_id).metadata.get("title")
            self._titles[doc_id] = title if isinstance(title, str) else None
        return self._titles[doc_id]
