"""The parsed artifact through the real engine (SQLite, Qdrant Edge, the shipped model): kept per document version.

A markdown file and a small PDF are ingested; each document's parsed markdown (with the PDF's headings, pages and
boxes) comes back from ``Engine.parsed_document``; a changed file replaces it, an unchanged run leaves it alone, a
deleted document loses it, and a document recorded before artifacts were kept says how to get one.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import delete, event

from ragindex.engine import Engine
from ragindex.errors import NotFoundError
from ragindex.hashing import sha256_text
from ragindex.store import schema
from ragindex.types import BlockKind

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOTES = "# Field notes\n\n## Bees\n\nHoneybee colonies have one queen and thousands of workers.\n"
NOTES_V2 = "# Field notes\n\n## Wasps\n\nPaper wasps build nests of chewed wood fibre.\n"


def _forget_artifact(engine: Engine, doc_id: int) -> None:
    """Make ``doc_id`` look like a document ingested before parsed artifacts were kept."""
    with engine.store.engine.begin() as conn:  # type: ignore[attr-defined]
        conn.execute(delete(schema.parsed_parts).where(schema.parsed_parts.c.doc_id == doc_id))
        conn.execute(delete(schema.parsed_documents).where(schema.parsed_documents.c.doc_id == doc_id))


def test_each_document_version_keeps_its_parsed_markdown(make_engine: Callable[..., Engine], tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(EXAMPLES / "solar_system.pdf", corpus)
    (corpus / "notes.md").write_text(NOTES, encoding="utf-8")

    with make_engine() as engine:
        assert engine.ingest([corpus]).documents["added"] == 2
        docs = {d.filename: d for d in engine.store.list_documents()}
        pdf_id, md_id = docs["solar_system.pdf"].doc_id, docs["notes.md"].doc_id

        pdf = engine.parsed_document(pdf_id, user_id=1)
        assert pdf.parser == "pdf" and pdf.page_count == 3 and [p.page for p in pdf.pages] == [1, 2, 3]
        assert pdf.text.startswith("# The Sun and the Inner Planets\n")
        assert pdf.content_hash == sha256_text(pdf.text) == docs["solar_system.pdf"].content_hash
        headings = [pdf.text[b.start : b.end] for b in pdf.blocks if b.kind == BlockKind.HEADING]
        assert "# The Sun and the Inner Planets" in headings and len(headings) >= 2
        assert all(b.page in (1, 2, 3) and b.bbox is not None for b in pdf.blocks)
        chunks = engine.store.chunks_of_document(pdf_id)
        assert all(c.content.split()[0] in pdf.text for c in chunks), "the chunks were cut from this text"

        notes = engine.parsed_document(md_id)
        assert (notes.text, notes.parser) == (NOTES, "markdown")
        first_at = notes.created_at
        with pytest.raises(NotFoundError):
            engine.parsed_document(md_id, user_id=2)

        report = engine.ingest([corpus])  # nothing changed: nothing is re-parsed or rewritten
        assert report.documents["unchanged"] == 2
        assert engine.parsed_document(md_id).created_at == first_at

        (corpus / "notes.md").write_text(NOTES_V2, encoding="utf-8")
        assert engine.ingest([corpus]).documents["changed"] == 1
        changed = engine.parsed_document(md_id)
        assert changed.text == NOTES_V2 and changed.content_hash == sha256_text(NOTES_V2) != notes.content_hash
        assert engine.parsed_document(pdf_id).created_at == pdf.created_at, "the PDF did not change"

        engine.delete_document(md_id)
        with pytest.raises(NotFoundError, match="deleted"):
            engine.parsed_document(md_id)
        assert engine.store.parsed_document(md_id) is None
        assert engine.parsed_document(pdf_id).text == pdf.text


def test_a_document_from_before_artifacts_says_how_to_get_one(
    make_engine: Callable[..., Engine], tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "notes.md").write_text(NOTES, encoding="utf-8")
    with make_engine() as engine:
        engine.ingest([corpus])
        (doc,) = engine.store.list_documents()
        _forget_artifact(engine, doc.doc_id)

        engine.ingest([corpus])  # unchanged: not re-parsed, so still none
        with pytest.raises(NotFoundError, match=r"no parsed artifact.*ingest --full.*file changes") as missing:
            engine.parsed_document(doc.doc_id)
        assert missing.value.context == {"doc_id": doc.doc_id, "reason": "no_parsed_artifact"}

        report = engine.ingest([corpus], full=True)
        assert report.documents["changed"] == 1, "--full re-parses every file"
        assert engine.parsed_document(doc.doc_id).text == NOTES
        assert report.chunks["embedded"] == 0, "a full re-ingest of unchanged text re-embeds nothing"


def test_an_unchanged_record_of_a_changed_records_file_gets_its_missing_artifact(
    make_engine: Callable[..., Engine], tmp_path: Path
) -> None:
    """The record is not re-chunked (its text is the same), but the parse of its changed file is kept for it."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    records = corpus / "faq.jsonl"
    records.write_text('{"_id": "a", "text": "Alpha answer."}\n{"_id": "b", "text": "Beta answer."}\n', "utf-8")
    with make_engine() as engine:
        engine.ingest([corpus])
        docs = {d.source_uri.rsplit("#", 1)[-1]: d for d in engine.store.list_documents()}
        _forget_artifact(engine, docs["a"].doc_id)

        records.write_text('{"_id": "a", "text": "Alpha answer."}\n{"_id": "b", "text": "Beta, revised."}\n', "utf-8")
        report = engine.ingest([corpus])
        assert (report.documents["unchanged"], report.documents["changed"]) == (1, 1)
        assert "Alpha answer." in engine.parsed_document(docs["a"].doc_id).text
        assert "Beta, revised." in engine.parsed_document(docs["b"].doc_id).text


