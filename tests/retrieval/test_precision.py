"""bf16 encoding (issue 6, part 4): auto means bf16 only on native-bf16 CPUs; vectors stay ~float32; caches split."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from ragindex.encoders import precision
from ragindex.encoders.cached import CachedDenseEncoder
from ragindex.encoders.dense.sentence_transformers import SentenceTransformerDenseEncoder
from ragindex.encoders.precision import cpu_has_native_bf16, resolve_precision
from ragindex.store.sql import SqlTruthStore

SHIPPED = "sentence-transformers/all-MiniLM-L6-v2"

SENTENCES = [
    "Glaciers carve U-shaped valleys as the ice grinds the bedrock.",
    "Rivers cut narrow V-shaped valleys.",
    "Espresso is brewed by forcing hot water through finely ground coffee.",
    "A standard shot uses eighteen grams of coffee.",
    "Ocean tides are caused mainly by the Moon's gravity.",
    "Spring tides occur at new and full moon.",
    "A volcano is an opening where molten rock escapes.",
    "Pyroclastic flows are the deadliest volcanic hazard.",
    "Vitamin D deficiency is associated with bone loss in older adults.",
    "The mitochondria produce most of the cell's ATP.",
    "Antibiotic resistance spreads through horizontal gene transfer.",
    "Randomised controlled trials reduce selection bias.",
    "数据治理流程包括数据标准、数据质量和元数据管理。",
    "红烧肉需要小火慢炖一个小时。",
    "The truth store is the source of truth; the index is a rebuildable copy.",
    "BM25 weighs term frequency against document length.",
    "Reciprocal rank fusion adds 1 / (k + rank) across lists.",
    "A cross-encoder reads the query and the passage together.",
    "short",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.",
]

FLAGS = "processor : 0\nflags\t\t: fpu vme sse sse2 avx avx2 avx512f avx512bw {extra}\n"


def fake_cpuinfo(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / f"cpuinfo-{hashlib.sha1(extra.encode()).hexdigest()[:8]}"
    path.write_text(FLAGS.format(extra=extra), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("extra", "native"),
    [
        ("avx512_bf16", True),
        ("amx_tile amx_bf16 amx_int8", True),
        ("avx512_vnni avx512_fp16", False),
        ("avx512_bf16x", False),  # whole flags only
        ("", False),
    ],
)
def test_native_bf16_comes_from_the_cpuinfo_flags(tmp_path: Path, extra: str, native: bool) -> None:
    assert cpu_has_native_bf16(fake_cpuinfo(tmp_path, extra)) is native


def test_unreadable_cpuinfo_means_no_native_bf16(tmp_path: Path) -> None:
    assert cpu_has_native_bf16(tmp_path / "no-such-cpuinfo") is False


@pytest.mark.parametrize("native", [True, False])
def test_auto_resolves_to_bfloat16_only_with_native_bf16(native: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda cpuinfo=None: native)
    assert resolve_precision("auto", "cpu") == ("bfloat16-weights" if native else "float32")
    assert resolve_precision("auto", "mps") == "float32"
    assert resolve_precision("auto", "cuda:0") == "bfloat16"
    assert resolve_precision("float32", "cpu") == "float32"
    assert resolve_precision("bfloat16", "cpu") == "bfloat16"
    auto = SentenceTransformerDenseEncoder(SHIPPED, precision="auto")
    assert auto.precision == ("bfloat16-weights" if native else "float32")


def test_cache_keys_differ_between_precisions_but_the_vector_space_is_one() -> None:
    fp32 = SentenceTransformerDenseEncoder(SHIPPED, precision="float32")
    bf16 = SentenceTransformerDenseEncoder(SHIPPED, precision="bfloat16")
    assert fp32.fingerprint == bf16.fingerprint
    assert fp32.cache_key != bf16.cache_key
    assert fp32.cache_key.endswith("float32") and bf16.cache_key.endswith("bfloat16")


@pytest.mark.integration
def test_bf16_vectors_match_float32_and_are_cached_apart(tmp_path: Path) -> None:
    fp32 = SentenceTransformerDenseEncoder(SHIPPED, precision="float32")
    bf16 = SentenceTransformerDenseEncoder(SHIPPED, precision="bfloat16")
    a, b = fp32.encode_documents(SENTENCES), bf16.encode_documents(SENTENCES)
    assert a.shape == b.shape == (len(SENTENCES), 384)
    assert a.dtype == b.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(a * b, axis=1)
    assert cosines.mean() > 0.999
    assert cosines.min() > 0.99
    assert not np.array_equal(a, b)  # bf16 autocast really ran

    store = SqlTruthStore(f"sqlite:///{tmp_path / 'cache.db'}")
    try:
        hashes = [hashlib.sha256(s.encode()).hexdigest() for s in SENTENCES]
        cached32, cached16 = CachedDenseEncoder(fp32, store), CachedDenseEncoder(bf16, store)
        cached32.encode_documents(SENTENCES, hashes)
        np.testing.assert_allclose(cached16.encode_documents(SENTENCES, hashes), b, atol=1e-6)
        assert (cached16.computed, cached16.reused) == (len(SENTENCES), 0)  # no float32 vector was reused
        np.testing.assert_array_equal(cached32.encode_documents(SENTENCES, hashes), a)
        assert cached32.reused == len(SENTENCES)
    finally:
        store.close()


@pytest.mark.integration
def test_bf16_weights_match_float32_and_never_share_the_float32_model() -> None:
    fp32 = SentenceTransformerDenseEncoder(SHIPPED, precision="float32")
    weights = SentenceTransformerDenseEncoder(SHIPPED, precision="bfloat16-weights")
    b = weights.encode_documents(SENTENCES)
    a = fp32.encode_documents(SENTENCES)  # after the cast: the float32 encoder must not get the bf16 model
    assert weights.cache_key.endswith("bfloat16-weights") and weights.fingerprint == fp32.fingerprint
    assert b.dtype == np.float32 and b.shape == a.shape
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(a * b, axis=1)
    assert cosines.min() > 0.99 and not np.array_equal(a, b)
    assert next(fp32._load().parameters()).dtype != next(weights._load().parameters()).dtype
