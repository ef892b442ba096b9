"""Remote encoders that answer bad vectors, and the prompts a remote dense model is sent.

Real HTTP servers on loopback (``ScriptedServer``, tests/encoders/conftest.py) play an embeddings API and a
bge-m3 ``/encode`` service; a real Engine (SQLite + Qdrant Edge) ingests through them. A bad answer must fail
its batch with an encoding error and leave the index (and the embedding cache) without a vector of it.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragindex.config.settings import Settings
from ragindex.encoders.prompts import Prompts
from ragindex.engine import Engine
from ragindex.errors import RetrievalEncodingError

pytestmark = pytest.mark.integration

DIM = 8


def unit_rows(texts: Sequence[str], dim: int = DIM) -> list[list[float]]:
    """A deterministic unit vector per text."""
    rows = []
    for text in texts:
        vector = np.random.default_rng(zlib.crc32(text.encode("utf-8"))).normal(size=dim)
        rows.append((vector / np.linalg.norm(vector)).tolist())
    return rows


def embeddings(rows: Sequence[Sequence[float]]) -> dict[str, Any]:
    return {"object": "list", "data": [{"index": i, "embedding": list(r)} for i, r in enumerate(rows)]}


def corrupt(how: str, texts: list[str]) -> list[list[float]]:
    """The vectors of ``texts``, the bees chunk's answered badly in the way ``how`` says."""
    if how == "dims":  # a server that serves another model: every vector has another size
        return unit_rows(texts, DIM * 2)
    rows = unit_rows(texts)
    bad = [i for i, t in enumerate(texts) if "Honeybee" in t]
    for i in bad:
        if how == "nan":
            rows[i] = [math.nan] * DIM
        elif how == "inf":
            rows[i] = [math.inf] + rows[i][1:]
        elif how == "zero":
            rows[i] = [0.0] * DIM
    if how == "count" and bad:
        rows = rows[:-1]
    return rows


def dense_points(engine: Engine) -> list[str]:
    collection = engine.read_collection()
    if collection is None or not engine.index.has_bucket(collection, 0):
        return []
    return [cid for cid, names in engine.index.vectors_present(collection, 0).items() if "dense" in names]


def remote_settings(data_dir: Path, url: str, **extra: Any) -> Settings:
    values: dict[str, Any] = {"dense_model": "tiny-remote", "dense_max_retries": 0, "bucket_count": 1, **extra}
    return Settings(data_dir=data_dir, dense_provider="openai", dense_url=url, **values)


@pytest.mark.parametrize(
    ("how", "error"),
    [
        ("nan", "malformed embeddings"),
        ("inf", "malformed embeddings"),
        ("zero", "not unit length"),  # the client normalises what it can: a zero vector stays zero
        ("dims", "16-dimensional"),
        ("count", "answered 2 embeddings for 3 inputs"),
    ],
)
def test_a_bad_dense_answer_fails_its_batch_and_indexes_nothing(
    tmp_path: Path, corpus: Path, scripted: Callable[..., Any], how: str, error: str
) -> None:
    def script(n: int, path: str, body: Any) -> tuple[Any, ...]:
        return 200, embeddings(corrupt(how, body["input"])), 0

    server = scripted(script)
    with Engine(remote_settings(tmp_path / "d", server.url, dense_dimensions=DIM)) as engine:
        report = engine.ingest([corpus])
        assert engine.store.chunk_count_by_status("dense") == {"FAILED": 3}
        assert report.failures and all(f["stage"] == "DENSE" for f in report.failures)
        assert any(error in f["error"] and "EncodingError" in f["error"] for f in report.failures), report.failures
        assert dense_points(engine) == []
        docs = engine.store.list_documents()
        hashes = [c.content_hash for d in docs for c in engine.store.chunks_of_document(d.doc_id)]
        assert engine.store.cached_vectors(engine.dense.cache_key, hashes) == {}
        if how in ("nan", "zero", "dims"):  # the same answer to a query is a retrieval encoding error
            with pytest.raises(RetrievalEncodingError, match=error):
                engine.search("Honeybee colonies", user_id=1, set_id=1, mode="dense")


