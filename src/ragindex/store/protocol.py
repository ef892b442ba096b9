"""The truth store seam: one Protocol per role, and :class:`TruthStore`, every role together.

Layers above the store type against the role they use (retrieval needs only :class:`ChunkStore`'s
backfill, the cached dense encoder only :class:`EmbeddingCacheStore`); only ``ragindex.factory`` and
the contract kit name a concrete store. Every method raises
:class:`~ragindex.errors.StoreError` when the database fails and
:class:`~ragindex.errors.NotFoundError` where it says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol, Unpack

import numpy as np

from ragindex.store.options import OwnerRelease, PendingFilter, RetryWindow, RunFilter, StagedRun
from ragindex.store.records import (
    ChunkDiff,
    ChunkLayout,
    ChunkRow,
    ChunkText,
    ChunkView,
    Claim,
    DocumentFilter,
    DocumentRow,
    FusionCalibration,
    IndexMeta,
    NewDocument,
    NewOwner,
    OwnerRow,
    ParsedDocument,
    ReconcileTotals,
    RowText,
    RunRow,
    ScoreBatch,
    ScoreWindow,
    SectionText,
    SetDigest,
    TransferScope,
    UnitTally,
)
from ragindex.store.states import CLAIMABLE, RunStatus
from ragindex.types import Document, Unit


class DocumentStore(Protocol):
    """Documents: versions by file and content hash, processing status, removal."""

    def file_hashes(self, user_id: int, set_id: int) -> dict[str, tuple[str, int]]:
        """file_uri -> (committed file hash, documents) of a set's ACTIVE documents.

        The hash is "" when the documents disagree or one of them is FAILED: the file is parsed again.
        """
        ...

    def files_chunked_otherwise(self, user_id: int, set_id: int, fingerprint: str) -> set[str]:
        """file_uris of a set's ACTIVE documents chunked with another chunking fingerprint (to re-chunk)."""
        ...

    def set_file_hashes(self, file_hash: str, documents: Mapping[int, Document | None]) -> None:
        """Move documents to a new file hash (their file changed, their own content did not), in a few statements.

        ``documents``: doc_id -> the document as parsed now (or None), which becomes its parsed artifact if it has
        none of this text yet.
        """
        ...

    def documents_of_file(self, user_id: int, set_id: int, file_uri: str) -> list[DocumentRow]:
        """ACTIVE documents that came from ``file_uri`` (many for a records file)."""
        ...

    def upsert_document(self, doc: NewDocument, *, status: str = RunStatus.PROCESSING) -> int:
        """Record (or revive) a document without committing its hashes; return its doc_id."""
        ...

    def stage_document(
        self, doc: NewDocument, layout: ChunkLayout, **run: Unpack[StagedRun]
    ) -> tuple[int, int, ChunkDiff]:
        """Record a document version, its chunk and section diff and its run in one transaction.

        ``parsed``: the loaded document, kept as the version's parsed artifact (replacing the previous one).
        The run's loading and chunking stages are SUCCESS with their durations. Returns (doc_id, run_id, diff).
        """
        ...

    def record_failed_document(self, doc: NewDocument, error: str) -> int:
        """Record a document whose loading failed (FAILED, error and file hash kept, no chunks)."""
        ...

    def set_document_status(self, doc_id: int, status: str, error: str | None = None) -> None:
        """Set a document's processing status and error."""
        ...

    def get_document(self, doc_id: int, *, user_id: int | None = None) -> DocumentRow:
        """A document by id (scoped to ``user_id`` when given); NotFoundError otherwise."""
        ...

    def list_documents(
        self, *, user_id: int | None = None, set_id: int | None = None, include_removed: bool = False
    ) -> list[DocumentRow]:
        """Documents, optionally of one tenant/set, ordered by doc_id."""
        ...

    def document_page(self, where: DocumentFilter, *, after: int = 0, limit: int = 100) -> list[DocumentRow]:
        """ACTIVE documents ``where`` selects after doc_id ``after``, by doc_id, at most ``limit``."""
        ...

    def find_documents_under(self, user_id: int, set_id: int, prefix: str) -> list[DocumentRow]:
        """ACTIVE documents whose file lies under the directory or file ``prefix``."""
        ...

    def remove_documents(self, doc_ids: Sequence[int]) -> list[str]:
        """Flip documents and their chunks to REMOVED, drop their parsed artifacts; return the ids that left search."""
        ...


