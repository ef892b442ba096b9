"""How document inspection scales: ``python -m bench.inspection [DATABASE_URL]`` (default: a temp SQLite file).

Fills a store with 50,000 documents (2% FAILED, spread over 5 sets) and one document of 13,637 chunks (the runaway
docx of issue 11), then times the reads behind ``docs list`` / ``GET /v1/documents`` (first page, a deep page, a
status filter, a walk over every page) and ``docs show`` (with and without its chunk list). Prints JSON.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import insert, text

from ragindex.clock import utcnow
from ragindex.paging import encode_cursor
from ragindex.pipeline.inspection import describe_document, list_documents
from ragindex.store import schema
from ragindex.store.records import NewDocument
from ragindex.store.sql import SqlTruthStore

DOCS = 50_000
BIG_CHUNKS = 13_637


def _fill(store: SqlTruthStore) -> int:
    now = utcnow()
    rows: list[dict[str, Any]] = [
        {
            "user_id": 1,
            "set_id": 1 + n % 5,
            "source_uri": f"/corpus/{n}.txt",
            "source_key": uuid.uuid4().hex,
            "file_uri": f"/corpus/{n}.txt",
            "file_key": uuid.uuid4().hex,
            "file_hash": "f" * 64,
            "content_hash": "c" * 64,
            "filename": f"{n}.txt",
            "size": 1000,
            "parser": "text",
            "lifecycle_status": "ACTIVE",
            "status": "FAILED" if n % 50 == 0 else "SUCCESS",
            "error": "DocumentLoadError: boom" if n % 50 == 0 else None,
            "chunk_count": 3,
            "metadata": {},
            "created_at": now,
            "updated_at": now,
        }
        for n in range(DOCS)
    ]
    with store.engine.begin() as conn:
        for start in range(0, len(rows), 5000):
            conn.execute(insert(schema.documents), rows[start : start + 5000])
    big = store.upsert_document(
        NewDocument(
            user_id=1,
            set_id=1,
            source_uri="/big.docx",
            file_uri="/big.docx",
            file_hash="b" * 64,
            content_hash="b" * 64,
            filename="big.docx",
            size=73_000,
            parser="docx",
        )
    )
    chunks: list[dict[str, Any]] = [
        {
            "chunk_id": str(uuid.uuid4()),
            "doc_id": big,
            "user_id": 1,
            "set_id": 1,
            "bucket_id": 0,
            "chunk_index": i,
            "chunk_type": "text",
            "unit": "chunk",
            "content": f"chunk {i} " * 40,
            "content_hash": uuid.uuid4().hex,
            "dense_status": "SUCCESS" if i % 3 else "PENDING",
            "bm25_status": "PENDING",
            "lifecycle_status": "ACTIVE",
            "attempts": 0,
            "metadata": {},
            "created_at": now,
            "updated_at": now,
        }
        for i in range(BIG_CHUNKS)
    ]
    with store.engine.begin() as conn:
        for start in range(0, len(chunks), 2000):
            conn.execute(insert(schema.chunks), chunks[start : start + 2000])
        # statistics, as a live database has them: a planner without them sorts the tenant instead of paging
        if store.dialect.startswith("postgres"):
            conn.execute(text("ANALYZE documents; ANALYZE chunks"))
        elif store.dialect.startswith(("mysql", "mariadb")):
            conn.execute(text("ANALYZE TABLE documents, chunks"))
    return big


def _ms(fn: Callable[[], Any], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 2)


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        url = argv[0] if argv else f"sqlite:///{Path(tmp) / 'truth.db'}"
        store = SqlTruthStore(url)
        try:
            big = _fill(store)
            deep = encode_cursor("documents", [45_000])  # a cursor deep in the listing

            def walk() -> int:
                pages, cursor = 0, None
                while True:
                    page = list_documents(store, user_id=1, limit=1000, cursor=cursor)
                    pages += 1
                    cursor = page.next_cursor
                    if cursor is None:
                        return pages

            result = {
                "database": store.dialect,
                "documents": DOCS + 1,
                "first_page_100_ms": _ms(lambda: list_documents(store, user_id=1)),
                "deep_page_100_ms": _ms(lambda: list_documents(store, user_id=1, cursor=deep)),
                "failed_first_page_100_ms": _ms(lambda: list_documents(store, user_id=1, status="FAILED")),
                "set_first_page_100_ms": _ms(lambda: list_documents(store, user_id=1, set_id=3)),
                "walk_all_pages_of_1000_ms": _ms(walk, repeat=1),
                "show_big_document_ms": _ms(lambda: describe_document(store, big)),
                "show_big_document_with_chunks_ms": _ms(lambda: describe_document(store, big, chunks=True), repeat=3),
                "big_document_chunks": BIG_CHUNKS,
            }
        finally:
            store.close()
    sys.stdout.write(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
