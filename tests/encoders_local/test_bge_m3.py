"""The local BGE-M3 sparse provider against a direct computation, the shared cleaning rules, offline loading."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragindex import factory
from ragindex.config.settings import Settings
from ragindex.encoders.sparse.bge_m3 import SPARSE_LINEAR_FILE, BgeM3SparseEncoder
from ragindex.encoders.sparse.cleaning import clean_lexical_weights
from ragindex.errors import ConfigurationError, EncodingError
from ragindex.types import SparseVector

TEXTS = [
    "Honey bees make honey; honey is stored in the hive by worker bees.",
    "TCP congestion control: slow start, then additive increase and multiplicative decrease.",
    "🐝 ☃",  # only unknown tokens: [UNK] never counts
    "",
    "short",
    " ".join(["photosynthesis turns light water and carbon dioxide into sugar"] * 20),  # truncated at max_length
]


def direct_lexical_weights(path: Path, texts: list[str], *, max_length: int) -> list[dict[int, float]]:
    """BGE-M3's lexical weights written out with plain transformers / torch calls, one text at a time."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    model = AutoModel.from_pretrained(str(path), local_files_only=True)
    model.eval()
    state = torch.load(path / SPARSE_LINEAR_FILE, map_location="cpu", weights_only=True)
    head = torch.nn.Linear(model.config.hidden_size, 1)
    head.load_state_dict(state)
    special = {tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id, tokenizer.unk_token_id}
    out: list[dict[int, float]] = []
    with torch.no_grad():
        for text in texts:
            inputs = tokenizer(text, truncation=True, max_length=max_length, return_tensors="pt")
            weights = torch.relu(head(model(**inputs).last_hidden_state))[0, :, 0].tolist()
            lexical: dict[int, float] = {}
            for token_id, weight in zip(inputs["input_ids"][0].tolist(), weights, strict=True):
                if token_id in special or weight <= 0:
                    continue
                lexical[token_id] = max(lexical.get(token_id, 0.0), weight)
            out.append(lexical)
    return out


def direct_clean(lexical: dict[int, float], *, top_k: int, min_weight: float) -> list[tuple[int, float]]:
    kept = [(i, w) for i, w in lexical.items() if w >= min_weight]
    kept.sort(key=lambda item: (-item[1], item[0]))
    return sorted(kept[:top_k])


def assert_same(got: SparseVector, expected: list[tuple[int, float]]) -> None:
    assert list(got.indices) == [i for i, _ in expected]
    for value, (_, want) in zip(got.values, expected, strict=True):
        assert isinstance(value, float)
        assert math.isclose(value, want, rel_tol=0, abs_tol=1e-6)


@pytest.fixture(scope="module")
def direct(tiny_bge_m3: Path) -> list[dict[int, float]]:
    return direct_lexical_weights(tiny_bge_m3, TEXTS, max_length=32)


def test_lexical_weights_equal_the_direct_computation(tiny_bge_m3: Path, direct: list[dict[int, float]]) -> None:
    encoder = BgeM3SparseEncoder(str(tiny_bge_m3), batch_size=4, max_length=32, top_k=10_000)
    raw = encoder.lexical_weights(TEXTS)  # batched, padded, sorted by length: the same numbers
    assert [sorted(r) for r in raw] == [sorted(d) for d in direct]
    for got, want in zip(raw, direct, strict=True):
        for token_id, weight in want.items():
            assert math.isclose(got[token_id], weight, rel_tol=0, abs_tol=1e-6)
    assert raw[2] == {} and raw[3] == {}  # unknown-only and empty texts carry nothing
    assert len(direct[0]) > 5  # the tiny model's positive head bias gives most tokens a weight
    assert 0 < len(direct[5]) <= 30  # truncated at 32 tokens (minus cls and sep)

    vectors = encoder.encode_documents(TEXTS)
    for got, want in zip(vectors, direct, strict=True):
        assert_same(got, direct_clean(want, top_k=10_000, min_weight=0.0))
    assert encoder.encode_queries(TEXTS) == vectors  # the sparse side of BGE-M3 is symmetric


