"""``ragindex.client.AsyncClient`` against the same real ``ragindex serve`` (driven by ``asyncio.run``)."""

from __future__ import annotations

import asyncio

import pytest

from ragindex.client import AsyncClient
from ragindex.errors import AuthenticationError, BackendError, NotFoundError, ValidationError
from servekit import CORPUS_SET, CORPUS_USER, Served, free_port

pytestmark = pytest.mark.integration

USER = 21


def test_concurrent_searches_and_probes(served: Served) -> None:
    async def main() -> None:
        async with AsyncClient(served.url, api_key=served.key(CORPUS_USER), timeout=60) as c:
            assert (await c.health()).status == "ok" and (await c.ready()).ready
            assert (await c.me()).user_id == CORPUS_USER
            queries = ["honeybee queen", "chloroplast sugar", "congestion window"]
            results = await asyncio.gather(*(c.search(q, set_id=CORPUS_SET, top_k=1) for q in queries))
            assert [r.hits[0].filename for r in results] == ["bees.txt", "photosynthesis.txt", "tcp.txt"]

    asyncio.run(main())


def test_upload_wait_and_delete(served: Served) -> None:
    async def main() -> None:
        async with AsyncClient(served.url, api_key=served.key(USER), timeout=60) as c:
            job = await c.ingest(4, [("kelp.txt", b"Kelp forests grow in cold, nutrient-rich coastal water.")])
            assert job.status == "succeeded" and job.runs[0].chunk_count
            [doc] = (await c.set_documents(4)).documents
            assert (await c.document(doc.doc_id)).document.filename == "kelp.txt"
            assert (await c.search("kelp forests", set_id=4, mode="bm25")).hits[0].doc_id == doc.doc_id
            assert (await c.delete_document(doc.doc_id)).doc_ids == [doc.doc_id]
            with pytest.raises(NotFoundError):
                await c.parsed_document(doc.doc_id)
            assert (await c.search("kelp forests", set_id=4, mode="bm25")).hits == ()

    asyncio.run(main())


def test_errors_map_as_in_the_sync_client(served: Served) -> None:
    async def main() -> None:
        async with AsyncClient(served.url, api_key=served.key(CORPUS_USER)) as c:
            with pytest.raises(ValidationError) as caught:
                await c.search("queen", set_id=0)
            assert caught.value.field == "set_id"
            with pytest.raises(NotFoundError):
                await c.cancel_job("no-such-job")
        async with AsyncClient(served.url) as anonymous:
            with pytest.raises(AuthenticationError):
                await anonymous.jobs()
        url = f"http://127.0.0.1:{free_port()}"
        async with AsyncClient(url) as down:
            with pytest.raises(BackendError, match=f"{url} is unreachable"):
                await down.health()

    asyncio.run(main())
