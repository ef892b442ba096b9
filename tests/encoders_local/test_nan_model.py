"""A local dense model whose weights are NaN: torch and ONNX both give NaN vectors, and none reaches the index.

The model is a tiny sentence-transformers model built here with its word embeddings set to NaN; the Engine
(SQLite + Qdrant Edge) ingests and searches with it as with any other local model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragindex.config.settings import Settings
from ragindex.encoders.dense.onnx import OnnxDenseEncoder
from ragindex.encoders.dense.sentence_transformers import SentenceTransformerDenseEncoder
from ragindex.engine import Engine
from ragindex.errors import EncodingError, RetrievalEncodingError
from ragindex.testing.tiny_models import build_tiny_sentence_transformer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def nan_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_sentence_transformer(tmp_path_factory.mktemp("models") / "tiny-nan", seed=5, nan=True)


def test_the_unchecked_encoder_does_return_nan(nan_model: Path) -> None:
    # what the check guards against: sentence-transformers passes NaN through without a word
    vectors = SentenceTransformerDenseEncoder(str(nan_model), precision="float32").encode_documents(["bees"])
    assert vectors.shape == (1, 32) and not (vectors == vectors).any()


@pytest.mark.parametrize("light", ["auto", "off"])  # auto: a small ingest and queries run on ONNX
def test_nan_vectors_fail_their_batch_and_never_reach_index_or_cache(
    tmp_path: Path, corpus: Path, nan_model: Path, light: str
) -> None:
    settings = Settings(data_dir=tmp_path / "d", dense_model=str(nan_model), light_encoder=light, bucket_count=1)
    with Engine(settings) as engine:
        report = engine.ingest([corpus])
        assert engine.store.chunk_count_by_status("dense") == {"FAILED": 3}
        dense_failures = [f for f in report.failures if f["stage"] == "DENSE"]
        assert len(dense_failures) == 3 and all("NaN or infinite values" in f["error"] for f in dense_failures)
        runtime = OnnxDenseEncoder if light == "auto" else SentenceTransformerDenseEncoder
        assert isinstance(engine.dense.for_documents(3).inner, runtime)  # the runtime that encoded the ingest

        collection = engine.read_collection()
        assert collection is not None
        present = engine.index.vectors_present(collection, 0)
        assert not any("dense" in names for names in present.values())
        chunks = [c for d in engine.store.list_documents() for c in engine.store.chunks_of_document(d.doc_id)]
        hashes = [c.content_hash for c in chunks]
        for key in {engine.dense.cache_key, engine.dense.for_documents(3).cache_key}:
            assert engine.store.cached_vectors(key, hashes) == {}

        with pytest.raises(RetrievalEncodingError, match="NaN or infinite values"):
            engine.search("queen of the honeybee colony", user_id=1, set_id=1, mode="dense")
        # hybrid needs the dense query vector too: the same error, never a ranking without it
        with pytest.raises(EncodingError):
            engine.search("queen of the honeybee colony", user_id=1, set_id=1, mode="hybrid")
        # BM25 alone does not touch the dense model
        assert engine.search("honeybee queen", user_id=1, set_id=1, mode="bm25").hits
