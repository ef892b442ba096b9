"""The light (ONNX Runtime) dense encoder against the torch one: same vectors, fallback, routing, query LRU.

Real model (the shipped all-MiniLM-L6-v2), real torch and onnxruntime; the export goes to the session's ONNX
cache (tests/conftest.py). That searches and small ingests never import torch: tests/e2e/test_cli_flow.py.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ragindex import factory
from ragindex.config.settings import Settings
from ragindex.encoders.cached import CachedDenseEncoder
from ragindex.encoders.checked import CheckedDenseEncoder
from ragindex.encoders.dense.int8_check import MIN_MEAN_COSINE, Int8Agreement, check_file, keep_agreement
from ragindex.encoders.dense.onnx import OnnxDenseEncoder
from ragindex.encoders.dense.routed import QueryVectorCache, RoutedDenseEncoder
from ragindex.encoders.dense.sentence_transformers import SentenceTransformerDenseEncoder
from ragindex.engine import Engine
from ragindex.language import Script

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def real_texts() -> list[str]:
    """~60 texts from the sample corpus: questions, answers, single sentences and whole files (truncated)."""
    texts: list[str] = []
    for line in (EXAMPLES / "faq.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        texts += [record["title"], record["text"]]
    for name in ("history_of_printing.txt", "honeybee_colonies.txt", "tcp_congestion_control.md"):
        body = (EXAMPLES / name).read_text(encoding="utf-8")
        texts.append(body)  # ~600 tokens: both runtimes truncate at 256
        texts += [s for s in re.split(r"(?<=[.!?])\s+", body) if len(s) > 20][:10]
    texts += [(EXAMPLES / "数据治理.txt").read_text(encoding="utf-8")[:300], "", "  padded  ", "TCP", "ÉCOLE naïve"]
    return texts


@pytest.fixture(scope="module")
def torch_fp32() -> SentenceTransformerDenseEncoder:
    return SentenceTransformerDenseEncoder(MODEL, precision="float32")


@pytest.fixture(scope="module")
def onnx(onnx_cache_dir: Path) -> OnnxDenseEncoder:
    """The export's own graph for queries too (float32), as torch's float32 encoder computes them."""
    light = factory.build_dense_encoder(Settings(onnx_cache_dir=onnx_cache_dir, query_precision="float32"))
    assert isinstance(light, RoutedDenseEncoder)
    encoder = light.light()
    assert isinstance(encoder, CheckedDenseEncoder) and isinstance(encoder.inner, OnnxDenseEncoder)
    return encoder.inner


def test_onnx_vectors_match_torch_float32(torch_fp32: SentenceTransformerDenseEncoder, onnx: OnnxDenseEncoder) -> None:
    texts = real_texts()
    assert len(texts) >= 50
    reference = torch_fp32.encode_queries(texts)
    light = onnx.encode_queries(texts)
    assert light.shape == reference.shape == (len(texts), 384) and light.dtype == np.float32
    cosines = np.sum(reference * light, axis=1)
    assert cosines.min() >= 0.9999, texts[int(cosines.argmin())]
    assert np.allclose(np.linalg.norm(light, axis=1), 1.0, atol=1e-5)
    # a text alone (no padding) gives the vector it gets in a padded batch
    alone = np.stack([onnx.encode_documents([t])[0] for t in texts[:8]])
    assert np.sum(alone * light[:8], axis=1).min() >= 0.99999


def test_onnx_shares_the_fingerprint_not_the_precision_key(
    torch_fp32: SentenceTransformerDenseEncoder, onnx: OnnxDenseEncoder
) -> None:
    assert onnx.fingerprint == torch_fp32.fingerprint == f"st:{MODEL}"
    assert onnx.cache_key == torch_fp32.cache_key == f"st:{MODEL}|float32"
    assert onnx.dimension == 384 and onnx.languages == torch_fp32.languages


def test_a_failed_export_falls_back_to_torch_with_one_warning(
    tmp_path: Path, corpus: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the cache dir should be: every write under it fails, even as root")
    settings = Settings(data_dir=tmp_path / "data", onnx_cache_dir=blocked / "onnx")
    with caplog.at_level(logging.WARNING), Engine(settings) as engine:
        report = engine.ingest([corpus])
        first = engine.search("queen bee and drones", user_id=1, set_id=1, mode="dense")
        second = engine.search("slow start window", user_id=1, set_id=1, mode="dense")
        assert isinstance(engine.dense, RoutedDenseEncoder) and engine.dense.light() is None
    assert report.chunks["embedded"] == 3
    assert first.hits and "Honeybee" in first.hits[0].text
    assert second.hits and "TCP" in second.hits[0].text
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "light (ONNX) dense encoder is unavailable" in warnings[0], warnings
    assert not list(tmp_path.glob("**/*.onnx*"))


class CountingEncoder:
    """Stands in for the encoders behind the router: counts the texts it is asked to encode."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.calls: list[list[str]] = []

    fingerprint = "st:counting"
    dimension = 4
    languages = frozenset({Script.LATIN})

    @property
    def cache_key(self) -> str:
        return f"{self.fingerprint}|{self.key}"

    def _vectors(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        out = np.array([[len(t) + 1.0, 1.0, 0.0, 0.0] for t in texts], dtype=np.float32).reshape(-1, 4)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._vectors(texts)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._vectors(texts)


def test_query_lru_returns_the_same_vector_without_encoding_again() -> None:
    heavy, light = CountingEncoder("heavy"), CountingEncoder("light")
    router = RoutedDenseEncoder(heavy, lambda: light, query_cache=2)
    first = router.encode_queries(["bees", "tcp"])
    again = router.encode_queries(["tcp", "bees"])
    assert light.calls == [["bees", "tcp"]] and heavy.calls == []
    assert np.array_equal(again, first[::-1])
    again[0, 0] = 42.0  # the caller's copy: the cached vector is untouched
    assert router.encode_queries(["tcp"])[0, 0] != 42.0
    router.encode_queries(["soil"])  # evicts the least recently used ("bees")
    router.encode_queries(["bees"])
    assert light.calls[1:] == [["soil"], ["bees"]]
    assert router.queries.hits == 3
    assert router.encode_queries([]).shape == (0, 4)


def test_query_cache_of_size_zero_keeps_nothing() -> None:
    cache = QueryVectorCache(0)
    cache.put(("fp", "x"), np.ones(3, dtype=np.float32))
    assert cache.get(("fp", "x")) is None


def test_small_ingests_use_the_light_encoder_and_its_cache_key() -> None:
    heavy, light = CountingEncoder("bfloat16"), CountingEncoder("float32")
    router = RoutedDenseEncoder(heavy, lambda: light, max_batch=3)
    assert router.for_documents(3) is light and router.for_documents(4) is heavy
    cache: dict[tuple[str, str], np.ndarray] = {}

    class Store:
        def cached_vectors(self, key: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
            return {h: cache[key, h] for h in hashes if (key, h) in cache}

        def cache_vectors(self, key: str, vectors: dict[str, np.ndarray]) -> None:
            cache.update({(key, h): v for h, v in vectors.items()})

    cached = CachedDenseEncoder(router, Store())  # type: ignore[arg-type]
    cached.plan(2)
    cached.encode_documents(["a", "b"], ["ha", "hb"])
    cached.plan(10)
    cached.encode_documents(["c"], ["hc"])
    assert light.calls == [["a", "b"]] and heavy.calls == [["c"]]
    assert set(cache) == {("st:counting|float32", "ha"), ("st:counting|float32", "hb"), ("st:counting|bfloat16", "hc")}
    # a small run takes what the bulk runtime cached for the same model (a file restored after an edit)
    cached.plan(2)
    restored = cached.encode_documents(["c", "d"], ["hc", "hd"])
    assert light.calls[1:] == [["d"]] and heavy.calls == [["c"]]
    assert np.array_equal(restored[0], cache["st:counting|bfloat16", "hc"])
    assert ("st:counting|float32", "hc") not in cache and cached.reused == 1
    # the bulk runtime does not take the small runtime's vectors (it does not know their key without loading it)
    cached.plan(10)
    cached.encode_documents(["a"], ["ha"])
    assert heavy.calls[1:] == [["a"]]


def test_light_encoder_off_keeps_torch_for_everything() -> None:
    off = factory.build_dense_encoder(Settings(light_encoder="off"))
    assert isinstance(off, RoutedDenseEncoder) and off.light() is None
    assert isinstance(off.heavy, CheckedDenseEncoder) and isinstance(off.heavy.inner, SentenceTransformerDenseEncoder)


def _exported(cache: Path, onnx: OnnxDenseEncoder) -> Path:
    """An ONNX cache under ``cache`` whose model folder holds the export already (a link): the folder."""
    folder = cache / onnx.model_file.parent.name
    folder.mkdir(parents=True)
    (folder / "model.onnx").symlink_to(onnx.model_file)
    return folder


def _light(settings: Settings) -> OnnxDenseEncoder:
    router = factory.build_dense_encoder(settings)
    assert isinstance(router, RoutedDenseEncoder)
    encoder = router.light()
    assert isinstance(encoder, CheckedDenseEncoder) and isinstance(encoder.inner, OnnxDenseEncoder)
    return encoder.inner


def test_int8_queries_stay_close_to_float32_and_documents_stay_float32(
    onnx: OnnxDenseEncoder, onnx_cache_dir: Path
) -> None:
    int8 = _light(Settings(onnx_cache_dir=onnx_cache_dir, query_precision="int8"))
    assert int8.query_file == onnx.model_file.with_name("model.int8.onnx") and int8.model_file == onnx.model_file
    assert int8.query_file.stat().st_size < onnx.model_file.stat().st_size / 3
    texts = real_texts()
    cosines = np.sum(int8.encode_queries(texts) * onnx.encode_queries(texts), axis=1)
    # measured: mean 0.990, lowest 0.962 (a short text); a broken graph gives ~0 or 1
    assert cosines.min() >= 0.95 and cosines.mean() >= 0.985, texts[int(cosines.argmin())]
    assert cosines.max() < 0.99999  # another graph really encoded them
    # documents: the float32 graph, the same vectors (and cache key) as the float32 setting's
    assert np.array_equal(int8.encode_documents(texts[:8]), onnx.encode_documents(texts[:8]))
    assert int8.cache_key == onnx.cache_key
    # the same query ranks the same passages first
    passages = [t for t in texts if len(t) > 200][:12]
    query = ["how does a honeybee colony choose a new queen"]
    docs = onnx.encode_documents(passages)
    assert np.argmax(docs @ int8.encode_queries(query)[0]) == np.argmax(docs @ onnx.encode_queries(query)[0])
    # a second build reads the same file and writes nothing
    mtime = int8.query_file.stat().st_mtime_ns
    again = _light(Settings(onnx_cache_dir=onnx_cache_dir, query_precision="int8"))
    assert again.query_file == int8.query_file and int8.query_file.stat().st_mtime_ns == mtime
    assert not [p.name for p in int8.query_file.parent.iterdir() if p.name.endswith(".tmp")]


def test_an_int8_query_vector_does_not_depend_on_the_queries_encoded_with_it(
    onnx: OnnxDenseEncoder, onnx_cache_dir: Path
) -> None:
    """The int8 graph quantizes activations with one scale per call: batched, a vector moved (cosine ~0.990)."""
    int8 = _light(Settings(onnx_cache_dir=onnx_cache_dir, query_precision="int8"))
    query = "when is honey harvested"
    alone = int8.encode_queries([query])[0]
    crowd = ["basalt columns", "the relation between vitamin d levels and bone density in older adults " * 3]
    for others in ([crowd[0]], [crowd[1]], crowd * 20):
        batch = int8.encode_queries([*others, query, *others])
        assert np.array_equal(batch[len(others)], alone)
        assert np.array_equal(batch[0], int8.encode_queries([others[0]])[0])
    # documents (the float32 graph) are still encoded in batches, and equal to one at a time
    docs = int8.encode_documents([query, *crowd])
    assert np.allclose(docs[0], int8.encode_documents([query])[0], atol=1e-6)


def test_int8_precision_encodes_every_chunk_and_query_with_the_int8_copy(
    onnx: OnnxDenseEncoder, onnx_cache_dir: Path
) -> None:
    """RAGINDEX_DENSE_PRECISION=int8: chunks and queries through the int8 copy, one text a call, at any ingest size."""
    # the default size limit (256 chunks): only the setting a user changes, and an ingest far above the limit
    router = factory.build_dense_encoder(Settings(onnx_cache_dir=onnx_cache_dir, dense_precision="int8"))
    assert isinstance(router, RoutedDenseEncoder) and not router.bulk(100_000)
    picked = router.for_documents(100_000)
    assert isinstance(picked, CheckedDenseEncoder) and isinstance(picked.inner, OnnxDenseEncoder)
    int8 = picked.inner
    assert int8.document_file == int8.query_file == onnx.model_file.with_name("model.int8.onnx")
    # the same vector space (no reindex to switch), its own cache entries
    assert int8.fingerprint == onnx.fingerprint and int8.cache_key == f"{onnx.fingerprint}|int8" != onnx.cache_key
    texts = [t for t in real_texts() if t.strip()]
    docs = int8.encode_documents(texts)
    cosines = np.sum(docs * onnx.encode_documents(texts), axis=1)
    # whole SciFact abstracts: mean 0.995, lowest 0.990 (docs/evaluation.md); a broken graph gives ~0 or 1
    assert cosines.min() >= 0.95 and cosines.mean() >= 0.985, texts[int(cosines.argmin())]
    assert cosines.max() < 0.99999  # the int8 graph really encoded them
    # one text a call: a chunk's vector does not depend on the chunks encoded beside it
    assert np.array_equal(docs[3], int8.encode_documents([texts[3]])[0])
    assert np.array_equal(router.encode_documents(texts[:4]), docs[:4])  # direct calls take the int8 copy too
    assert np.array_equal(router.encode_queries(texts[:2]), int8.encode_queries(texts[:2]))


def test_int8_precision_needs_the_local_model_on_the_cpu_through_onnx() -> None:
    for wrong in ({"light_encoder": "off"}, {"dense_device": "cuda"}):
        with pytest.raises(ValueError, match="dense_precision=int8 runs the local model's ONNX export"):
            Settings(dense_precision="int8", **wrong)


def test_a_failed_int8_write_keeps_float32_queries_with_one_warning(
    tmp_path: Path, onnx: OnnxDenseEncoder, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "onnx"
    folder = _exported(cache, onnx)
    (folder / "model.int8.onnx").mkdir()  # the rename into place fails, even as root
    with caplog.at_level(logging.WARNING):
        light = _light(Settings(onnx_cache_dir=cache, query_precision="int8"))
    assert light.query_file == folder / "model.onnx"
    assert np.array_equal(light.encode_queries(["slow start"]), onnx.encode_queries(["slow start"]))
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "queries are encoded in float32" in warnings[0], warnings
    assert sorted(p.name for p in folder.iterdir()) == ["model.int8.onnx", "model.onnx"]  # no temporary file left


def test_auto_encodes_queries_with_the_int8_copy_once_it_passed_its_check(
    onnx: OnnxDenseEncoder, onnx_cache_dir: Path
) -> None:
    auto = _light(Settings(onnx_cache_dir=onnx_cache_dir))  # the default
    assert auto.query_file == onnx.model_file.with_name("model.int8.onnx") and auto.model_file == onnx.model_file
    figures = json.loads(check_file(auto.query_file).read_text())
    # measured on the probe queries (all-MiniLM-L6-v2: mean 0.993, lowest 0.981); a broken copy gives ~0
    assert (
        MIN_MEAN_COSINE <= figures["mean_cosine"] < 0.99999 and figures["int8_bytes"] == auto.query_file.stat().st_size
    )
    kept = check_file(auto.query_file).stat().st_mtime_ns
    again = _light(Settings(onnx_cache_dir=onnx_cache_dir))
    assert (
        again.query_file == auto.query_file and check_file(auto.query_file).stat().st_mtime_ns == kept
    )  # not measured again
    float32 = _light(Settings(onnx_cache_dir=onnx_cache_dir, query_precision="float32"))
    assert float32.query_file == onnx.model_file


def test_an_int8_copy_that_strays_from_float32_is_used_only_when_int8_is_asked_for(
    tmp_path: Path, onnx: OnnxDenseEncoder, caplog: pytest.LogCaptureFixture
) -> None:
    folder = _exported(tmp_path / "onnx", onnx)
    int8 = _light(Settings(onnx_cache_dir=tmp_path / "onnx", query_precision="int8")).query_file
    assert int8 == folder / "model.int8.onnx"
    # the figures a copy that breaks the model would have kept (per-tensor scales on MiniLM: mean 0.959)
    keep_agreement(int8, Int8Agreement(mean_cosine=0.959, min_cosine=0.924, texts=32))
    with caplog.at_level(logging.INFO, logger="ragindex"):
        auto = _light(Settings(onnx_cache_dir=tmp_path / "onnx"))
    assert auto.query_file == folder / "model.onnx"
    assert np.array_equal(auto.encode_queries(["slow start"]), onnx.encode_queries(["slow start"]))
    assert any("strays" in r.getMessage() and r.levelno == logging.INFO for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        asked = _light(Settings(onnx_cache_dir=tmp_path / "onnx", query_precision="int8"))
    assert asked.query_file == int8
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "stray from float32" in warnings[0], warnings
    # figures kept for another file (a copy written again since) are measured again, and this copy passes
    keep_agreement(int8, Int8Agreement(mean_cosine=0.5, min_cosine=0.5, texts=32))
    figures = json.loads(check_file(int8).read_text())
    check_file(int8).write_text(json.dumps({**figures, "int8_bytes": figures["int8_bytes"] + 1}))
    assert _light(Settings(onnx_cache_dir=tmp_path / "onnx")).query_file == int8
    assert json.loads(check_file(int8).read_text())["mean_cosine"] >= MIN_MEAN_COSINE


def test_auto_with_a_cache_it_cannot_write_keeps_float32_queries_without_a_warning(
    tmp_path: Path, onnx: OnnxDenseEncoder, caplog: pytest.LogCaptureFixture
) -> None:
    folder = _exported(tmp_path / "onnx", onnx)
    (folder / "model.int8.onnx").mkdir()  # the rename into place fails, even as root
    with caplog.at_level(logging.WARNING):
        light = _light(Settings(onnx_cache_dir=tmp_path / "onnx"))
    assert light.query_file == folder / "model.onnx"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_damaged_int8_copy_is_written_again(
    tmp_path: Path, onnx: OnnxDenseEncoder, caplog: pytest.LogCaptureFixture
) -> None:
    folder = _exported(tmp_path / "onnx", onnx)
    with onnx.model_file.open("rb") as export:  # a half-copied graph: its first 100 kB
        (folder / "model.int8.onnx").write_bytes(export.read(100_000))
    with caplog.at_level(logging.WARNING):
        light = _light(Settings(onnx_cache_dir=tmp_path / "onnx"))
    assert light.query_file == folder / "model.int8.onnx" and light.query_file.stat().st_size > 10_000_000
    assert json.loads(check_file(light.query_file).read_text())["mean_cosine"] >= MIN_MEAN_COSINE
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "writing it again" in warnings[0], warnings
    assert np.sum(light.encode_queries(["slow start"]) * onnx.encode_queries(["slow start"])) > 0.95


QUANTIZE = """
import sys
from pathlib import Path
from ragindex.encoders.dense.onnx_export import quantize_onnx
quantize_onnx(Path(sys.argv[1]), Path(sys.argv[2]))
"""


def test_processes_that_quantize_at_once_all_get_the_int8_copy(tmp_path: Path, onnx: OnnxDenseEncoder) -> None:
    """The quantizer's shape-inferred graph has a fixed name beside its input: processes deleted each other's."""
    folder = _exported(tmp_path / "onnx", onnx)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", QUANTIZE, str(folder / "model.onnx"), str(folder / "model.int8.onnx")],
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    errors = [proc.communicate(timeout=300)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0], errors
    assert sorted(p.name for p in folder.iterdir()) == ["model.int8.onnx", "model.onnx"]  # nothing left behind
    int8 = replace(onnx, query_model_file=folder / "model.int8.onnx")
    assert np.sum(int8.encode_queries(["slow start"]) * onnx.encode_queries(["slow start"])) > 0.95