def test_after_a_bad_batch_a_good_answer_indexes_everything(
    tmp_path: Path, corpus: Path, scripted: Callable[..., Any]
) -> None:
    healthy = {"now": False}

    def script(n: int, path: str, body: Any) -> tuple[Any, ...]:
        texts = body["input"]
        return 200, embeddings(unit_rows(texts) if healthy["now"] else corrupt("zero", texts)), 0

    server = scripted(script)
    with Engine(remote_settings(tmp_path / "d", server.url, dense_dimensions=DIM)) as engine:
        engine.ingest([corpus])
        assert dense_points(engine) == []
        healthy["now"] = True
        engine.repair()
        assert engine.store.chunk_count_by_status("dense") == {"SUCCESS": 3}
        assert len(dense_points(engine)) == 3
        assert engine.search("Honeybee colonies", user_id=1, set_id=1, mode="dense").hits


@pytest.mark.parametrize(
    ("weights", "error"),
    [
        ({"7": 0.5, str(2**32 + 5): 0.25}, "outside [0, 2**32)"),  # an id Qdrant cannot store
        ({"7": "NaN"}, "invalid lexical weight"),
    ],
)
def test_a_bad_sparse_answer_fails_the_sparse_batch_only(
    tmp_path: Path, corpus: Path, scripted: Callable[..., Any], weights: dict[str, Any], error: str
) -> None:
    def script(n: int, path: str, body: Any) -> tuple[Any, ...]:
        if path == "/encode":
            rows = [{k: float(v) for k, v in weights.items()} if "Honeybee" in t else {"7": 0.5} for t in body["texts"]]
            return 200, {"sparse": rows}, 0
        return 200, embeddings(unit_rows(body["input"])), 0

    server = scripted(script)
    settings = remote_settings(
        tmp_path / "d", server.url, sparse_provider="bge_m3_http", sparse_http_endpoint=server.url, section_max_chars=0
    )
    with Engine(settings) as engine:
        report = engine.ingest([corpus])
        assert engine.store.chunk_count_by_status("dense") == {"SUCCESS": 3}
        assert engine.store.chunk_count_by_status("sparse") == {"FAILED": 3}
        assert any(error in f["error"] for f in report.failures if f["stage"] == "SPARSE"), report.failures
        collection = engine.read_collection()
        assert collection is not None
        present = engine.index.vectors_present(collection, 0)
        assert len(present) == 3 and not any("sparse" in names for names in present.values())


def test_a_remote_asymmetric_model_is_sent_its_prompts(
    tmp_path: Path, corpus: Path, scripted: Callable[..., Any]
) -> None:
    sent: list[list[str]] = []

    def script(n: int, path: str, body: Any) -> tuple[Any, ...]:
        sent.append(list(body["input"]))
        return 200, embeddings(unit_rows(body["input"])), 0

    server = scripted(script)
    settings = remote_settings(tmp_path / "d", server.url, dense_model="intfloat/e5-small-v2", dense_dimensions=DIM)
    with Engine(settings) as engine:
        engine.ingest([corpus])
        documents = [t for batch in sent for t in batch]
        assert len(documents) == 3 and all(t.startswith("passage: ") for t in documents), documents
        sent.clear()
        engine.search("Honeybee colonies", user_id=1, set_id=1, mode="dense")
        assert sent == [["query: Honeybee colonies"]]
        expected = f"openai:intfloat/e5-small-v2{Prompts('query: ', 'passage: ').fingerprint_suffix}"
        assert engine.store.list_index_meta()[0].dense_fingerprint == expected == engine.dense.fingerprint

    sent.clear()
    plain = remote_settings(tmp_path / "p", server.url, dense_dimensions=DIM)  # a name of no known family
    with Engine(plain) as engine:
        engine.ingest([corpus])
        assert sorted(t for batch in sent for t in batch) == sorted(p.read_text() for p in corpus.iterdir())
        assert engine.dense.fingerprint == "openai:tiny-remote"
