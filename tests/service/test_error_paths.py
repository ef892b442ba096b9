"""Issue 23: no API answer shows a server path, errors included.

A failed upload's messages named its blob (``/…/blobs/<user>/<set>/big.txt gives 11 chunks, over the limit``) in
the job's error, its runs, the document's error and the document detail's run and stages, and the 404 of its
parsed markdown; an empty or blank upload's report notes did too. Each now says ``big.txt``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import ServerThread, upload, wait_for_job
from ragindex.config.settings import Settings
from ragindex.service.app import create_app
from ragindex.service.keys import create_key
from ragindex.service.settings import ServiceSettings
from ragindex.service.sources import SourcePaths

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    data_dir = tmp_path_factory.mktemp("paths-data")
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=data_dir,
        chunk_size=200,
        chunk_overlap=20,
        max_chunks_per_document=3,
    )
    app = create_app(settings, ServiceSettings(_env_file=None))  # type: ignore[call-arg]
    server = ServerThread(app)
    server.start()
    try:
        key = create_key(app.state.service.store, user_id=5)["key"]
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as http:
            yield http, data_dir.resolve()
    finally:
        server.stop()


def test_a_failed_upload_names_its_file_never_its_server_path(client: tuple[httpx.Client, Path]) -> None:
    http, data_dir = client
    files = {"big.txt": "word " * 400, "empty.txt": b"", "blank.md": b"  \n\n  ", "ok.txt": "fine text"}
    response = upload(http, 1, files)
    assert response.status_code == 202, response.text
    job = wait_for_job(http, response.json()["job_id"])
    answers = {"job": job, "jobs": http.get("/v1/jobs").json()}
    documents = http.get("/v1/sets/1/documents").json()
    answers["set documents"] = documents
    answers["documents"] = http.get("/v1/documents?status=FAILED").json()
    big = next(d for d in documents["documents"] if d["filename"] == "big.txt")
    answers["detail"] = http.get(f"/v1/documents/{big['doc_id']}").json()
    parsed = http.get(f"/v1/documents/{big['doc_id']}/parsed")
    assert parsed.status_code == 404
    answers["parsed 404"] = parsed.json()

    for name, answer in answers.items():
        text = json.dumps(answer)
        assert str(data_dir) not in text, f"{name} shows a server path: {text[:2000]}"
    limit = "big.txt gives 11 chunks, over the limit of 3 (RAGINDEX_MAX_CHUNKS_PER_DOCUMENT)"
    assert limit in job["error"]
    assert all(limit in r["error"] for r in job["runs"] if r["status"] == "FAILED")
    assert big["status"] == "FAILED" and limit in big["error"]
    assert limit in answers["detail"]["run"]["error"]
    assert limit in answers["parsed 404"]["message"]
    assert "skipped empty file empty.txt" in job["report"]["notes"]
    assert "skipped blank.md: no text" in job["report"]["notes"]


def test_texts_lose_upload_folders_and_source_roots_and_name_the_data_dir(tmp_path: Path) -> None:
    blobs, docs = tmp_path / "data" / "blobs", tmp_path / "srv" / "docs"
    paths = SourcePaths(blobs, [docs], data_dir=tmp_path / "data")
    assert paths.text(f"{blobs}/7/1/sub dir/a b.txt is 9 bytes") == "sub dir/a b.txt is 9 bytes"
    assert paths.text(f"skipped {docs}/guides/setup.md: no text") == "skipped guides/setup.md: no text"
    assert paths.text(f"cannot open Edge shard {tmp_path}/data/index/3: locked") == (
        "cannot open Edge shard <data_dir>/index/3: locked"
    )
    assert paths.text(f"{tmp_path}/srv/docs2/x.md") == f"{tmp_path}/srv/docs2/x.md"  # another folder, untouched
    error = {
        "error": "DocumentLoadError",
        "message": f"{blobs}/7/1/x.pdf: no pages",
        "context": {"path": f"{tmp_path}/elsewhere/x.pdf", "limit": 3},
        "chunks": [{"text": f"a chunk that quotes {blobs}/7/1/x.pdf stays as written"}],
    }
    assert paths.scrub(error) == {
        "error": "DocumentLoadError",
        "message": "x.pdf: no pages",
        "context": {"path": "x.pdf", "limit": 3},
        "chunks": [{"text": f"a chunk that quotes {blobs}/7/1/x.pdf stays as written"}],
    }
