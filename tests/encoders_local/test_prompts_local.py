"""Query and document prompts on the local runtimes (torch, ONNX) and in the dense fingerprint.

Tiny random sentence-transformers models built here (``build_tiny_sentence_transformer``): with random weights
every token moves the mean-pooled vector, so a vector equal to the reference model's vector of ``"query: " +
text`` (and not of ``text``) proves that exactly that string reached the transformer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from ragindex import factory
from ragindex.config.settings import Settings
from ragindex.encoders.checked import CheckedDenseEncoder
from ragindex.encoders.dense.onnx import OnnxDenseEncoder
from ragindex.encoders.dense.routed import RoutedDenseEncoder
from ragindex.encoders.dense.sentence_transformers import SentenceTransformerDenseEncoder
from ragindex.encoders.prompts import NO_PROMPTS, Prompts
from ragindex.engine import Engine
from ragindex.errors import FingerprintMismatchError
from ragindex.testing.tiny_models import build_tiny_sentence_transformer

pytestmark = pytest.mark.integration

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
E5 = Prompts("query: ", "passage: ")
TEXTS = ["cats purr and chase mice", "the congestion window grows by slow start", "x"]

Reference = Callable[[Sequence[str]], np.ndarray]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("dense-models")
    return {
        "plain": build_tiny_sentence_transformer(root / "tiny-plain", seed=3),
        "declared": build_tiny_sentence_transformer(
            root / "tiny-declared", seed=3, prompts={"query": "query: ", "passage": "passage: "}
        ),
        "e5": build_tiny_sentence_transformer(root / "e5-tiny", seed=3),  # the e5 family by name, declares nothing
    }


@pytest.fixture(scope="module")
def reference(models: dict[str, Path]) -> Reference:
    """The plain model through sentence-transformers directly: the vector of each text exactly as given."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(models["plain"]), device="cpu", local_files_only=True)

    def encode(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(model.encode(list(texts), prompt="", normalize_embeddings=True), dtype=np.float32)

    return encode


def assert_same_vectors(got: np.ndarray, want: np.ndarray, *, min_cosine: float = 0.99999) -> None:
    assert got.shape == want.shape
    assert np.sum(got * want, axis=1).min() >= min_cosine


def assert_other_vectors(got: np.ndarray, want: np.ndarray) -> None:
    assert np.sum(got * want, axis=1).max() < 0.9999


@pytest.mark.parametrize("kind", ["declared", "e5"])
def test_torch_puts_the_prompt_in_front_of_each_side(models: dict[str, Path], reference: Reference, kind: str) -> None:
    encoder = SentenceTransformerDenseEncoder(str(models[kind]), precision="float32")
    assert encoder.prompts == E5
    assert encoder.prompts.source == ("model config" if kind == "declared" else "family e5")
    queries, documents = encoder.encode_queries(TEXTS), encoder.encode_documents(TEXTS)
    assert_same_vectors(queries, reference(["query: " + t for t in TEXTS]))
    assert_same_vectors(documents, reference(["passage: " + t for t in TEXTS]))
    assert_other_vectors(queries, reference(TEXTS))
    assert_other_vectors(documents, queries)


def test_settings_override_the_models_own_prompts(models: dict[str, Path], reference: Reference) -> None:
    settings = Settings(
        dense_model=str(models["declared"]),
        dense_precision="float32",
        light_encoder="off",
        dense_query_prompt="",
        dense_document_prompt="doc: ",
    )
    encoder = factory.build_dense_encoder(settings)
    assert encoder.fingerprint == f"st:{models['declared']}{Prompts('', 'doc: ').fingerprint_suffix}"
    assert_same_vectors(encoder.encode_queries(TEXTS), reference(TEXTS))
    assert_same_vectors(encoder.encode_documents(TEXTS), reference(["doc: " + t for t in TEXTS]))


def test_onnx_applies_the_same_prompts_under_the_same_fingerprint(
    models: dict[str, Path], reference: Reference, onnx_cache_dir: Path
) -> None:
    settings = Settings(dense_model=str(models["declared"]), dense_precision="float32", onnx_cache_dir=onnx_cache_dir)
    routed = factory.build_dense_encoder(settings)
    assert isinstance(routed, RoutedDenseEncoder)
    light = routed.light()
    assert isinstance(light, CheckedDenseEncoder) and isinstance(light.inner, OnnxDenseEncoder)
    assert light.inner.prompts == E5
    assert light.fingerprint == routed.fingerprint == f"st:{models['declared']}{E5.fingerprint_suffix}"
    assert light.cache_key == routed.cache_key == f"{routed.fingerprint}|float32"

    assert_same_vectors(light.encode_queries(TEXTS), reference(["query: " + t for t in TEXTS]), min_cosine=0.9999)
    assert_same_vectors(light.encode_documents(TEXTS), reference(["passage: " + t for t in TEXTS]), min_cosine=0.9999)

    # the query LRU is keyed by the fingerprint, which names the prompts
    routed.encode_queries([TEXTS[0]])
    assert list(routed.queries._items) == [(routed.fingerprint, TEXTS[0])]
    # the export is the model's alone: other prompts reuse it
    other = factory.build_dense_encoder(settings.model_copy(update={"dense_query_prompt": "find: "}))
    assert isinstance(other, RoutedDenseEncoder)
    other_light = other.light()
    assert isinstance(other_light, CheckedDenseEncoder) and isinstance(other_light.inner, OnnxDenseEncoder)
    assert other_light.inner.model_file == light.inner.model_file
    assert other.fingerprint != routed.fingerprint


def test_the_default_model_keeps_its_fingerprint() -> None:
    routed = factory.build_dense_encoder(Settings(light_encoder="off"))
    assert isinstance(routed, RoutedDenseEncoder) and isinstance(routed.heavy, CheckedDenseEncoder)
    heavy = routed.heavy.inner
    assert isinstance(heavy, SentenceTransformerDenseEncoder)
    assert heavy.prompts == NO_PROMPTS
    assert routed.fingerprint == heavy.model_fingerprint == f"st:{MINILM}"  # what indexes built before recorded
    assert routed.cache_key == f"st:{MINILM}|{heavy.precision}"
    remote = factory.build_dense_encoder(Settings(dense_provider="openai", dense_url="http://127.0.0.1:9"))
    try:
        assert remote.fingerprint == f"openai:{MINILM}"
    finally:
        getattr(remote, "close")()  # noqa: B009  # close is the inner client's


def test_an_index_built_with_the_default_model_before_prompts_still_opens(tmp_path: Path, corpus: Path) -> None:
    data = tmp_path / "d"
    with Engine(Settings(data_dir=data)) as engine:
        engine.ingest([corpus])
        (meta,) = engine.store.list_index_meta()
    assert meta.dense_fingerprint == f"st:{MINILM}"  # the literal string main recorded
    with Engine(Settings(data_dir=data)) as again:
        assert again.search("queen of the honeybee colony", user_id=1, set_id=1, mode="dense").hits


def test_changing_a_prompt_is_a_fingerprint_mismatch_that_names_the_fix(
    tmp_path: Path, corpus: Path, models: dict[str, Path]
) -> None:
    data = tmp_path / "d"
    plain = Settings(data_dir=data, dense_model=str(models["plain"]))
    with Engine(plain) as engine:
        engine.ingest([corpus])
        assert engine.search("honeybee queen", user_id=1, set_id=1, mode="dense").hits
        assert engine.store.list_index_meta()[0].dense_fingerprint == f"st:{models['plain']}"

    with Engine(plain.model_copy(update={"dense_query_prompt": "query: "})) as other:
        with pytest.raises(FingerprintMismatchError, match="RAGINDEX_DENSE_QUERY_PROMPT") as info:
            other.search("honeybee queen", user_id=1, set_id=1, mode="dense")
        assert "|prompts=" in info.value.message and "reindex --into" in info.value.message
        (corpus / "new.txt").write_text("A new file must not get vectors of another prompt.", encoding="utf-8")
        with pytest.raises(FingerprintMismatchError):
            other.ingest([corpus])

    with Engine(plain) as again:  # the original prompts (none) still open it
        assert again.search("honeybee queen", user_id=1, set_id=1, mode="dense").hits