class ParsedDocumentStore(Protocol):
    """Parsed artifacts: the markdown (and layout blocks) each document's current version was chunked from.

    Written with the version's chunks by :meth:`DocumentStore.stage_document`, one per document (a new version
    replaces the previous one), and deleted by :meth:`DocumentStore.remove_documents`.
    """

    def parsed_document(self, doc_id: int) -> ParsedDocument | None:
        """The parsed artifact of a document's current version; None when none is recorded (any lifecycle)."""
        ...


class RunStore(Protocol):
    """Pipeline runs: one per document version, with per-stage status and durations."""

    def start_index_runs(
        self, doc_ids: Sequence[int], *, job_id: str | None = None, sparse: bool = False, bm25: bool = True
    ) -> dict[int, int]:
        """Open runs with loading and chunking SKIPPED for documents indexed without being parsed; doc -> run id."""
        ...

    def start_run(self, doc_id: int, *, job_id: str | None = None, sparse: bool = False, bm25: bool = True) -> int:
        """Open a run; every stage PENDING (SKIPPED for disabled kinds)."""
        ...

    def index_outcomes(self, doc_ids: Sequence[int], kinds: Sequence[str]) -> dict[int, dict[str, str | None]]:
        """Per document and kind: None when every ACTIVE chunk is SUCCESS, else the first error seen."""
        ...

    def settle_runs(self, outcomes: Sequence[Mapping[str, Any]]) -> None:
        """Close many runs and set their documents' status in one transaction."""
        ...

    def set_stage(
        self, run_id: int, stage: str, status: str, *, duration_ms: float | None = None, chunk_count: int | None = None
    ) -> None:
        """Record one stage's status (and duration) of a run."""
        ...

    def finish_run(
        self, run_id: int, status: str, *, total_ms: float, failed_stage: str | None = None, error: str | None = None
    ) -> None:
        """Close a run as SUCCESS or FAILED (with the failed stage, where a resume starts)."""
        ...

    def runs(self, **where: Unpack[RunFilter]) -> list[RunRow]:
        """Pipeline runs (of a ``doc_id``, ``job_id`` or ``status``, when given), newest first (at most ``limit``)."""
        ...

    def latest_runs(self, status: str | None = None) -> list[RunRow]:
        """The newest run of every document (optionally only those with ``status``)."""
        ...


