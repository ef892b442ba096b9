"""The parsed-artifact contract: the markdown each document version was chunked from, kept in the truth store.

A backend's test module subclasses :class:`ParsedDocumentContract` and overrides the ``store`` fixture, as for
:class:`~ragindex.testing.contracts.truth_store.TruthStoreContract`. It states that ``stage_document`` keeps the
artifact with the chunks (text, blocks with page and bbox, page starts, title and warnings), that a new version
replaces the previous one whole, that texts larger than one stored part (and than a server's packet limit) come
back exactly, that removing a document drops it, that ``set_file_hashes`` records a missing one, and how the
inspection read (:func:`~ragindex.pipeline.inspection.read_parsed`) scopes and explains a missing artifact.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import func, select

from ragindex.errors import NotFoundError
from ragindex.hashing import sha256_text
from ragindex.pipeline.inspection import parsed_dict, read_parsed
from ragindex.store import schema
from ragindex.store.migrations import apply_migrations
from ragindex.store.records import ChunkLayout
from ragindex.store.sql import SqlTruthStore
from ragindex.store.sql.parsed import PART_CHARS
from ragindex.testing.contracts.truth_store import drafts, ingest, new_document
from ragindex.types import BBox, Block, BlockKind, Document, PageSpan

MARKDOWN = "# Solar system\n\nThe Sun is a star.\n\n| planet | moons |\n|---|---|\n| Earth | 1 |\n\nscanned words"


def layout_document(source: str = "docs/solar.pdf", text: str = MARKDOWN) -> Document:
    """A two-page document with a heading, a paragraph, a table and an OCR'd block."""
    table_at = text.find("| planet")
    ocr_at = text.find("scanned")
    return Document(
        source_uri=source,
        text=text,
        parser="pdf",
        metadata={"pages": 2},
        pages=(PageSpan(1, 0), PageSpan(2, table_at)),
        title="Solar system",
        warnings=("page 2: text recognised by OCR",),
        blocks=(
            Block(BlockKind.HEADING, 0, 14, page=1, bbox=BBox(72.0, 60.5, 300.0, 80.0)),
            Block(BlockKind.TEXT, 16, 34, page=1, bbox=BBox(72.0, 90.0, 400.0, 104.0)),
            Block(BlockKind.TABLE, table_at, ocr_at - 2, page=2, bbox=BBox(72.0, 60.0, 500.0, 120.0)),
            Block(BlockKind.OCR_TEXT, ocr_at, len(text), page=2, bbox=BBox(72.0, 130.0, 200.0, 142.0), confidence=0.9),
        ),
    )


def stage(store: SqlTruthStore, parsed: Document | None, *, user_id: int = 1) -> int:
    """Stage ``parsed`` as an ingest does (document, chunks, run and artifact in one transaction); its doc_id."""
    text = parsed.text if parsed is not None else "plain"
    source = parsed.source_uri if parsed is not None else "docs/plain.txt"
    doc_id, _run, _diff = store.stage_document(
        new_document(source, user_id=user_id, content_hash=sha256_text(text)),
        # chunk rows stay small: the artifact is what is tested
        ChunkLayout(drafts(*text[:20_000].split("\n\n")), 0, ("dense", "bm25")),
        job_id=None,
        chunking_ms=1.0,
        parsed=parsed,
    )
    return doc_id


def _part_rows(store: SqlTruthStore, doc_id: int) -> dict[str, int]:
    part = schema.parsed_parts.c
    query = select(part.field, func.count()).where(part.doc_id == doc_id).group_by(part.field)
    with store.engine.connect() as conn:
        return {str(field): int(n) for field, n in conn.execute(query)}


