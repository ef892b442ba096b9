"""Pure parts of the service: upload name sanitising and the batching query encoder."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

from ragindex.errors import UnsupportedFormatError, ValidationError
from ragindex.service.executor import BatchingQueryEncoder, IndexThread
from ragindex.service.uploads import check_type, sanitize_filename


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd.txt", "passwd.txt"),
        ("..\\..\\windows\\win.ini.txt", "win.ini.txt"),
        ("/abs/path/notes.md", "notes.md"),
        (".hidden.txt", "hidden.txt"),
        ("a<b>|c?.txt", "a_b_c_.txt"),
        ("résumé 2024.docx", "résumé 2024.docx"),
        ("x" * 300 + ".txt", "x" * 176 + ".txt"),
    ],
)
def test_sanitize_filename(raw: str, expected: str) -> None:
    assert sanitize_filename(raw) == expected


@pytest.mark.parametrize("raw", ["", None, "..", "/", "...", "   ", "///"])
def test_unusable_names_are_refused(raw: str | None) -> None:
    with pytest.raises(ValidationError):
        sanitize_filename(raw)


def test_check_type_lists_the_accepted_suffixes() -> None:
    check_type("a.TXT".lower(), frozenset({".txt"}))
    with pytest.raises(UnsupportedFormatError, match=r"accepted: \.md, \.txt"):
        check_type("tool.exe", frozenset({".txt", ".md"}))


class _CountingEncoder:
    """A deterministic dense encoder (a dependency of the batcher under test) that records its batches."""

    fingerprint = "test:counting"
    cache_key = "test:counting|float32"
    dimension = 4

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.gate = threading.Event()

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode_queries(texts)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.gate.wait(5)
        self.batches.append(len(texts))
        return np.array([[len(t), 0, 0, 1] for t in texts], dtype=np.float32)


def test_concurrent_queries_share_forward_passes_and_get_their_own_rows() -> None:
    inner = _CountingEncoder()
    encoder = BatchingQueryEncoder(inner, max_batch=64)
    results: dict[int, np.ndarray] = {}

    def ask(n: int) -> None:
        results[n] = encoder.encode_queries(["q" * n])

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(1, 21)]
    for t in threads:
        t.start()
    inner.gate.set()
    for t in threads:
        t.join(10)
    encoder.close()
    assert sorted(results) == list(range(1, 21))
    assert all(results[n].shape == (1, 4) and results[n][0, 0] == n for n in results)
    assert sum(inner.batches) == 20 and len(inner.batches) < 20


def test_encoder_errors_reach_every_waiting_caller() -> None:
    class Failing(_CountingEncoder):
        def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
            raise RuntimeError("model gone")

    encoder = BatchingQueryEncoder(Failing())
    with pytest.raises(RuntimeError, match="model gone"):
        encoder.encode_queries(["a", "b"])
    encoder.close()


def test_index_thread_runs_calls_on_one_thread_and_reenters() -> None:
    thread = IndexThread()
    seen: set[int] = set()

    def inner() -> int:
        seen.add(threading.get_ident())
        return 1

    def outer() -> int:
        seen.add(threading.get_ident())
        return thread.call(inner) + 1  # a call from the index thread itself runs directly

    results = [thread.call(outer) for _ in range(5)]
    thread.shutdown()
    assert results == [2] * 5
    assert len(seen) == 1 and threading.get_ident() not in seen


def test_serial_index_runs_every_method_on_the_index_thread() -> None:
    thread = IndexThread()
    seen: list[tuple[str, int]] = []

    class Recording:
        backend = "fake"

        def count(self, collection: str, bucket: int) -> int:
            seen.append(("count", threading.get_ident()))
            return 7

        def fused_search(self, collection: str, bucket: int, queries: object, tenant: object, **kwargs: object):
            seen.append(("fused_search", threading.get_ident()))
            return [(collection, float(kwargs["limit"]))]

    index = thread.serial(Recording())
    assert index.backend == "fake"
    assert index.count("c", 0) == 7
    assert index.fused_search("c", 0, [], None, limit=3, candidates=9, fusion="rrf") == [("c", 3.0)]
    assert thread.submit(index.count, "c", 1).result() == 7  # already on the index thread: a direct call
    thread.shutdown()
    assert [name for name, _ in seen] == ["count", "fused_search", "count"]
    assert len({ident for _, ident in seen}) == 1 and threading.get_ident() not in {ident for _, ident in seen}


@pytest.mark.parametrize(("cores", "expected"), [(1, 0), (2, 2), (16, 2)])
def test_search_processes_default_to_one_per_core_at_most_two_none_on_one_core(
    monkeypatch: pytest.MonkeyPatch, cores: int, expected: int
) -> None:
    from ragindex.service.settings import ServiceSettings

    monkeypatch.delenv("RAGINDEX_SEARCH_PROCESSES", raising=False)
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: set(range(cores)))
    assert ServiceSettings(_env_file=None).search_process_count == expected
    assert ServiceSettings(_env_file=None, search_processes=0).search_process_count == 0
    assert ServiceSettings(_env_file=None, search_processes=3).search_process_count == 3
