"""Parsed artifacts of the SQL truth store: the markdown and layout blocks of each document's current version.

The artifact is written in the transaction that records the document's chunks (:func:`write_parsed`, called by
``stage_document``), so the text a document's chunks were cut from and the chunks never disagree; a new version
replaces the previous one, and removing a document deletes it (:func:`delete_parsed`). The text, the blocks and
the page starts are stored in parts of at most :data:`PART_CHARS` characters (``parsed_parts``): a MiB-sized
markdown never becomes one statement bigger than a server's packet limit.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, select

from ragindex.store import schema
from ragindex.store.records import ParsedDocument
from ragindex.store.sql.core import SqlCore, batches
from ragindex.types import BBox, Block, BlockKind, Document, PageSpan

PART_CHARS = 256 * 1024
"""Characters per stored part: at most 1 MiB of UTF-8, 2 MiB escaped, far below MariaDB's 16 MiB default packet."""
PARSED = schema.parsed_documents.c
PART = schema.parsed_parts.c
_FIELDS = ("text", "blocks", "pages")
_KINDS = frozenset(str(k) for k in BlockKind)


class SqlParsedDocuments(SqlCore):
    """The parsed-artifact role (:class:`~ragindex.store.protocol.ParsedDocumentStore`)."""

    def parsed_document(self, doc_id: int) -> ParsedDocument | None:
        """The parsed artifact of a document's current version, or None when none is recorded."""
        with self._tx() as conn:
            header = conn.execute(select(schema.parsed_documents).where(PARSED.doc_id == doc_id)).first()
            if header is None:
                return None
            parts = conn.execute(
                select(PART.field, PART.body).where(PART.doc_id == doc_id).order_by(PART.field, PART.seq)
            ).all()
        bodies: dict[str, list[str]] = {name: [] for name in _FIELDS}
        for field, body in parts:
            bodies.setdefault(str(field), []).append(str(body))
        row = header._mapping
        return ParsedDocument(
            doc_id=int(row["doc_id"]),
            content_hash=str(row["content_hash"]),
            parser=str(row["parser"]),
            text="".join(bodies["text"]),
            blocks=tuple(_block(item) for item in _json_list(bodies["blocks"])),
            pages=tuple(PageSpan(int(page), int(start)) for page, start in _json_list(bodies["pages"])),
            page_count=row["page_count"],
            metadata=dict(row["metadata"] or {}),
            created_at=row["created_at"],
        )


def write_parsed(
    conn: Connection, doc_id: int, *, content_hash: str, parsed: Document, now: datetime, replace: bool = True
) -> None:
    """Make ``parsed`` the artifact of ``doc_id`` (replacing its previous version's) in ``conn``'s transaction.

    The caller holds the document's row (it updated or inserted it in this transaction), so two writers of one
    document never interleave here. ``replace=False`` skips deleting the previous artifact (a doc_id inserted now).
    """
    if replace:
        delete_parsed(conn, [doc_id])
    metadata: dict[str, Any] = {}
    if parsed.title:
        metadata["title"] = parsed.title
    if parsed.warnings:
        metadata["warnings"] = list(parsed.warnings)
    conn.execute(
        insert(schema.parsed_documents).values(
            doc_id=doc_id,
            content_hash=content_hash,
            parser=parsed.parser[:32],
            chars=len(parsed.text),
            page_count=len(parsed.pages) or None,
            block_count=len(parsed.blocks),
            metadata=metadata,
            created_at=now,
        )
    )
    bodies = {
        "text": parsed.text,
        "blocks": _compact([_block_list(b) for b in parsed.blocks]) if parsed.blocks else "",
        "pages": _compact([[p.page, p.start] for p in parsed.pages]) if parsed.pages else "",
    }
    rows = [
        {"doc_id": doc_id, "field": field, "seq": seq, "body": part}
        for field, body in bodies.items()
        for seq, part in enumerate(_split(body))
    ]
    # parts go in batches of at most PART_CHARS characters: a driver may fold an executemany into one multi-row
    # INSERT, which must stay under the packet limit too (a small document's parts are one statement)
    for batch in _batches_by_size(rows):
        conn.execute(insert(schema.parsed_parts), batch)


def parsed_versions(conn: Connection, doc_ids: Sequence[int]) -> set[tuple[int, str]]:
    """(doc_id, content_hash) of the artifacts that ``doc_ids`` have (at most one each), in one query."""
    if not doc_ids:
        return set()
    rows = conn.execute(select(PARSED.doc_id, PARSED.content_hash).where(PARSED.doc_id.in_(doc_ids)))
    return {(row[0], row[1]) for row in rows}


def delete_parsed(conn: Connection, doc_ids: Sequence[int]) -> None:
    """Delete the artifacts of ``doc_ids`` (their header and every part), in ``conn``'s transaction."""
    for part in batches(list(doc_ids)):
        conn.execute(delete(schema.parsed_parts).where(PART.doc_id.in_(part)))
        conn.execute(delete(schema.parsed_documents).where(PARSED.doc_id.in_(part)))


def _batches_by_size(rows: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        if batch and size + len(row["body"]) > PART_CHARS:
            yield batch
            batch, size = [], 0
        batch.append(row)
        size += len(row["body"])
    if batch:
        yield batch


def _split(body: str) -> Iterator[str]:
    for start in range(0, len(body), PART_CHARS):
        yield body[start : start + PART_CHARS]


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _json_list(parts: list[str]) -> list[Any]:
    if not parts:
        return []
    value = json.loads("".join(parts))
    return value if isinstance(value, list) else []


def _block_list(block: Block) -> list[Any]:
    """A block as ``[kind, start, end, page, bbox, confidence]`` (the stored form; None where unknown)."""
    bbox = block.bbox.to_list() if block.bbox is not None else None
    confidence = round(block.confidence, 4) if block.confidence is not None else None
    return [str(block.kind), block.start, block.end, block.page, bbox, confidence]


def _block(item: Any) -> Block:
    kind, start, end, page, bbox, confidence = item
    return Block(
        kind=BlockKind(kind) if kind in _KINDS else BlockKind.TEXT,  # a kind this version does not know
        start=int(start),
        end=int(end),
        page=None if page is None else int(page),
        bbox=BBox.from_list(bbox),
        confidence=None if confidence is None else float(confidence),
    )
