"""The contract every SQL truth store backend must pass (SQLite, MySQL/MariaDB, PostgreSQL).

A backend's test module subclasses :class:`TruthStoreContract` and overrides the ``store``
fixture to yield a fresh, empty :class:`~ragindex.store.sql.SqlTruthStore`::

    class TestSqliteTruthStore(TruthStoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            store = SqlTruthStore(f"sqlite:///{tmp_path / 'truth.db'}")
            yield store
            store.close()

Every test talks to the store through its public methods only, so the suite states the
behaviour the pipeline and retrieval layers rely on: idempotent migrations, the chunk-level
diff, the compare-and-set state machine of each vector kind, lifecycle and purge bookkeeping,
the embedding cache, index metadata, pipeline runs, and text that is long or not ASCII.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from ragindex.clock import utcnow
from ragindex.errors import IllegalTransitionError, NotFoundError
from ragindex.hashing import sha256_text
from ragindex.store import protocol
from ragindex.store.migrations import MIGRATIONS, apply_migrations
from ragindex.store.records import ChunkDiff, ChunkLayout, Claim, IndexMeta, NewDocument, RowText
from ragindex.store.sql import SqlTruthStore
from ragindex.store.states import IndexStatus, Lifecycle, RunStatus, Stage, check_transition
from ragindex.types import ChunkDraft, Unit

PENDING, INDEXING, SUCCESS, FAILED = (str(s) for s in IndexStatus)
ROLES: tuple[type, ...] = (
    protocol.DocumentStore,
    protocol.RunStore,
    protocol.ChunkStore,
    protocol.ClaimStore,
    protocol.OwnerStore,
    protocol.CollectionStore,
    protocol.EmbeddingCacheStore,
    protocol.ReconcileStore,
    protocol.TruthStore,
)


def protocol_members(role: type) -> set[str]:
    """The public names a Protocol declares, its bases' included (methods and attributes)."""
    names: set[str] = set()
    for klass in role.__mro__:
        if klass is object or not getattr(klass, "_is_protocol", False):
            continue
        names |= {n for n in vars(klass) if not n.startswith("_")}
        names |= {n for n in getattr(klass, "__annotations__", {}) if not n.startswith("_")}
    return names


ACTIVE, REMOVED = str(Lifecycle.ACTIVE), str(Lifecycle.REMOVED)


def new_document(source_uri: str = "docs/a.txt", *, user_id: int = 1, set_id: int = 1, **fields: Any) -> NewDocument:
    """A :class:`NewDocument` with plausible defaults (``file_uri`` defaults to ``source_uri``)."""
    values: dict[str, Any] = {
        "file_uri": source_uri,
        "file_hash": "f" * 64,
        "content_hash": "c" * 64,
        "filename": source_uri.rsplit("/", 1)[-1],
        "size": 10,
        "parser": "text",
        **fields,
    }
    return NewDocument(user_id=user_id, set_id=set_id, source_uri=source_uri, **values)


def drafts(*texts: str, section: str | None = None) -> list[ChunkDraft]:
    """One draft per text, positioned one after the other, one line each."""
    out: list[ChunkDraft] = []
    start = 0
    for index, text in enumerate(texts):
        out.append(
            ChunkDraft(
                index=index,
                text=text,
                start_char=start,
                end_char=start + len(text),
                start_line=index + 1,
                end_line=index + 1,
                section=section,
                token_count=len(text.split()),
            )
        )
        start += len(text) + 1
    return out


def ingest(
    store: SqlTruthStore,
    texts: Sequence[str],
    *,
    source_uri: str = "docs/a.txt",
    user_id: int = 1,
    set_id: int = 1,
    kinds: Sequence[str] = ("dense", "bm25"),
    file_hash: str = "f" * 64,
    bucket_id: int = 0,
    **doc_fields: Any,
) -> tuple[int, list[str]]:
    """Record a document with one chunk per text; return its doc_id and the added chunk ids in order."""
    doc = new_document(source_uri, user_id=user_id, set_id=set_id, file_hash=file_hash, **doc_fields)
    doc_id = store.upsert_document(doc)
    committed = replace(doc, content_hash=sha256_text("\n".join(texts)))
    diff = store.replace_chunks(doc_id, committed, ChunkLayout(drafts(*texts), bucket_id, kinds))
    return doc_id, list(diff.added)


def rechunk(
    store: SqlTruthStore,
    doc_id: int,
    new: Sequence[ChunkDraft],
    kinds: Sequence[str] = ("dense",),
    *,
    bucket_id: int = 0,
    file_hash: str = "",
    content_hash: str = "",
) -> ChunkDiff:
    """Replace the chunks of a document of tenant 1, set 1 with ``new``, committing the given hashes."""
    doc = new_document(file_hash=file_hash, content_hash=content_hash)
    return store.replace_chunks(doc_id, doc, ChunkLayout(new, bucket_id, kinds))


def statuses(store: SqlTruthStore, chunk_ids: Sequence[str], kind: str = "dense") -> list[str | None]:
    """The ``kind`` status of each chunk, in the order of ``chunk_ids``."""
    return [c.status_of(kind) for c in store.get_chunks(chunk_ids)]


def sectioned(
    store: SqlTruthStore, texts: Sequence[str], *, source_uri: str = "docs/a.md", bucket_id: int = 0
) -> tuple[str, list[str]]:
    """Record a document of one section over one chunk per text (bm25 on the section, dense on the chunks).

    Returns the section's id and the chunks' ids in order.
    """
    chunks = [replace(d, section="Intro", section_index=0) for d in drafts(*texts, section="Intro")]
    section = ChunkDraft(
        index=0,
        text="\n".join(texts),
        start_char=0,
        end_char=chunks[-1].end_char,
        start_line=1,
        end_line=len(texts),
        section="Intro",
        unit=Unit.SECTION,
    )
    doc = new_document(source_uri)
    doc_id = store.upsert_document(doc)
    units: dict[str, tuple[str, ...]] = {Unit.CHUNK: ("dense",), Unit.SECTION: ("bm25",)}
    diff = store.replace_chunks(doc_id, doc, ChunkLayout([section, *chunks], bucket_id, ("dense", "bm25"), units))
    rows = store.chunks_of_document(doc_id, unit=None)
    (section_id,) = [r.chunk_id for r in rows if r.unit == Unit.SECTION]
    assert set(diff.added) == {r.chunk_id for r in rows}
    return section_id, [r.chunk_id for r in rows if r.unit == Unit.CHUNK]


def index_done(store: SqlTruthStore, chunk_ids: Sequence[str], kind: str = "dense") -> None:
    """Claim and mark SUCCESS (the happy path of one stage)."""
    claim = store.claim(kind, chunk_ids)
    assert claim.complete
    assert store.mark_success(claim) == len(chunk_ids)


class SecondStore:
    """Gives a contract the ``second_store`` fixture: a store on the ``store`` fixture's database."""

    @pytest.fixture
    def second_store(self, store: SqlTruthStore) -> Iterator[SqlTruthStore]:
        """Another store on the same database: its own connections, as another process has."""
        other = SqlTruthStore(store.url)
        yield other
        other.close()