def test_top_k_and_min_weight_match_the_direct_computation(tiny_bge_m3: Path, direct: list[dict[int, float]]) -> None:
    weights = sorted(direct[0].values())
    min_weight = weights[len(weights) // 3]
    encoder = BgeM3SparseEncoder(str(tiny_bge_m3), batch_size=16, max_length=32, top_k=4, min_weight=min_weight)
    vectors = encoder.encode_documents(TEXTS)
    for got, want in zip(vectors, direct, strict=True):
        assert_same(got, direct_clean(want, top_k=4, min_weight=min_weight))
        assert len(got.indices) <= 4
        assert all(v >= min_weight for v in got.values)
    assert len(vectors[0].indices) == 4


def test_name_and_no_heavy_import_at_construction(tiny_bge_m3: Path) -> None:
    encoder = BgeM3SparseEncoder(str(tiny_bge_m3), top_k=64, min_weight=0.25)
    assert encoder.name == f"bge-m3:{tiny_bge_m3}|top_k=64|min_weight=0.25"
    code = (
        "import sys\n"
        "from ragindex import factory\n"
        "from ragindex.config.settings import Settings\n"
        f"e = factory.build_sparse_provider(Settings(sparse_provider='bge_m3', sparse_model={str(tiny_bge_m3)!r}))\n"
        "assert e is not None and e.name.startswith('bge-m3:')\n"
        "heavy = [m for m in ('torch', 'transformers') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_settings_select_the_local_provider(tiny_bge_m3: Path) -> None:
    assert factory.build_sparse_provider(Settings()) is None
    assert set(factory.build_sparse_encoders(Settings())) == {"bm25"}
    settings = Settings(
        sparse_provider="bge_m3",
        sparse_model=str(tiny_bge_m3),
        sparse_batch_size=3,
        sparse_max_length=64,
        sparse_top_k=12,
        sparse_min_weight=0.5,
    )
    encoder = factory.build_sparse_provider(settings)
    assert isinstance(encoder, BgeM3SparseEncoder)
    assert (encoder.batch_size, encoder.max_length, encoder.top_k, encoder.min_weight) == (3, 64, 12, 0.5)
    encoders = factory.build_sparse_encoders(settings)
    assert list(encoders) == ["bm25", "sparse"] and encoders["sparse"].name == encoder.name


# ---------------------------------------------------------------------------------------------- loading errors
def test_a_wrong_path_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-checkpoint"
    with pytest.raises(ConfigurationError, match="no-such-checkpoint") as info:
        BgeM3SparseEncoder(str(missing)).encode_documents(["text"])
    assert info.value.context["path"] == str(missing)


def test_a_directory_without_the_sparse_head_is_refused(tiny_bge_m3: Path, tmp_path: Path) -> None:
    copy = tmp_path / "no-head"
    shutil.copytree(tiny_bge_m3, copy)
    (copy / SPARSE_LINEAR_FILE).unlink()
    with pytest.raises(ConfigurationError, match=SPARSE_LINEAR_FILE) as info:
        BgeM3SparseEncoder(str(copy)).encode_queries(["text"])
    assert str(copy) in info.value.message


def test_hf_hub_offline_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    encoder = BgeM3SparseEncoder("ragindex-test/not-a-cached-model", offline=False)  # offline=False, env wins
    with pytest.raises(ConfigurationError, match="downloads are off") as info:
        encoder.encode_documents(["text"])
    assert "ragindex-test/not-a-cached-model" in info.value.message


def test_invalid_arguments_are_configuration_errors(tiny_bge_m3: Path) -> None:
    with pytest.raises(ConfigurationError):
        BgeM3SparseEncoder(str(tiny_bge_m3), top_k=0)
    with pytest.raises(ConfigurationError):
        BgeM3SparseEncoder(str(tiny_bge_m3), batch_size=0)


# ---------------------------------------------------------------------------------------------- cleaning rules
def test_cleaning_keeps_the_top_k_largest_sorted_by_index() -> None:
    vector = clean_lexical_weights({9: 0.5, 3: 2.0, 7: 1.0, 1: 0.25}, top_k=2, min_weight=0.0)
    assert vector == SparseVector((3, 7), (2.0, 1.0))


def test_cleaning_drops_small_and_non_positive_weights() -> None:
    weights = {5: 0.3, 2: 0.1, 8: 0.0, 4: 0.2, 6: -1.0}
    assert clean_lexical_weights(weights, top_k=10, min_weight=0.2) == SparseVector((4, 5), (0.2, 0.3))
    assert clean_lexical_weights(weights, top_k=10, min_weight=0.0) == SparseVector((2, 4, 5), (0.1, 0.2, 0.3))


def test_cleaning_accepts_string_ids_and_returns_ints_and_floats() -> None:
    vector = clean_lexical_weights({"42": 1, "7": 0.5, 7: 0.75}, top_k=5, min_weight=0.0)
    assert vector == SparseVector((7, 42), (0.75, 1.0))
    assert all(isinstance(i, int) for i in vector.indices)
    assert all(isinstance(v, float) for v in vector.values)


def test_cleaning_breaks_ties_by_the_smaller_id_and_handles_empty_input() -> None:
    assert clean_lexical_weights({4: 1.0, 2: 1.0, 3: 1.0}, top_k=2, min_weight=0.0) == SparseVector((2, 3), (1.0, 1.0))
    assert clean_lexical_weights({}, top_k=3, min_weight=0.0) == SparseVector((), ())


def test_cleaning_refuses_broken_payloads() -> None:
    with pytest.raises(EncodingError):
        clean_lexical_weights({"the": 1.0}, top_k=3, min_weight=0.0)
    with pytest.raises(EncodingError):
        clean_lexical_weights({1: float("nan")}, top_k=3, min_weight=0.0)
    with pytest.raises(EncodingError):
        clean_lexical_weights({-1: 1.0}, top_k=3, min_weight=0.0)
    with pytest.raises(ValueError, match="top_k"):
        clean_lexical_weights({1: 1.0}, top_k=0, min_weight=0.0)