class ParsedDocumentContract:
    """Parsed artifacts in the truth store; subclasses override the ``store`` fixture."""

    @pytest.fixture
    def store(self) -> Iterator[SqlTruthStore]:
        """A fresh, empty, migrated store; close it after the test."""
        raise NotImplementedError("a backend's test class must override the `store` fixture")

    def test_stage_document_keeps_the_parsed_artifact(self, store: SqlTruthStore) -> None:
        """Text, blocks (kind, span, page, bbox, confidence), page starts, title and warnings come back as staged."""
        parsed = layout_document()
        doc_id = stage(store, parsed)

        got = store.parsed_document(doc_id)
        assert got is not None
        assert (got.doc_id, got.parser, got.text, got.chars) == (doc_id, "pdf", MARKDOWN, len(MARKDOWN))
        assert got.content_hash == sha256_text(MARKDOWN) == store.get_document(doc_id).content_hash
        assert got.blocks == parsed.blocks
        assert got.pages == parsed.pages and got.page_count == 2
        assert dict(got.metadata) == {"title": "Solar system", "warnings": ["page 2: text recognised by OCR"]}
        assert got.created_at is not None

    def test_a_document_without_layout_has_no_blocks_or_pages(self, store: SqlTruthStore) -> None:
        """Plain text: the artifact is the text alone; a document staged without one has none; unknown ids None."""
        plain = Document(source_uri="docs/notes.txt", text="just words\n\nmore words", parser="text")
        doc_id = stage(store, plain)
        got = store.parsed_document(doc_id)
        assert got is not None and got.text == plain.text
        assert (got.blocks, got.pages, got.page_count, dict(got.metadata)) == ((), (), None, {})
        assert _part_rows(store, doc_id) == {"text": 1}

        assert store.parsed_document(stage(store, None)) is None
        assert store.parsed_document(987654) is None

    def test_a_new_version_replaces_the_previous_one_whole(self, store: SqlTruthStore) -> None:
        """Re-staging a changed document leaves only the new artifact: no part of the longer old one survives."""
        long_text = "# Old\n\n" + "🪐" * (2 * PART_CHARS + 10)  # 4-byte characters across part boundaries
        doc_id = stage(store, layout_document(text=long_text))
        assert _part_rows(store, doc_id)["text"] == 3

        again = stage(store, layout_document(text=MARKDOWN + "\n\nmore"))
        assert again == doc_id
        got = store.parsed_document(doc_id)
        assert got is not None and got.text == MARKDOWN + "\n\nmore"
        assert got.content_hash == sha256_text(MARKDOWN + "\n\nmore")
        assert _part_rows(store, doc_id) == {"text": 1, "blocks": 1, "pages": 1}

    def test_a_text_larger_than_a_server_packet_comes_back_exactly(self, store: SqlTruthStore) -> None:
        """17 MiB of UTF-8 is stored in parts and read back character for character, with 20,000 blocks.

        One INSERT of it would exceed MariaDB's default 16 MiB ``max_allowed_packet``.
        """
        unit = "abcé\n"  # 6 bytes in UTF-8, 5 characters
        text = unit * (17 * 1024 * 1024 // 6 + 1)
        blocks = tuple(Block(BlockKind.TEXT, i * 5, i * 5 + 4, page=1 + i // 1000) for i in range(20_000))
        doc = Document(source_uri="docs/big.md", text=text, parser="markdown", blocks=blocks)
        doc_id = stage(store, doc)

        got = store.parsed_document(doc_id)
        assert got is not None
        assert got.chars == len(text) and got.text == text
        assert got.blocks == blocks
        assert _part_rows(store, doc_id)["text"] == -(-len(text) // PART_CHARS)

    def test_removing_a_document_drops_its_artifact_and_reviving_records_a_new_one(self, store: SqlTruthStore) -> None:
        """remove_documents deletes the artifact with the chunks; a later version of the same source gets its own."""
        doc_id = stage(store, layout_document())
        other = stage(store, layout_document("docs/other.pdf"))
        store.remove_documents([doc_id])
        assert store.parsed_document(doc_id) is None
        assert _part_rows(store, doc_id) == {}
        assert store.parsed_document(other) is not None

        revived = stage(store, layout_document(text="# Back\n\nagain"))
        assert revived == doc_id
        got = store.parsed_document(doc_id)
        assert got is not None and got.text == "# Back\n\nagain"

    def test_set_file_hashes_records_a_missing_artifact_once(self, store: SqlTruthStore) -> None:
        """Documents recorded without an artifact get one when their file moves on; an existing one is kept."""
        doc_id, _ = ingest(store, [MARKDOWN], source_uri="docs/solar.pdf")
        kept = stage(store, layout_document(source="docs/kept.pdf"))
        plain, _ = ingest(store, ["plain"], source_uri="docs/plain.txt")
        assert store.parsed_document(doc_id) is None
        before = store.parsed_document(kept)
        store.set_file_hashes("1" * 64, {doc_id: layout_document(), kept: layout_document(), plain: None})
        first = store.parsed_document(doc_id)
        assert first is not None and first.text == MARKDOWN
        assert store.parsed_document(kept) == before, "same text: not rewritten"
        assert store.parsed_document(plain) is None
        assert {store.get_document(d).file_hash for d in (doc_id, kept, plain)} == {"1" * 64}

        store.set_file_hashes("2" * 64, {doc_id: layout_document()})
        second = store.parsed_document(doc_id)
        assert second is not None and second.created_at == first.created_at, "same text: not rewritten"
        store.set_file_hashes("3" * 64, {doc_id: None})
        assert store.parsed_document(doc_id) == first
        assert store.get_document(doc_id).file_hash == "3" * 64
        assert store.get_document(kept).file_hash == "1" * 64

    def test_a_failed_load_keeps_the_previous_versions_artifact(self, store: SqlTruthStore) -> None:
        """A file that stops loading keeps its last chunks, and the artifact they were cut from."""
        doc_id = stage(store, layout_document())
        store.record_failed_document(new_document("docs/solar.pdf", content_hash=""), "broken pdf")
        got = store.parsed_document(doc_id)
        assert got is not None and got.text == MARKDOWN

    def test_read_parsed_is_tenant_scoped_and_explains_a_missing_artifact(self, store: SqlTruthStore) -> None:
        """Another tenant's, a deleted or an unknown document is not found; one without an artifact names the fix."""
        doc_id = stage(store, layout_document())
        assert read_parsed(store, doc_id, user_id=1).text == MARKDOWN
        with pytest.raises(NotFoundError):
            read_parsed(store, doc_id, user_id=2)
        with pytest.raises(NotFoundError):
            read_parsed(store, 987654)

        old, _ = ingest(store, ["before artifacts"], source_uri="docs/old.txt")
        with pytest.raises(NotFoundError, match=r"no parsed artifact.*--full") as missing:
            read_parsed(store, old)
        assert missing.value.context["reason"] == "no_parsed_artifact"

        failed = store.record_failed_document(new_document("docs/bad.pdf", content_hash=""), "broken pdf")
        with pytest.raises(NotFoundError, match="failed to load"):
            read_parsed(store, failed)

        store.remove_documents([doc_id])
        with pytest.raises(NotFoundError, match="deleted"):
            read_parsed(store, doc_id)

    def test_parsed_dict_is_the_stable_json(self, store: SqlTruthStore) -> None:
        """Blocks as objects with kind, span, page, bbox ([x0, top, x1, bottom]) and confidence; pages as starts."""
        doc_id = stage(store, layout_document())
        out = parsed_dict(read_parsed(store, doc_id))
        assert set(out) == {
            "doc_id", "parser", "content_hash", "chars", "page_count", "metadata", "created_at", "text", "blocks",
            "pages",
        }  # fmt: skip
        assert out["blocks"][0] == {
            "kind": "heading", "start": 0, "end": 14, "page": 1, "bbox": [72.0, 60.5, 300.0, 80.0], "confidence": None,
        }  # fmt: skip
        assert out["blocks"][3]["confidence"] == 0.9
        assert out["pages"] == [{"page": 1, "start": 0}, {"page": 2, "start": MARKDOWN.find("| planet")}]

    def test_m010_creates_the_tables_on_a_store_that_predates_them(self, store: SqlTruthStore) -> None:
        """A store migrated up to m009 gets both tables from m010; its documents simply have no artifact."""
        doc_id, _ = ingest(store, ["old"], source_uri="docs/old.txt")
        with store.engine.begin() as conn:
            schema.parsed_parts.drop(conn)
            schema.parsed_documents.drop(conn)
            migrations = schema.schema_migrations
            conn.execute(migrations.delete().where(migrations.c.name == "m010_parsed_documents"))
        assert apply_migrations(store.engine) == ["m010_parsed_documents"]
        assert apply_migrations(store.engine) == []
        assert store.parsed_document(doc_id) is None
        assert store.parsed_document(stage(store, layout_document())) is not None