def test_a_records_file_with_one_changed_record_moves_the_others_in_a_few_statements(
    make_engine: Callable[..., Engine], tmp_path: Path
) -> None:
    """One changed record among 600 (more than one IN-list batch): the 599 others move to the file's new hash.

    They used to take one UPDATE (and one artifact lookup) each, in their own transaction: ~1 s of a 1% change to
    a 1,000-record file. Now one UPDATE per batch of 500; every record ends on the new hash, so the next run is a
    no-op again.
    """
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    records = corpus / "faq.jsonl"
    lines = [f'{{"_id": "q{i}", "text": "Answer number {i} about the hive."}}' for i in range(600)]
    records.write_text("\n".join(lines) + "\n", "utf-8")
    with make_engine(light_encoder_max_batch=1000) as engine:  # the ONNX encoder: torch is not what is tested
        engine.ingest([corpus])
        lines[7] = '{"_id": "q7", "text": "Answer number 7, revised: the hive swarms in May."}'
        records.write_text("\n".join(lines) + "\n", "utf-8")
        updates: list[str] = []

        def count(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
            if statement.lstrip().upper().startswith("UPDATE DOCUMENTS"):
                updates.append(statement)

        sa_engine = engine.store.engine  # type: ignore[attr-defined]
        event.listen(sa_engine, "before_cursor_execute", count)
        try:
            report = engine.ingest([corpus])
        finally:
            event.remove(sa_engine, "before_cursor_execute", count)
        assert (report.documents["unchanged"], report.documents["changed"]) == (599, 1)
        assert len(updates) <= 6, updates  # 2 batches of unchanged records, then the changed record's own writes
        new_hash = hashlib.sha256(records.read_bytes()).hexdigest()
        assert engine.store.file_hashes(1, 1)[str(records)] == (new_hash, 600)
        again = engine.ingest([corpus])
        assert again.documents["unchanged"] == 600 and again.chunks["embedded"] == 0


def test_the_changed_records_of_a_file_are_purged_from_the_index_together(
    make_engine: Callable[..., Engine], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """30 of 300 records changed: their old chunks leave the index in one delete, not one per record.

    Each changed document used to purge its old copies as it was staged (a read, an index delete and a truth
    write each, ~30 ms a record); the run now purges the set's REMOVED rows once, after the chunking stage.
    """
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    records = corpus / "faq.jsonl"
    lines = [f'{{"_id": "q{i}", "text": "Answer number {i} about the hive."}}' for i in range(300)]
    records.write_text("\n".join(lines) + "\n", "utf-8")
    with make_engine(light_encoder_max_batch=1000) as engine:
        engine.ingest([corpus])
        before = set(engine.store.all_active_chunk_ids())
        for i in range(0, 300, 10):
            lines[i] = f'{{"_id": "q{i}", "text": "Answer number {i}, revised: the hive swarms in May."}}'
        records.write_text("\n".join(lines) + "\n", "utf-8")
        deletes: list[int] = []
        delete_points = engine.index.delete_points

        def counted(collection: str, bucket: int, chunk_ids: list[str]) -> None:
            deletes.append(len(chunk_ids))
            delete_points(collection, bucket, chunk_ids)

        monkeypatch.setattr(engine.index, "delete_points", counted)
        report = engine.ingest([corpus])
        assert (report.documents["unchanged"], report.documents["changed"]) == (270, 30)
        gone = before - set(engine.store.all_active_chunk_ids())
        assert len(gone) >= 30 and deletes == [len(gone)], deletes  # one call (one bucket), was one per record
        assert engine.store.removed_unpurged(user_id=1, set_id=1) == []
        collection = engine.read_collection()
        assert collection is not None
        buckets = range(engine.settings.bucket_count)
        present = {
            cid
            for b in buckets
            if engine.index.has_bucket(collection, b)
            for cid in engine.index.vectors_present(collection, b)
        }
        assert present and not gone & present
        assert engine.verify().ok