class ChunkStore(Protocol):
    """Chunks: the content diff, edits, removal, and every read of them (backfill, verification, counts)."""

    def replace_chunks(self, doc_id: int, doc: NewDocument, layout: ChunkLayout) -> ChunkDiff:
        """Make ``layout``'s drafts a document's ACTIVE chunks, diffing by content hash, and commit ``doc``'s hashes."""
        ...

    def remove_chunks(self, chunk_ids: Sequence[str]) -> list[str]:
        """Flip chunks to REMOVED; return the ids that were ACTIVE."""
        ...

    def update_chunk_content(self, chunk_id: str, content: str, kinds: Iterable[str]) -> bool:
        """Replace a chunk's content (changed: every enabled kind back to PENDING); return whether it changed."""
        ...

    def rewrite_rows(self, texts: Sequence[RowText], kinds: Iterable[str]) -> list[str] | None:
        """Give chunk and section rows new content and context lines, in one transaction.

        Each row is written only while its content hash is its ``expect_hash``; one whose hash changes gets its own
        kinds among ``kinds`` back to PENDING (unclaimed, no attempts). Returns the ids whose hash changed; None, with
        nothing written, when a row was changed concurrently; NotFoundError, nothing written, for a row not ACTIVE.
        """
        ...

    def update_chunk_metadata(self, chunk_id: str, metadata: Mapping[str, Any]) -> None:
        """Merge ``metadata`` into a chunk's metadata (no re-embedding)."""
        ...

    def enable_kinds(self, kinds: Iterable[str], *, unit: str | None = None) -> int:
        """Give every ACTIVE row (of ``unit``) a PENDING copy of each kind it lacks; return how many moved."""
        ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[ChunkRow]:
        """Chunks by id, in any lifecycle, in the order of ``chunk_ids`` (missing ids skipped)."""
        ...

    def backfill(self, chunk_ids: Sequence[str]) -> dict[str, ChunkView]:
        """ACTIVE chunks joined with their document; REMOVED or unknown ids are absent (no ghost hits).

        JSON columns may decode on first use.
        """
        ...

    def chunk_sections(self, chunk_ids: Sequence[str]) -> dict[str, tuple[str, int]]:
        """chunk_id -> (section_id, chunk_index) of the ACTIVE chunks among ``chunk_ids`` that have a section."""
        ...

    def get_tenant_chunk(self, chunk_id: str, *, user_id: int) -> ChunkRow:
        """An ACTIVE chunk of ``user_id``; NotFoundError for unknown, deleted or another tenant's ids alike."""
        ...

    def chunks_of_document(
        self, doc_id: int, *, include_removed: bool = False, unit: str | None = Unit.CHUNK
    ) -> list[ChunkRow]:
        """A document's chunks in order (its sections with ``unit="section"``, every row with ``unit=None``)."""
        ...

    def document_chunk_counts(self, doc_id: int) -> dict[str, dict[str, dict[str, int]]]:
        """Per unit, vector kind and status: how many ACTIVE rows of a document (kinds a unit lacks are absent)."""
        ...

    def section_chunks(self, section_ids: Sequence[str]) -> dict[str, list[ChunkText]]:
        """section_id -> its ACTIVE chunks in document order (sections without live chunks are absent).

        Only id, text and lines are read: a hybrid search reads the chunks of the lexical sections it returns.
        """
        ...

    def live_sections(self, section_ids: Sequence[str]) -> set[str]:
        """The ids among ``section_ids`` that have an ACTIVE chunk (read from an index: no row is decoded)."""
        ...

    def section_texts(self, doc_ids: Sequence[int]) -> list[SectionText]:
        """The ACTIVE sections of these documents, each with its ACTIVE chunks' texts in document order."""
        ...

    def expected_points(self, bucket_id: int) -> dict[str, dict[str, str | None]]:
        """chunk_id -> {kind: status} of every ACTIVE chunk routed to ``bucket_id``."""
        ...

    def lifecycle_of(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        """chunk_id -> lifecycle status (unknown ids absent)."""
        ...

    def all_active_chunk_ids(self) -> list[str]:
        """Ids of every ACTIVE chunk."""
        ...

    def chunk_ids_updated_since(self, since: datetime) -> list[str]:
        """Ids of ACTIVE chunks whose row changed at or after ``since`` (naive UTC)."""
        ...

    def buckets_in_use(self) -> list[int]:
        """Bucket ids that hold any chunk."""
        ...

    def chunk_count_by_status(self, kind: str) -> dict[str, int]:
        """ACTIVE chunk counts per status of ``kind``."""
        ...

    def chunks_needing_work(self, kinds: Iterable[str]) -> int:
        """How many ACTIVE chunks have any of ``kinds`` not yet SUCCESS."""
        ...

    def status_counts(self) -> dict[str, Any]:
        """Documents and chunks per status, per (user_id, set_id)."""
        ...


class ClaimStore(Protocol):
    """The per-chunk, per-kind state machine: claims with tokens, their outcomes, stale claims, purges."""

    def pending_chunks(self, kind: str, **where: Unpack[PendingFilter]) -> list[ChunkRow]:
        """ACTIVE chunks whose ``kind`` copy is in ``statuses``, in document order (bm25/sparse need dense SUCCESS)."""
        ...

    def claim(self, kind: str, chunk_ids: Sequence[str], *, allowed: Sequence[str] = CLAIMABLE) -> Claim:
        """Claim chunks for ``kind`` with one compare-and-set; return what the caller now owns."""
        ...

    def claim_next(self, kind: str, limit: int, *, max_attempts: int | None = None) -> Claim:
        """Select and claim up to ``limit`` claimable chunks in one transaction (a work queue's pop)."""
        ...

    def mark_success(self, claim: Claim, chunk_ids: Sequence[str] | None = None) -> int:
        """INDEXING -> SUCCESS for chunks still held by ``claim``; return how many moved."""
        ...

    def mark_failed(self, claim: Claim, chunk_ids: Sequence[str], error: str) -> int:
        """INDEXING -> FAILED (attempts + 1, last_error) for chunks still held by ``claim``."""
        ...

    def stale_claims(self, kind: str, older_than_seconds: float, *, limit: int | None = None) -> list[str]:
        """Ids that :meth:`release_stale` would release now (read-only)."""
        ...

    def release_stale(
        self, kind: str, older_than_seconds: float, *, limit: int | None = None, max_attempts: int | None = None
    ) -> list[str]:
        """Stale INDEXING claims that no registered owner holds back to PENDING (FAILED at ``max_attempts``)."""
        ...

    def reset_status(self, chunk_ids: Sequence[str], kinds: Iterable[str], *, from_statuses: Sequence[str]) -> int:
        """Move the given kinds of ACTIVE chunks from ``from_statuses`` back to PENDING."""
        ...

    def removed_unpurged(
        self, *, limit: int | None = None, user_id: int | None = None, set_id: int | None = None
    ) -> list[ChunkRow]:
        """REMOVED chunks (of ``user_id`` and ``set_id``, when given) whose index copies are not yet purged."""
        ...

    def mark_purged(self, chunk_ids: Sequence[str]) -> None:
        """Record that the index copies of REMOVED chunks are gone."""
        ...


class OwnerStore(Protocol):
    """Claim owners: one row per claiming process, with a lease its heartbeat renews.

    A store with a registered owner stamps its claim tokens and pipeline runs with the owner id. Claims of a
    gone owner (lease lapsed, or proven dead by the caller) are released with the owner's row, atomically.
    """

    owner_id: str | None

    def register_owner(self, owner: NewOwner, lease_seconds: float) -> str:
        """Record the process this store claims for (leased for ``lease_seconds``); return its owner id."""
        ...

    def renew_lease(self, lease_seconds: float) -> bool:
        """Extend this store's owner's lease to now + ``lease_seconds``; False when its row is gone (taken over)."""
        ...

    def drop_owner(self) -> dict[str, list[str]]:
        """Give back this owner's claims (PENDING, no attempt counted) and delete its row; return the ids per kind."""
        ...

    def list_owners(self) -> list[OwnerRow]:
        """Every registered owner, oldest first."""
        ...

    def claims_by_owner(self) -> dict[str | None, dict[str, int]]:
        """INDEXING claims per owner id and kind (None: claims that no registered owner holds)."""
        ...

    def release_owners(
        self, owner_ids: Sequence[str] | None = None, **how: Unpack[OwnerRelease]
    ) -> dict[str, list[str]]:
        """Release the claims of gone owners (given, every lapsed one, or ``everyone_else``) with their rows.

        Returns the released chunk ids per kind; each release counts an attempt.
        """
        ...

    def held(self, claim: Claim, chunk_ids: Sequence[str] | None = None) -> list[str]:
        """The chunks of ``claim`` (or of ``chunk_ids``) that it still holds (INDEXING under its token)."""
        ...


class CollectionStore(Protocol):
    """Collections: what built each index copy (fingerprints, configs) and which one reads use."""

    def get_index_meta(self, collection: str) -> IndexMeta | None:
        """Metadata of one collection, or None."""
        ...

    def list_index_meta(self) -> list[IndexMeta]:
        """Every collection's metadata."""
        ...

    def active_collections(self) -> list[str]:
        """The names of the ACTIVE collections (one read of one column: every search asks)."""
        ...

    def put_index_meta(self, meta: IndexMeta) -> None:
        """Insert or replace a collection's metadata."""
        ...

    def set_active_collection(self, collection: str) -> None:
        """Make ``collection`` the one reads use, retiring the previous one, atomically."""
        ...

    def delete_index_meta(self, collection: str) -> None:
        """Forget a dropped collection."""
        ...

    def index_meta_created_at(self, collection: str) -> datetime | None:
        """When a collection's metadata was first recorded, or None."""
        ...


class EmbeddingCacheStore(Protocol):
    """The embedding cache: (model key, content hash) -> float32 vector, so no vector is computed twice."""

    def cached_vectors(self, model_key: str, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """content_hash -> vector for the hashes cached under ``model_key``."""
        ...

    def cache_vectors(self, model_key: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Store vectors under ``model_key``; existing entries stay as they are."""
        ...


class ReconcileStore(Protocol):
    """What the periodic reconciler reads and writes: due retries, open work, its single-actor lock, its totals."""

    def due_retries(self, kinds: Sequence[str], delays: Sequence[float], **window: Unpack[RetryWindow]) -> list[str]:
        """Ids of ACTIVE chunks with a ``kinds`` copy PENDING or FAILED whose wait is over, oldest change first.

        A row with ``a`` attempts waits ``delays[a]`` seconds after its last change (``delays[0]``: a PENDING row
        nobody claimed); rows with ``len(delays)`` attempts or more are never due (an explicit reindex retries them).
        """
        ...

    def documents_with_work(self, doc_ids: Sequence[int], kinds: Sequence[str], *, max_attempts: int) -> set[int]:
        """The documents among ``doc_ids`` with a copy PENDING, INDEXING, or FAILED below ``max_attempts``."""
        ...

    def unit_tallies(self, doc_ids: Sequence[int]) -> dict[int, dict[str, UnitTally]]:
        """Per document and unit (``chunk``, ``section``): how its ACTIVE rows stand (documents without rows absent)."""
        ...

    def reconcile_lock(self, owner: str, *, lease_seconds: float) -> AbstractContextManager[bool]:
        """Try, without waiting, to become the one reconciler of this database; the context yields whether it did.

        Released on exit. MySQL/MariaDB and PostgreSQL use a session advisory lock (a dead holder's lock goes with
        its connection); SQLite, a lease row that another owner may take once ``lease_seconds`` have passed, or at
        once when its ``owner`` (``host:pid:...``) is a process of this host that no longer runs.
        """
        ...

    def record_reconcile(
        self, actions: Mapping[str, int], *, retry_failed: int, duration_ms: float, owner: str
    ) -> None:
        """Add one finished pass and its action counts (retry, release, purge, finish) to the totals."""
        ...

    def reconcile_totals(self) -> ReconcileTotals | None:
        """The totals of every pass so far, or None before the first."""
        ...


class ScoreStatsStore(Protocol):
    """The score-drift watch's windows: top-1 and top-10 score histograms per (source, fingerprint)."""

    def record_scores(
        self, batches: Sequence[ScoreBatch], *, window_queries: int, keep_windows: int
    ) -> list[ScoreWindow]:
        """Add each batch to the OPEN window of its key (concurrent processes add up); return the windows closed.

        A window closes at ``window_queries`` searches; the first closed one of a key is its reference; of the other
        closed windows the last ``keep_windows`` are kept.
        """
        ...

    def score_windows(self, *, source: str | None = None, fingerprint: str | None = None) -> list[ScoreWindow]:
        """Every stored window (optionally of one source and/or fingerprint), by source, fingerprint and number."""
        ...

    def clear_score_stats(self, *, source: str | None = None, fingerprint: str | None = None) -> int:
        """Forget windows (optionally of one source and/or fingerprint); return how many rows went."""
        ...


class MetadataFieldStore(Protocol):
    """Each set's metadata field types, and documents looked up by key (records) or by id (payloads)."""

    def field_types(self, user_id: int, set_id: int) -> dict[str, str]:
        """Name -> :class:`~ragindex.metadata.FieldType` value of every metadata field recorded in the set."""
        ...

    def add_field_types(self, user_id: int, set_id: int, types: Mapping[str, str]) -> dict[str, str]:
        """Record the new fields of ``types`` (a known field keeps its type); return the set's types of them."""
        ...

    def documents_by_key(self, user_id: int, set_id: int, keys: Sequence[str]) -> dict[str, DocumentRow]:
        """Key (``source_uri``) -> the set's ACTIVE document with that key, for the keys that exist."""
        ...

    def document_metadata(self, doc_ids: Sequence[int]) -> dict[int, Mapping[str, Any]]:
        """doc_id -> the document's metadata."""
        ...

    def relabel_documents(
        self, changes: Sequence[tuple[int, Mapping[str, Any], str]], *, job_id: str | None, kinds: Sequence[str]
    ) -> dict[int, int]:
        """New metadata for documents whose text is unchanged, their copies PENDING, a run each; doc_id -> run_id."""
        ...


class CalibrationStore(Protocol):
    """Each set's fusion calibration (:mod:`ragindex.retrieval.calibration`)."""

    def fusion_calibration(self, user_id: int, set_id: int) -> FusionCalibration | None:
        """The set's calibration, or None when it has none."""
        ...

    def save_fusion_calibration(self, calibration: FusionCalibration) -> None:
        """Record ``calibration`` as its set's, replacing the one before."""
        ...


class TransferStore(Protocol):
    """Export and import (:mod:`ragindex.transfer`): a consistent snapshot to read, idempotent row writes."""

    def snapshot(self, scope: TransferScope) -> AbstractContextManager[Snapshot]:
        """One read-only transaction at one point in time over the rows of ``scope``."""
        ...

    def set_digest(self, user_id: int, set_id: int) -> SetDigest:
        """The set's ACTIVE documents and chunks: counts and an order-independent digest."""
        ...

    def sets_with_documents(self) -> list[tuple[int, int]]:
        """Every (user_id, set_id) that has an ACTIVE document."""
        ...

    def import_state(self, archive_id: str, user_id: int, set_id: int) -> str | None:
        """IMPORTING or DONE when the archive was (being) imported into the set; None otherwise."""
        ...

    def set_import_state(self, archive_id: str, sets: Sequence[tuple[int, int]], state: str) -> None:
        """Record an import of the archive into ``sets`` as IMPORTING or DONE."""
        ...

    def import_rows(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], doc_ids: dict[int, int]
    ) -> int:
        """Write one batch of archived rows of ``table`` idempotently (``doc_ids``: archive doc id -> this store's)."""
        ...

    def cache_alias(self, source_key: str, target_key: str, content_hashes: Sequence[str]) -> int:
        """Copy cached vectors from one cache key to another where missing; return how many."""
        ...

    def settle_imported_documents(self, doc_ids: Sequence[int]) -> int:
        """Mark the imported documents still PROCESSING (exported mid-ingest) SUCCESS; return how many."""
        ...


class Snapshot(Protocol):
    """The rows of an export's scope, read in one transaction."""

    scope: TransferScope

    def fingerprints(self) -> list[str]:
        """Dense fingerprints of the ACTIVE and BUILDING collections."""
        ...

    def model_keys(self, fingerprints: Sequence[str]) -> list[str]:
        """Embedding-cache keys of ``fingerprints``."""
        ...

    def rows(self, table: str, model_keys: Sequence[str] = ()) -> Iterator[Sequence[Any]]:
        """The table's rows in scope, streamed, in :func:`~ragindex.store.sql.transfer.columns_of` order."""
        ...


class TruthStore(
    DocumentStore,
    MetadataFieldStore,
    ParsedDocumentStore,
    RunStore,
    ChunkStore,
    ClaimStore,
    OwnerStore,
    CollectionStore,
    EmbeddingCacheStore,
    ReconcileStore,
    ScoreStatsStore,
    TransferStore,
    CalibrationStore,
    Protocol,
):
    """Every role of the truth store, as the pipeline and the engine use it."""

    url: str
    dialect: str

    def close(self) -> None:
        """Release pooled connections."""
        ...