class TruthStoreContract:
    """Behaviour every truth store backend must show; subclasses override the ``store`` fixture."""

    @pytest.fixture
    def store(self) -> Iterator[SqlTruthStore]:
        """A fresh, empty, migrated store; close it after the test."""
        raise NotImplementedError("a backend's test class must override the `store` fixture")

    # ------------------------------------------------------------------ the seam
    @pytest.mark.parametrize("role", ROLES, ids=lambda r: r.__name__)
    def test_store_implements_the_role(self, store: SqlTruthStore, role: type) -> None:
        """Every method of each role Protocol exists on the store with the Protocol's parameters.

        mypy proves the same statically for the SQL store; this catches a backend that mypy does not see.
        """
        for name in sorted(protocol_members(role)):
            assert hasattr(store, name), f"{type(store).__name__} lacks {role.__name__}.{name}"
            member = getattr(store, name)
            if callable(member):
                declared = inspect.signature(getattr(role, name))
                actual = inspect.signature(member)
                expected = [(p.name, p.kind) for p in declared.parameters.values() if p.name != "self"]
                assert [(p.name, p.kind) for p in actual.parameters.values()] == expected, f"{role.__name__}.{name}"

    # ------------------------------------------------------------------ migrations
    def test_migrations_are_idempotent(self, store: SqlTruthStore) -> None:
        """Re-opening an existing store applies nothing and keeps the data."""
        doc_id = store.upsert_document(new_document())
        assert apply_migrations(store.engine) == []
        again = SqlTruthStore(store.url)
        try:
            assert apply_migrations(again.engine) == []
            assert again.get_document(doc_id).source_uri == "docs/a.txt"
        finally:
            again.close()

    def test_every_migration_is_recorded(self, store: SqlTruthStore) -> None:
        """A new store has every named migration applied (the head of the schema)."""
        from sqlalchemy import select

        from ragindex.store import schema

        with store.engine.connect() as conn:
            names = sorted(r[0] for r in conn.execute(select(schema.schema_migrations.c.name)))
        assert names == sorted(name for name, _ in MIGRATIONS)

    # ------------------------------------------------------------------ documents
    def test_upsert_document_inserts_then_updates(self, store: SqlTruthStore) -> None:
        """The same (user, set, source_uri) is one document; its fields follow the latest upsert."""
        doc_id = store.upsert_document(new_document(size=10, metadata={"lang": "en"}))
        doc = store.get_document(doc_id)
        assert (doc.lifecycle_status, doc.status, doc.size, doc.metadata) == (ACTIVE, "PROCESSING", 10, {"lang": "en"})
        assert doc.file_hash == "" and doc.content_hash == "", "hashes are committed by replace_chunks only"

        again = store.upsert_document(new_document(size=20, filename="renamed.txt", metadata={"lang": "fr"}))
        assert again == doc_id
        doc = store.get_document(doc_id)
        assert (doc.size, doc.filename, doc.metadata) == (20, "renamed.txt", {"lang": "fr"})

        other = store.upsert_document(new_document("docs/b.txt"))
        other_set = store.upsert_document(new_document(set_id=2))
        other_user = store.upsert_document(new_document(user_id=2))
        assert len({doc_id, other, other_set, other_user}) == 4
        assert [d.doc_id for d in store.list_documents(user_id=1, set_id=1)] == [doc_id, other]
        assert len(store.list_documents()) == 4

    def test_upsert_revives_a_removed_document(self, store: SqlTruthStore) -> None:
        """A REMOVED document that comes back keeps its doc_id and becomes ACTIVE."""
        doc_id, chunk_ids = ingest(store, ["alpha", "beta"])
        assert sorted(store.remove_documents([doc_id])) == sorted(chunk_ids)
        assert store.get_document(doc_id).lifecycle_status == REMOVED
        assert store.list_documents(user_id=1, set_id=1) == []
        assert [d.doc_id for d in store.list_documents(include_removed=True)] == [doc_id]

        assert store.upsert_document(new_document()) == doc_id
        assert store.get_document(doc_id).lifecycle_status == ACTIVE
        diff = rechunk(store, doc_id, drafts("alpha"), file_hash="x", content_hash="y")
        assert diff.kept == () and len(diff.added) == 1, "REMOVED chunks are never revived: new ids, new embeddings"

    def test_get_document_is_scoped_to_the_user(self, store: SqlTruthStore) -> None:
        """Another user's or an unknown doc_id is NotFoundError."""
        doc_id = store.upsert_document(new_document(user_id=7))
        assert store.get_document(doc_id, user_id=7).user_id == 7
        with pytest.raises(NotFoundError):
            store.get_document(doc_id, user_id=8)
        with pytest.raises(NotFoundError):
            store.get_document(doc_id + 1000)

    def test_document_status_and_failed_documents(self, store: SqlTruthStore) -> None:
        """set_document_status records status and error; a failed load keeps its file hash and no chunks."""
        doc_id = store.upsert_document(new_document())
        store.set_document_status(doc_id, "SUCCESS")
        assert store.get_document(doc_id).status == "SUCCESS"

        failed = store.record_failed_document(new_document("docs/bad.pdf", file_hash="b" * 64), "x" * 5000)
        doc = store.get_document(failed)
        assert (doc.status, doc.file_hash, doc.content_hash, doc.chunk_count) == ("FAILED", "b" * 64, "", 0)
        assert doc.error is not None and len(doc.error) == 4000

    def test_file_hashes_and_documents_of_file(self, store: SqlTruthStore) -> None:
        """file_hashes maps each ACTIVE file to (committed hash or '' when unknown or inconsistent, documents)."""
        ingest(store, ["a"], source_uri="docs/a.txt", file_hash="1" * 64)
        records_doc, _ = ingest(store, ["r1"], source_uri="docs/r.jsonl#1", file_uri="docs/r.jsonl", file_hash="2" * 64)
        ingest(store, ["r2"], source_uri="docs/r.jsonl#2", file_uri="docs/r.jsonl", file_hash="2" * 64)
        ingest(store, ["s1"], source_uri="docs/s.jsonl#1", file_uri="docs/s.jsonl", file_hash="3" * 64)
        ingest(store, ["s2"], source_uri="docs/s.jsonl#2", file_uri="docs/s.jsonl", file_hash="4" * 64)
        store.upsert_document(new_document("docs/new.txt"))  # recorded, never chunked
        gone, _ = ingest(store, ["g"], source_uri="docs/gone.txt")
        store.remove_documents([gone])
        ingest(store, ["other"], source_uri="docs/a.txt", set_id=2, file_hash="9" * 64)

        assert store.file_hashes(1, 1) == {
            "docs/a.txt": ("1" * 64, 1),
            "docs/r.jsonl": ("2" * 64, 2),
            "docs/s.jsonl": ("", 2),
            "docs/new.txt": ("", 1),
        }
        assert store.file_hashes(1, 2) == {"docs/a.txt": ("9" * 64, 1)}
        assert store.file_hashes(2, 1) == {}
        store.set_file_hashes("5" * 64, {records_doc: None})
        assert store.file_hashes(1, 1)["docs/r.jsonl"] == ("", 2), "one record moved: the file is not consistent"
        records = store.documents_of_file(1, 1, "docs/r.jsonl")
        assert sorted(d.source_uri for d in records) == ["docs/r.jsonl#1", "docs/r.jsonl#2"]
        assert [d.source_uri for d in store.find_documents_under(1, 1, "docs/")] == [
            "docs/a.txt",
            "docs/r.jsonl#1",
            "docs/r.jsonl#2",
            "docs/s.jsonl#1",
            "docs/s.jsonl#2",
            "docs/new.txt",
        ]

    def test_a_file_with_a_failed_document_has_no_file_hash(self, store: SqlTruthStore) -> None:
        """A FAILED document (load, chunking or index failure) makes its file's hash '': the next sync parses it."""
        ingest(store, ["r1"], source_uri="docs/r.jsonl#1", file_uri="docs/r.jsonl", file_hash="2" * 64)
        second, _ = ingest(store, ["r2"], source_uri="docs/r.jsonl#2", file_uri="docs/r.jsonl", file_hash="2" * 64)
        store.record_failed_document(new_document("docs/bad.json", file_hash="b" * 64), "DocumentLoadError: bad")
        assert store.file_hashes(1, 1) == {"docs/r.jsonl": ("2" * 64, 2), "docs/bad.json": ("", 1)}
        store.set_document_status(second, RunStatus.FAILED, "dense: encoder down")
        assert store.file_hashes(1, 1)["docs/r.jsonl"] == ("", 2)
        store.set_document_status(second, RunStatus.SUCCESS)
        assert store.file_hashes(1, 1)["docs/r.jsonl"] == ("2" * 64, 2)

    # ------------------------------------------------------------------ chunk diff
    def test_replace_chunks_first_time_adds_pending_for_enabled_kinds(self, store: SqlTruthStore) -> None:
        """New content gets new ids, PENDING for enabled kinds and NULL for disabled ones; hashes are committed."""
        doc_id = store.upsert_document(new_document())
        diff = rechunk(
            store,
            doc_id,
            drafts("alpha", "beta", "alpha", section="Intro"),
            ["dense", "bm25"],
            bucket_id=3,
            file_hash="1" * 64,
            content_hash="2" * 64,
        )
        assert diff.kept == () and diff.removed == () and len(set(diff.added)) == 3
        chunks = store.chunks_of_document(doc_id)
        assert [c.chunk_id for c in chunks] == list(diff.added)
        assert [c.content for c in chunks] == ["alpha", "beta", "alpha"]
        first = chunks[0]
        assert (first.dense_status, first.bm25_status, first.sparse_status) == (PENDING, PENDING, None)
        assert (first.bucket_id, first.chunk_index, first.start_line, first.section) == (3, 0, 1, "Intro")
        assert (first.content_hash, first.attempts, first.last_error) == (sha256_text("alpha"), 0, None)
        doc = store.get_document(doc_id)
        assert (doc.file_hash, doc.content_hash, doc.chunk_count) == ("1" * 64, "2" * 64, 3)

    def test_replace_chunks_diffs_by_content_hash(self, store: SqlTruthStore) -> None:
        """Unchanged content keeps its id and statuses (duplicates too), new content is added, the rest REMOVED."""
        doc_id, (a1, b, a2, c) = ingest(store, ["alpha", "beta", "alpha", "gamma"], kinds=["dense", "bm25", "sparse"])
        index_done(store, [a1, a2, b])

        diff = rechunk(
            store,
            doc_id,
            drafts("delta", "alpha", "gamma", "alpha", "alpha"),
            ["dense", "bm25"],
            file_hash="3" * 64,
            content_hash="4" * 64,
        )
        assert diff.kept == (a1, c, a2)
        assert len(diff.added) == 2 and not set(diff.added) & {a1, a2, b, c}
        assert diff.removed == (b,)

        active = store.chunks_of_document(doc_id)
        assert [(x.content, x.chunk_index) for x in active] == [
            ("delta", 0),
            ("alpha", 1),
            ("gamma", 2),
            ("alpha", 3),
            ("alpha", 4),
        ]
        by_id = {x.chunk_id: x for x in active}
        assert by_id[a1].dense_status == SUCCESS and by_id[a2].dense_status == SUCCESS, "kept chunks keep statuses"
        # a kept row takes the kinds enabled now: a kind no longer enabled is NULL (written again if it comes back)
        assert by_id[a1].sparse_status is None and by_id[a1].bm25_status == PENDING
        assert by_id[c].dense_status == PENDING
        new = [by_id[i] for i in diff.added]
        assert all((x.dense_status, x.bm25_status, x.sparse_status) == (PENDING, PENDING, None) for x in new)
        removed = {x.chunk_id: x for x in store.chunks_of_document(doc_id, include_removed=True)}[b]
        assert removed.lifecycle_status == REMOVED
        doc = store.get_document(doc_id)
        assert (doc.file_hash, doc.content_hash, doc.chunk_count) == ("3" * 64, "4" * 64, 5)

    def test_replace_chunks_with_fewer_duplicates_removes_the_extra_copies(self, store: SqlTruthStore) -> None:
        """Two copies of a content and one draft left: one id is kept, the other REMOVED."""
        doc_id, (a1, a2) = ingest(store, ["same", "same"])
        diff = rechunk(store, doc_id, drafts("same"))
        assert diff.kept == (a1,) and diff.added == () and diff.removed == (a2,)
        diff = rechunk(store, doc_id, [])
        assert diff.removed == (a1,) and store.chunks_of_document(doc_id) == []

    def test_replace_chunks_is_idempotent(self, store: SqlTruthStore) -> None:
        """Replacing with the same drafts keeps every id and adds or removes nothing."""
        doc_id, ids = ingest(store, ["one", "two", "three"])
        diff = rechunk(
            store, doc_id, drafts("one", "two", "three"), ["dense", "bm25"], file_hash="f" * 64, content_hash="c" * 64
        )
        assert (diff.kept, diff.added, diff.removed) == (tuple(ids), (), ())

    def test_many_chunks_in_one_document(self, store: SqlTruthStore) -> None:
        """More chunks than one IN-list batch are written, claimed and removed completely."""
        texts = [f"chunk number {i}" for i in range(1203)]
        doc_id, ids = ingest(store, texts)
        assert len(ids) == 1203
        claim = store.claim("dense", ids)
        assert claim.complete and sorted(claim.chunk_ids) == sorted(ids)
        assert store.mark_success(claim) == 1203
        assert store.chunk_count_by_status("dense") == {SUCCESS: 1203}
        assert len(store.remove_chunks(ids)) == 1203
        assert len(store.removed_unpurged()) == 1203

    def test_update_chunk_content_and_metadata(self, store: SqlTruthStore) -> None:
        """Changed content resets the given kinds to PENDING; same content is a no-op; metadata merges."""
        _, (cid,) = ingest(store, ["old"])
        index_done(store, [cid])
        index_done(store, [cid], "bm25")
        assert store.update_chunk_content(cid, "old", ["dense", "bm25"]) is False
        assert store.update_chunk_content(cid, "new", ["dense", "bm25"]) is True
        (chunk,) = store.get_chunks([cid])
        assert (chunk.content, chunk.content_hash, chunk.dense_status, chunk.bm25_status) == (
            "new",
            sha256_text("new"),
            PENDING,
            PENDING,
        )
        store.update_chunk_metadata(cid, {"a": 1})
        store.update_chunk_metadata(cid, {"b": "二"})
        assert store.get_chunks([cid])[0].metadata == {"a": 1, "b": "二"}
        store.remove_chunks([cid])
        with pytest.raises(NotFoundError):
            store.update_chunk_content(cid, "newer", ["dense"])
        with pytest.raises(NotFoundError):
            store.update_chunk_metadata(cid, {"c": 3})

    def test_rewrite_rows_writes_a_chunk_and_its_section_in_one_go(self, store: SqlTruthStore) -> None:
        """New content and context for both rows; a changed row's own kinds go back to PENDING, unclaimed."""
        section, (a, b) = sectioned(store, ["alpha one", "beta two"])
        index_done(store, [a, b])
        index_done(store, [section], "bm25")
        kinds = ("dense", "bm25")
        old_a, old_section = store.get_chunks([a, section])
        edit = RowText(a, "alpha new", None, old_a.content_hash)
        derived = RowText(section, "alpha new\nbeta two", "Guide > Intro", old_section.content_hash)
        assert store.rewrite_rows([edit, derived], kinds) == [a, section]
        row_a, row_b, row_section = store.get_chunks([a, b, section])
        assert (row_a.content, row_a.content_hash, row_a.dense_status, row_a.bm25_status) == (
            "alpha new",
            sha256_text("alpha new"),
            PENDING,
            None,
        )
        assert (row_section.content, row_section.context) == ("alpha new\nbeta two", "Guide > Intro")
        assert row_section.content_hash == sha256_text("Guide > Intro\nalpha new\nbeta two")
        assert (row_section.dense_status, row_section.bm25_status) == (None, PENDING)
        assert (row_b.content, row_b.dense_status) == ("beta two", SUCCESS)  # not given: untouched
        claim = store.claim("dense", [a])
        assert store.rewrite_rows([RowText(a, "alpha newer", None, row_a.content_hash)], kinds) == [a]
        assert store.mark_success(claim) == 0  # the edit took the claim back: a late worker writes nothing
        # the same text again changes nothing
        (row_a,) = store.get_chunks([a])
        assert store.rewrite_rows([RowText(a, "alpha newer", None, row_a.content_hash)], kinds) == []

    def test_rewrite_rows_writes_nothing_over_a_concurrent_change(self, store: SqlTruthStore) -> None:
        """A row whose hash is not the expected one: None and no row written; a row not ACTIVE: NotFoundError."""
        section, (a, b) = sectioned(store, ["alpha", "beta"])
        old_a, old_b = store.get_chunks([a, b])
        assert store.update_chunk_content(a, "edited meanwhile", ["dense"])
        stale = [RowText(b, "beta new", None, old_b.content_hash), RowText(a, "alpha new", None, old_a.content_hash)]
        assert store.rewrite_rows(stale, ["dense"]) is None
        assert [r.content for r in store.get_chunks([a, b])] == ["edited meanwhile", "beta"]
        store.remove_chunks([a])
        (now_a,) = store.get_chunks([a])
        with pytest.raises(NotFoundError):
            store.rewrite_rows(
                [RowText(b, "beta new", None, old_b.content_hash), RowText(a, "x", None, now_a.content_hash)], ["dense"]
            )
        assert store.get_chunks([b])[0].content == "beta"

    def test_section_texts_give_each_active_section_with_its_chunks(self, store: SqlTruthStore) -> None:
        """Each ACTIVE section of the documents with its bucket and its ACTIVE chunks' texts, in document order."""
        first, (a, _b) = sectioned(store, ["alpha", "beta"], source_uri="one.md")
        second, _ = sectioned(store, ["gamma"], source_uri="two.md", bucket_id=1)
        third, _ = sectioned(store, ["delta"], source_uri="three.md")
        store.remove_chunks([a, third])
        (one, two, three) = (store.get_chunks([sid])[0].doc_id for sid in (first, second, third))
        texts = {t.section_id: t for t in store.section_texts([one, two, three, 999])}
        assert set(texts) == {first, second}  # the REMOVED section is left out
        assert (texts[first].bucket_id, texts[first].content, texts[first].chunks) == (0, "alpha\nbeta", ("beta",))
        assert (texts[second].bucket_id, texts[second].chunks) == (1, ("gamma",))
        assert store.section_texts([]) == []

    def test_removed_unpurged_of_one_tenant_set(self, store: SqlTruthStore) -> None:
        """``user_id`` and ``set_id`` narrow the REMOVED rows not yet purged."""
        _, (a,) = ingest(store, ["a"])
        _, (b,) = ingest(store, ["b"], set_id=2)
        _, (c,) = ingest(store, ["c"], user_id=2)
        store.remove_chunks([a, b, c])
        assert [r.chunk_id for r in store.removed_unpurged(user_id=1, set_id=1)] == [a]
        assert sorted(r.chunk_id for r in store.removed_unpurged(user_id=1)) == sorted([a, b])
        assert [r.chunk_id for r in store.removed_unpurged(set_id=1, user_id=2)] == [c]
        store.mark_purged([a])
        assert store.removed_unpurged(user_id=1, set_id=1) == []

    # ------------------------------------------------------------------ claims (compare-and-set)
    def test_claim_moves_pending_to_indexing_once(self, store: SqlTruthStore) -> None:
        """A claim takes PENDING rows; a second claim of the same rows gets nothing."""
        _, ids = ingest(store, ["a", "b", "c"])
        first = store.claim("dense", ids)
        assert isinstance(first, Claim) and first.kind == "dense"
        assert first.complete and sorted(first.chunk_ids) == sorted(ids) and first.requested == 3
        assert statuses(store, ids) == [INDEXING] * 3
        second = store.claim("dense", ids)
        assert second.chunk_ids == () and second.requested == 3 and not second.complete
        assert second.token != first.token

    def test_claim_only_takes_pending_and_failed(self, store: SqlTruthStore) -> None:
        """SUCCESS is never pulled back and INDEXING is not stolen; FAILED is retried."""
        _, (done, failed, busy, fresh) = ingest(store, ["a", "b", "c", "d"])
        claim = store.claim("dense", [done, failed, busy])
        store.mark_success(claim, [done])
        store.mark_failed(claim, [failed], "boom")
        assert statuses(store, [done, failed, busy, fresh]) == [SUCCESS, FAILED, INDEXING, PENDING]

        retry = store.claim("dense", [done, failed, busy, fresh])
        assert sorted(retry.chunk_ids) == sorted([failed, fresh])
        assert not retry.complete and retry.requested == 4
        assert statuses(store, [done, failed, busy, fresh]) == [SUCCESS, INDEXING, INDEXING, INDEXING]

    def test_claim_returns_only_the_owned_subset(self, store: SqlTruthStore) -> None:
        """When another worker holds part of a batch, the claim holds exactly the rest."""
        _, ids = ingest(store, [f"t{i}" for i in range(6)])
        other = store.claim("dense", ids[1:3])
        mine = store.claim("dense", [*ids, "no-such-chunk"])
        assert sorted(mine.chunk_ids) == sorted([ids[0], *ids[3:]])
        assert not mine.complete and mine.requested == 7
        assert store.mark_success(mine) == 4
        assert store.mark_success(other) == 2
        assert statuses(store, ids) == [SUCCESS] * 6

    def test_claim_skips_removed_chunks_and_rejects_unknown_kinds(self, store: SqlTruthStore) -> None:
        """REMOVED chunks are never claimed; an unknown kind is a validation error."""
        from ragindex.errors import ValidationError

        _, (a, b) = ingest(store, ["a", "b"])
        store.remove_chunks([b])
        assert store.claim("dense", [a, b]).chunk_ids == (a,)
        assert store.pending_chunks("dense") == []
        with pytest.raises(ValidationError):
            store.claim("colbert", [a])
        assert store.claim("dense", []).chunk_ids == ()

    def test_dense_claim_resets_bm25_to_pending(self, store: SqlTruthStore) -> None:
        """Re-embedding dense replaces the whole point, so bm25 (and sparse, if enabled) must be written again."""
        _, (a, b) = ingest(store, ["a", "b"], kinds=["dense", "bm25"])
        index_done(store, [a, b])
        index_done(store, [a, b], "bm25")
        assert store.reset_status([a], ["dense"], from_statuses=[SUCCESS]) == 1
        claim = store.claim("dense", [a, b])
        assert claim.chunk_ids == (a,)
        (chunk_a, chunk_b) = store.get_chunks([a, b])
        assert (chunk_a.dense_status, chunk_a.bm25_status, chunk_a.sparse_status) == (INDEXING, PENDING, None)
        assert (chunk_b.dense_status, chunk_b.bm25_status) == (SUCCESS, SUCCESS)

    def test_bm25_claim_requires_dense_success(self, store: SqlTruthStore) -> None:
        """bm25 lives on the dense point: it is neither offered nor claimable before dense is SUCCESS."""
        _, (a, b) = ingest(store, ["a", "b"])
        assert store.pending_chunks("bm25") == []
        assert store.claim("bm25", [a, b]).chunk_ids == ()
        index_done(store, [a])
        assert [c.chunk_id for c in store.pending_chunks("bm25")] == [a]
        claim = store.claim("bm25", [a, b])
        assert claim.chunk_ids == (a,)
        assert store.mark_success(claim) == 1
        assert statuses(store, [a, b], "bm25") == [SUCCESS, PENDING]

    def test_disabled_kind_is_never_pending_nor_claimable(self, store: SqlTruthStore) -> None:
        """A kind that was disabled at ingest (NULL status) is not work."""
        _, (a,) = ingest(store, ["a"], kinds=["dense"])
        index_done(store, [a])
        assert store.pending_chunks("sparse") == [] and store.pending_chunks("bm25") == []
        assert store.claim("sparse", [a]).chunk_ids == ()
        assert store.chunks_needing_work(["dense", "bm25", "sparse"]) == 0

    def test_pending_chunks_filters_orders_and_limits(self, store: SqlTruthStore) -> None:
        """pending_chunks lists claimable ACTIVE chunks in document order, filtered and limited."""
        d1, ids1 = ingest(store, ["a", "b", "c"], source_uri="one.txt")
        d2, ids2 = ingest(store, ["d", "e"], source_uri="two.txt")
        assert [c.chunk_id for c in store.pending_chunks("dense")] == ids1 + ids2
        assert [c.chunk_id for c in store.pending_chunks("dense", limit=2)] == ids1[:2]
        assert [c.chunk_id for c in store.pending_chunks("dense", doc_ids=[d2])] == ids2
        assert [c.chunk_id for c in store.pending_chunks("dense", chunk_ids=[ids1[2], ids2[0]])] == [ids1[2], ids2[0]]
        claim = store.claim("dense", [ids1[0]])
        store.mark_failed(claim, [ids1[0]], "x")
        assert [c.chunk_id for c in store.pending_chunks("dense", statuses=[FAILED])] == [ids1[0]]
        assert [c.chunk_id for c in store.pending_chunks("dense", doc_ids=[d1], max_attempts=1)] == ids1[1:]
        assert [c.chunk_id for c in store.pending_chunks("dense", doc_ids=[d1], max_attempts=2)] == ids1

    # ------------------------------------------------------------------ claim_next (select + claim in one transaction)
    def test_claim_next_takes_claimable_chunks_in_document_order(self, store: SqlTruthStore) -> None:
        """claim_next claims up to ``limit`` claimable chunks at once; nothing left gives an empty claim."""
        _, ids1 = ingest(store, ["a", "b", "c"], source_uri="one.txt")
        _, ids2 = ingest(store, ["d", "e"], source_uri="two.txt")
        first = store.claim_next("dense", 4)
        assert first.complete and first.kind == "dense" and len(first.chunk_ids) == 4
        assert set(first.chunk_ids) <= set(ids1 + ids2)
        assert statuses(store, first.chunk_ids) == [INDEXING] * 4
        second = store.claim_next("dense", 4)
        assert second.complete and set(second.chunk_ids) == set(ids1 + ids2) - set(first.chunk_ids)
        empty = store.claim_next("dense", 4)
        assert empty.chunk_ids == () and empty.requested == 0
        assert store.mark_success(first) == 4 and store.mark_success(second) == 1

    def test_claim_next_follows_the_state_machine(self, store: SqlTruthStore) -> None:
        """claim_next retries FAILED below max_attempts, needs dense SUCCESS for bm25 and resets bm25 on dense."""
        _, (a, b) = ingest(store, ["a", "b"])
        assert store.claim_next("bm25", 10).chunk_ids == ()
        claim = store.claim_next("dense", 10)
        store.mark_failed(claim, [a], "boom")
        store.mark_success(claim, [b])
        assert store.claim_next("dense", 10, max_attempts=1).chunk_ids == ()
        retry = store.claim_next("dense", 10, max_attempts=2)
        assert retry.chunk_ids == (a,)
        store.mark_success(retry)
        bm25 = store.claim_next("bm25", 10)
        assert sorted(bm25.chunk_ids) == sorted([a, b])
        store.mark_success(bm25)
        store.reset_status([a], ["dense"], from_statuses=[SUCCESS])
        assert store.claim_next("dense", 10).chunk_ids == (a,)
        assert statuses(store, [a, b], "bm25") == [PENDING, SUCCESS]

    # ------------------------------------------------------------------ finishing a claim
    def test_mark_success_and_failed_need_the_claim_token(self, store: SqlTruthStore) -> None:
        """A stale or foreign token moves nothing; the owner's token moves only its own rows."""
        _, ids = ingest(store, ["a", "b", "c"])
        claim = store.claim("dense", ids)
        forged = Claim(kind="dense", token="0" * 32, chunk_ids=claim.chunk_ids, requested=3)
        assert store.mark_success(forged) == 0
        assert store.mark_failed(forged, ids, "nope") == 0
        assert statuses(store, ids) == [INDEXING] * 3
        wrong_kind = Claim(kind="bm25", token=claim.token, chunk_ids=claim.chunk_ids, requested=3)
        assert store.mark_success(wrong_kind) == 0
        assert store.mark_success(claim, ids[:1]) == 1
        assert store.mark_success(claim, ids[:1]) == 0, "a finished row is no longer held by the claim"
        assert store.mark_failed(claim, ids[1:], "encoder down") == 2
        assert statuses(store, ids) == [SUCCESS, FAILED, FAILED]

    def test_mark_failed_counts_attempts_and_keeps_the_error(self, store: SqlTruthStore) -> None:
        """Each failure adds one attempt and records the (truncated) error; success clears both."""
        _, (a,) = ingest(store, ["a"])
        for attempt in (1, 2):
            claim = store.claim("dense", [a])
            assert store.mark_failed(claim, [a], f"error {attempt} " + "e" * 5000) == 1
            (chunk,) = store.get_chunks([a])
            assert chunk.attempts == attempt and chunk.dense_status == FAILED
            assert chunk.last_error is not None and chunk.last_error.startswith(f"error {attempt}")
            assert len(chunk.last_error) == 4000
        claim = store.claim("dense", [a])
        store.mark_success(claim)
        (chunk,) = store.get_chunks([a])
        assert (chunk.dense_status, chunk.attempts, chunk.last_error) == (SUCCESS, 0, None)

    def test_release_stale_returns_old_claims_to_pending(self, store: SqlTruthStore) -> None:
        """Only INDEXING claims older than the timeout are released, and their old token is then worthless."""
        _, (a, b, c) = ingest(store, ["a", "b", "c"])
        claim = store.claim("dense", [a, b])
        index_done(store, [c])
        assert store.release_stale("dense", 3600) == []
        assert statuses(store, [a, b, c]) == [INDEXING, INDEXING, SUCCESS]
        assert store.release_stale("bm25", -60) == []
        first = store.release_stale("dense", -60, limit=1)
        rest = store.release_stale("dense", -60)
        assert len(first) == 1 and sorted(first + rest) == sorted([a, b])
        assert store.release_stale("dense", -60) == []
        assert statuses(store, [a, b, c]) == [PENDING, PENDING, SUCCESS]
        assert store.mark_success(claim) == 0
        fresh = store.claim("dense", [a, b])
        assert fresh.complete and store.mark_success(fresh) == 2

    def test_stale_claims_is_a_dry_run_of_release_stale(self, store: SqlTruthStore) -> None:
        """stale_claims lists what release_stale would release, and changes nothing."""
        _, (a, b) = ingest(store, ["a", "b"])
        store.claim("dense", [a])
        assert store.stale_claims("dense", 3600) == []
        assert store.stale_claims("dense", -60) == [a]
        assert len(store.stale_claims("dense", -60, limit=1)) == 1
        assert statuses(store, [a, b]) == [INDEXING, PENDING]
        assert store.release_stale("dense", -60) == [a]
        assert store.stale_claims("dense", -60) == []

    def test_chunk_ids_updated_since(self, store: SqlTruthStore) -> None:
        """Rows written at or after ``t`` are found, to the microsecond (a reindex's catch-up pass)."""
        start = utcnow()
        _, (a, b, c) = ingest(store, ["a", "b", "c"])
        assert sorted(store.chunk_ids_updated_since(start)) == sorted([a, b, c])
        middle = utcnow()
        assert store.chunk_ids_updated_since(middle) == []
        store.update_chunk_content(a, "a2", ["dense"])
        index_done(store, [b])
        store.remove_chunks([c])
        assert sorted(store.chunk_ids_updated_since(middle)) == sorted([a, b]), "REMOVED rows are not listed"

    def test_pending_chunks_of_one_tenant(self, store: SqlTruthStore) -> None:
        """pending_chunks can be restricted to a user and a set."""
        _, mine = ingest(store, ["a", "b"], user_id=1, set_id=1)
        _, other_set = ingest(store, ["c"], user_id=1, set_id=2)
        _, other_user = ingest(store, ["d"], user_id=2, set_id=1)
        assert [c.chunk_id for c in store.pending_chunks("dense", user_id=1, set_id=1)] == mine
        assert [c.chunk_id for c in store.pending_chunks("dense", user_id=1)] == mine + other_set
        assert [c.chunk_id for c in store.pending_chunks("dense", set_id=1)] == mine + other_user

    def test_reset_status(self, store: SqlTruthStore) -> None:
        """reset_status moves ACTIVE chunks of the given kinds from the given statuses back to PENDING."""
        _, (a, b, c) = ingest(store, ["a", "b", "c"])
        index_done(store, [a, b, c])
        index_done(store, [a, b, c], "bm25")
        store.remove_chunks([c])
        assert store.reset_status([a, b, c], ["dense", "bm25"], from_statuses=[FAILED]) == 0
        assert store.reset_status([a, b, c], ["bm25"], from_statuses=[SUCCESS]) == 2
        assert statuses(store, [a, b, c], "bm25") == [PENDING, PENDING, SUCCESS]
        assert statuses(store, [a, b, c], "dense") == [SUCCESS, SUCCESS, SUCCESS]
        failing = store.claim("bm25", [a])
        store.mark_failed(failing, [a], "x")
        assert store.reset_status([a], ["bm25"], from_statuses=[FAILED]) == 1
        assert store.get_chunks([a])[0].attempts == 0

    def test_check_transition_forbids_success_to_indexing(self) -> None:
        """The state machine table refuses SUCCESS -> INDEXING and allows a claim from PENDING."""
        check_transition(IndexStatus.PENDING, IndexStatus.INDEXING)
        check_transition(IndexStatus.FAILED, IndexStatus.INDEXING)
        with pytest.raises(IllegalTransitionError) as info:
            check_transition(IndexStatus.SUCCESS, IndexStatus.INDEXING, chunk_id="c1")
        assert info.value.context["chunk_id"] == "c1"

    # ------------------------------------------------------------------ removal and purge
    def test_remove_documents_and_chunks(self, store: SqlTruthStore) -> None:
        """Removal flips ACTIVE rows to REMOVED once and reports exactly the rows that left search."""
        d1, ids1 = ingest(store, ["a", "b"], source_uri="one.txt")
        d2, ids2 = ingest(store, ["c", "d"], source_uri="two.txt")
        store.remove_chunks([ids1[0]])
        assert store.remove_documents([d1]) == [ids1[1]]
        assert store.remove_documents([d1]) == []
        assert store.remove_documents([]) == []
        assert store.lifecycle_of([*ids1, *ids2, "unknown"]) == {
            ids1[0]: REMOVED,
            ids1[1]: REMOVED,
            ids2[0]: ACTIVE,
            ids2[1]: ACTIVE,
        }
        assert store.remove_chunks([ids2[0], ids1[0], "unknown"]) == [ids2[0]]
        assert store.all_active_chunk_ids() == [ids2[1]]
        assert store.get_document(d2).lifecycle_status == ACTIVE

    def test_removed_unpurged_and_mark_purged(self, store: SqlTruthStore) -> None:
        """REMOVED chunks wait for their index copies to be purged; mark_purged ignores ACTIVE rows."""
        _, (a, b, c) = ingest(store, ["a", "b", "c"])
        assert store.removed_unpurged() == []
        store.remove_chunks([a, b])
        assert sorted(x.chunk_id for x in store.removed_unpurged()) == sorted([a, b])
        assert len(store.removed_unpurged(limit=1)) == 1
        store.mark_purged([a, c])
        assert [x.chunk_id for x in store.removed_unpurged()] == [b]
        store.remove_chunks([c])
        assert sorted(x.chunk_id for x in store.removed_unpurged()) == sorted([b, c])
        store.mark_purged([b, c])
        assert store.removed_unpurged() == []

    # ------------------------------------------------------------------ read side
    def test_backfill_returns_active_chunks_joined_with_their_document(self, store: SqlTruthStore) -> None:
        """Backfill joins chunk and document; REMOVED chunks, REMOVED documents and unknown ids are absent."""
        d1, (a, b) = ingest(store, ["alpha", "beta"], source_uri="docs/one.md", metadata={"author": "Ada"})
        d2, (c,) = ingest(store, ["gamma"], source_uri="docs/two.md")
        store.remove_chunks([b])
        store.remove_documents([d2])
        assert store.backfill([]) == {}
        views = store.backfill([a, b, c, "unknown"])
        assert list(views) == [a]
        view = views[a]
        assert (view.source_uri, view.filename, view.doc_metadata) == ("docs/one.md", "one.md", {"author": "Ada"})
        assert (view.chunk.chunk_id, view.chunk.doc_id, view.chunk.content) == (a, d1, "alpha")

    def test_backfill_tells_a_record_from_a_file(self, store: SqlTruthStore) -> None:
        """A record's key may look like a path: only its file URI (``record:<key>``) tells it from a file's source."""
        _, (a,) = ingest(store, ["a"], source_uri="/srv/notes/a.md")
        _, (r,) = ingest(store, ["r"], source_uri="/looks/like/a/path", file_uri="record:/looks/like/a/path")
        _, (j,) = ingest(store, ["j"], source_uri="/srv/corpus.jsonl#7", file_uri="/srv/corpus.jsonl")
        views = store.backfill([a, r, j])
        assert {cid: view.record for cid, view in views.items()} == {a: False, r: True, j: False}
        assert views[r].source_uri == "/looks/like/a/path"

    def test_get_chunks_keeps_the_requested_order(self, store: SqlTruthStore) -> None:
        """get_chunks returns rows of any lifecycle in request order and skips unknown ids."""
        _, (a, b, c) = ingest(store, ["a", "b", "c"])
        store.remove_chunks([b])
        assert [x.chunk_id for x in store.get_chunks([c, "nope", b, a])] == [c, b, a]

    def test_bucket_views(self, store: SqlTruthStore) -> None:
        """expected_points and buckets_in_use describe what each bucket of the index should hold."""
        _, (a,) = ingest(store, ["a"], source_uri="one.txt", bucket_id=2)
        _, (b, c) = ingest(store, ["b", "c"], source_uri="two.txt", bucket_id=5)
        index_done(store, [b])
        store.remove_chunks([c])
        assert store.buckets_in_use() == [2, 5]
        assert store.expected_points(2) == {a: {"dense": PENDING, "bm25": PENDING, "sparse": None}}
        assert store.expected_points(5) == {b: {"dense": SUCCESS, "bm25": PENDING, "sparse": None}}
        assert store.expected_points(9) == {}
        assert store.chunks_needing_work(["dense"]) == 1
        assert store.chunks_needing_work(["dense", "bm25"]) == 2

    def test_status_counts(self, store: SqlTruthStore) -> None:
        """status_counts counts documents and each kind's chunk statuses per (user, set); REMOVED apart."""
        d1, (a, b, c) = ingest(store, ["a", "b", "c"], source_uri="one.txt")
        store.set_document_status(d1, "SUCCESS")
        ingest(store, ["x"], source_uri="one.txt", user_id=2, set_id=9)
        index_done(store, [a])
        store.remove_chunks([c])
        assert store.status_counts() == {
            "sets": [
                {
                    "user_id": 1,
                    "set_id": 1,
                    "documents": {"SUCCESS": 1},
                    "chunks": {
                        "dense": {SUCCESS: 1, PENDING: 1, REMOVED: 1},
                        "bm25": {PENDING: 2, REMOVED: 1},
                        "sparse": {},
                    },
                },
                {
                    "user_id": 2,
                    "set_id": 9,
                    "documents": {"PROCESSING": 1},
                    "chunks": {"dense": {PENDING: 1}, "bm25": {PENDING: 1}, "sparse": {}},
                },
            ]
        }
        assert store.chunk_count_by_status("dense") == {SUCCESS: 1, PENDING: 2}
        assert b in store.all_active_chunk_ids()

    # ------------------------------------------------------------------ embedding cache
    def test_embedding_cache_round_trips_float32_exactly(self, store: SqlTruthStore) -> None:
        """Vectors come back bit for bit, per model key; large vectors fit (MySQL LONGBLOB)."""
        rng = np.random.default_rng(7)
        small = rng.standard_normal(384).astype(np.float32)
        large = rng.standard_normal(20_000).astype(np.float32)  # 80 KB: more than a MySQL BLOB
        special = np.array([0.0, -0.0, np.inf, -np.inf, 1e-45, np.finfo(np.float32).max], dtype=np.float32)
        store.cache_vectors("model-a", {"h1": small, "h2": large, "h3": special})
        store.cache_vectors("model-a", {})
        got = store.cached_vectors("model-a", ["h1", "h2", "h3", "h4", "h1"])
        assert set(got) == {"h1", "h2", "h3"}
        for key, vector in (("h1", small), ("h2", large), ("h3", special)):
            assert got[key].dtype == np.float32
            assert got[key].tobytes() == vector.tobytes()
        assert store.cached_vectors("model-b", ["h1"]) == {}
        assert store.cached_vectors("model-a", []) == {}

    def test_embedding_cache_never_overwrites(self, store: SqlTruthStore) -> None:
        """An existing (model, content) entry keeps its first vector; new entries in the same call are added."""
        first = np.ones(8, dtype=np.float32)
        store.cache_vectors("m", {"h": first})
        store.cache_vectors("m", {"h": np.zeros(8, dtype=np.float32), "g": np.full(8, 2.0, dtype=np.float64)})
        got = store.cached_vectors("m", ["h", "g"])
        assert got["h"].tobytes() == first.tobytes()
        assert got["g"].tobytes() == np.full(8, 2.0, dtype=np.float32).tobytes()

    def test_keys_compare_exactly(self, store: SqlTruthStore) -> None:
        """Model keys, collection names, job ids and URIs are case and emoji sensitive.

        (Trailing spaces are not covered: MySQL's binary collations still pad spaces.)
        """
        one, two = (np.full(4, v, dtype=np.float32) for v in (1.0, 2.0))
        store.cache_vectors("model", {"h": one})
        store.cache_vectors("Model", {"h": two})
        store.cache_vectors("m🚲", {"h": one})
        store.cache_vectors("m🧪", {"h": two})
        for key, vector in (("model", one), ("Model", two), ("m🚲", one), ("m🧪", two)):
            assert store.cached_vectors(key, ["h"])["h"].tobytes() == vector.tobytes(), key
        assert store.cached_vectors("MODEL", ["h"]) == {}

        meta = IndexMeta("docs", "qdrant-edge", "BUILDING", "fp", 4, None, None, None)
        names = ["docs", "Docs", "docs🚲", "docs🧪"]
        for name in names:
            store.put_index_meta(replace(meta, collection=name))
        assert sorted(m.collection for m in store.list_index_meta()) == sorted(names)
        store.set_active_collection("docs🚲")
        assert [m.collection for m in store.list_index_meta() if m.state == "ACTIVE"] == ["docs🚲"]

        doc_id = store.upsert_document(new_document("A.txt"))
        assert store.upsert_document(new_document("a.txt")) != doc_id
        run = store.start_run(doc_id, job_id="Job")
        store.start_run(doc_id, job_id="job")
        assert [r.run_id for r in store.runs(job_id="Job")] == [run]

    def test_timestamps_keep_sub_second_precision(self, store: SqlTruthStore) -> None:
        """A row written after ``t`` says so (no truncation to whole seconds), as catch-up passes rely on it."""
        for _ in range(3):
            before = utcnow()
            doc_id = store.upsert_document(new_document())
            updated = store.get_document(doc_id).updated_at
            assert before <= updated <= utcnow() + timedelta(seconds=1)
            run_id = store.start_run(doc_id)
            (row,) = [r for r in store.runs(doc_id=doc_id) if r.run_id == run_id]
            assert row.started_at >= before

    # ------------------------------------------------------------------ index metadata
    def test_index_meta_put_get_and_active_collection(self, store: SqlTruthStore) -> None:
        """Index metadata round trips, put replaces, and exactly one collection is ACTIVE."""
        assert store.get_index_meta("c1") is None
        meta = IndexMeta(
            collection="c1",
            backend="qdrant-edge",
            state="BUILDING",
            dense_fingerprint="all-MiniLM-L6-v2|384|normalised",
            dense_dim=384,
            sparse_model=None,
            bm25_config={"tokenizer": "multilingual", "k1": 1.2, "language": "中文"},
            chunker_config={"kind": "fixed", "size": 512, "overlap": 64},
        )
        store.put_index_meta(meta)
        assert store.get_index_meta("c1") == meta
        store.put_index_meta(replace(meta, collection="c2", dense_dim=768, bm25_config=None))
        store.put_index_meta(replace(meta, sparse_model="bge-m3"))
        stored = store.get_index_meta("c1")
        assert stored is not None and stored.sparse_model == "bge-m3"

        created = store.index_meta_created_at("c1")
        assert created is not None and store.index_meta_created_at("nope") is None
        store.put_index_meta(meta)
        assert store.index_meta_created_at("c1") == created, "replacing metadata keeps the creation time"
        store.set_active_collection("c1")
        store.set_active_collection("c2")
        states = {m.collection: m.state for m in store.list_index_meta()}
        assert states == {"c1": "RETIRED", "c2": "ACTIVE"}
        store.set_active_collection("c1")
        assert [m.collection for m in store.list_index_meta() if m.state == "ACTIVE"] == ["c1"]
        store.delete_index_meta("c2")
        assert [m.collection for m in store.list_index_meta()] == ["c1"]

    # ------------------------------------------------------------------ pipeline runs
    def test_pipeline_runs(self, store: SqlTruthStore) -> None:
        """Runs record per-stage status and duration; runs() is newest first, latest_runs() one per document."""
        d1 = store.upsert_document(new_document("one.txt"))
        d2 = store.upsert_document(new_document("two.txt"))
        r1 = store.start_run(d1, job_id="job-1")
        r2 = store.start_run(d2, job_id="job-1", sparse=True, bm25=False)
        run = store.runs(doc_id=d2)[0]
        assert run.run_id == r2 and run.status == "PROCESSING" and run.finished_at is None
        assert run.stages == {
            "loading": "PENDING",
            "chunking": "PENDING",
            "dense": "PENDING",
            "bm25": "SKIPPED",
            "sparse": "PENDING",
        }

        store.set_stage(r1, Stage.CHUNKING, RunStatus.SUCCESS, duration_ms=1.5, chunk_count=3)
        store.set_stage(r1, Stage.DENSE, RunStatus.FAILED, duration_ms=20.25)
        store.finish_run(r1, RunStatus.FAILED, total_ms=30.0, failed_stage="DENSE", error="e" * 5000)
        store.finish_run(r2, RunStatus.SUCCESS, total_ms=5.0)
        r3 = store.start_run(d1, job_id="job-2")

        run1 = next(r for r in store.runs(job_id="job-1") if r.run_id == r1)
        assert run1.stages["chunking"] == "SUCCESS" and run1.stages["dense"] == "FAILED"
        assert run1.durations_ms["chunking"] == pytest.approx(1.5) and run1.durations_ms["dense"] == pytest.approx(
            20.25
        )
        assert run1.chunk_count == 3 and run1.failed_stage == "DENSE" and run1.recover_from_stage == "DENSE"
        assert run1.error is not None and len(run1.error) == 4000 and run1.finished_at is not None

        assert [r.run_id for r in store.runs(doc_id=d1)] == [r3, r1]
        assert [r.run_id for r in store.runs(job_id="job-1")] == [r2, r1]
        assert [r.run_id for r in store.runs(status="FAILED")] == [r1]
        assert [r.run_id for r in store.runs()] == [r3, r2, r1]
        assert [r.run_id for r in store.latest_runs()] == [r3, r2]
        assert [r.run_id for r in store.latest_runs("SUCCESS")] == [r2]
        assert store.latest_runs("FAILED") == []

    # ------------------------------------------------------------------ text that is long or not ASCII
    def test_long_and_unicode_text_round_trips(self, store: SqlTruthStore) -> None:
        """Chunks over 70 KB (beyond MySQL TEXT), Chinese, emoji and long URIs come back unchanged."""
        long_chinese = "数据治理流程与向量索引。" * 6_000  # 72,000 characters, 216 KB of UTF-8
        long_ascii = "x" * 70_001 + "🚲"
        emoji = "Emoji 🚲🧪👩‍🔬 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢"
        uri = "文档/" + "子目录/" * 200 + "数据治理 🚲.md"
        doc_id, ids = ingest(
            store,
            [long_chinese, long_ascii, emoji],
            source_uri=uri,
            filename="数据治理 🚲.md",
            metadata={"标题": "数据治理", "emoji": "🧪"},
        )
        chunks = store.get_chunks(ids)
        assert [c.content for c in chunks] == [long_chinese, long_ascii, emoji]
        assert [c.content_hash for c in chunks] == [sha256_text(t) for t in (long_chinese, long_ascii, emoji)]
        doc = store.get_document(doc_id)
        assert (doc.source_uri, doc.filename, doc.metadata) == (
            uri,
            "数据治理 🚲.md",
            {"标题": "数据治理", "emoji": "🧪"},
        )
        assert store.upsert_document(new_document(uri)) == doc_id, "a long unicode source_uri is found again"
        assert store.file_hashes(1, 1) == {uri: ("f" * 64, 1)}
        view = store.backfill([ids[2]])[ids[2]]
        assert view.chunk.content == emoji and view.filename == "数据治理 🚲.md"
        diff = rechunk(store, doc_id, drafts(emoji, long_chinese))
        assert diff.kept == (ids[2], ids[0]) and diff.removed == (ids[1],)

    def test_unicode_section_and_error_text(self, store: SqlTruthStore) -> None:
        """Sections, errors and run errors keep non-ASCII text."""
        doc_id = store.upsert_document(new_document())
        diff = rechunk(store, doc_id, drafts("正文", section="第一章 🚀"))
        (cid,) = diff.added
        claim = store.claim("dense", [cid])
        store.mark_failed(claim, [cid], "编码器失败 💥")
        (chunk,) = store.get_chunks([cid])
        assert (chunk.section, chunk.last_error) == ("第一章 🚀", "编码器失败 💥")
