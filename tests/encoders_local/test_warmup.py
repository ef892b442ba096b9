"""The dense model loads while an ingest is still chunking (EncoderWarmup), with the real shipped model.

Each check that needs a clean process (which runtime got imported, and when) runs in a subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from ragindex import factory
from ragindex.config.settings import Settings
from ragindex.encoders.dense.routed import RoutedDenseEncoder
from ragindex.encoders.warmup import EncoderWarmup

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", autouse=True)
def exported(onnx_cache_dir: Path) -> None:
    """Export the ONNX model here first: the export itself needs torch, and the subprocesses must not pay it."""
    encoder = factory.build_dense_encoder(Settings(onnx_cache_dir=onnx_cache_dir))
    assert isinstance(encoder, RoutedDenseEncoder) and encoder.light() is not None


def run_python(code: str, onnx_cache_dir: Path) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter (with the session's ONNX cache) and read the JSON line it prints last."""
    env = {**os.environ, "RAGINDEX_ONNX_CACHE_DIR": str(onnx_cache_dir)}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_a_small_ingest_warms_onnx_runtime_and_never_torch(onnx_cache_dir: Path) -> None:
    out = run_python(
        """
        import json, sys
        from ragindex import factory
        from ragindex.config.settings import Settings
        from ragindex.encoders.warmup import EncoderWarmup

        encoder = factory.build_dense_encoder(Settings())
        warmup = EncoderWarmup(lambda: encoder)
        before = "onnxruntime" in sys.modules
        warmup.expect(3)
        warmup.expect(12)  # still a small ingest: the same runtime, no second thread
        [thread.join() for thread in warmup.threads]
        print(json.dumps({"before": before, "threads": len(warmup.threads), "onnx": "onnxruntime" in sys.modules,
                          "torch": "torch" in sys.modules, "light": encoder.light() is not None}))
        """,
        onnx_cache_dir,
    )
    assert out == {"before": False, "threads": 1, "onnx": True, "torch": False, "light": True}


def test_a_bulk_ingest_warms_torch_once_and_keeps_its_thread_limit(onnx_cache_dir: Path) -> None:
    """Torch is imported on the warm-up thread; the model is built by the encoding thread, which gets the limit."""
    out = run_python(
        """
        import json, sys
        from ragindex import factory
        from ragindex.config.settings import Settings
        from ragindex.encoders.warmup import EncoderWarmup

        encoder = factory.build_dense_encoder(Settings(torch_threads=1))  # RAGINDEX_TORCH_THREADS=1
        warmup = EncoderWarmup(lambda: encoder)
        for staged in (40, 300, 5000, 9000):  # crosses the light encoder's 256-chunk boundary once
            warmup.expect(staged)
        [thread.join() for thread in warmup.threads]
        imported = "torch" in sys.modules and "sentence_transformers" in sys.modules
        torch = sys.modules["torch"]
        before = torch.get_num_threads()
        vectors = encoder.heavy.encode_documents(["lighthouse keepers"])  # builds the model in this thread
        print(json.dumps({"threads": len(warmup.threads), "imported": imported, "dim": vectors.shape[1],
                          "limit": [before, torch.get_num_threads()]}))
        """,
        onnx_cache_dir,
    )
    before, after = out.pop("limit")  # type: ignore[misc]
    assert out == {"threads": 2, "imported": True, "dim": 384}
    assert after == 1 and (before != 1 or (os.cpu_count() or 1) == 1)  # torch's default is the core count


def test_the_model_loads_before_the_dense_stage_starts(tmp_path: Path, onnx_cache_dir: Path) -> None:
    """Engine.ingest: by the dense stage, warming began during chunking (thread alive, or the runtime imported)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(6):
        (corpus / f"note{i}.txt").write_text(f"Note {i} about lighthouses and their keepers, number {i}.\n" * 5)
    out = run_python(
        f"""
        import json, sys, threading
        from pathlib import Path
        from ragindex import Engine
        from ragindex.config.settings import Settings

        seen = {{}}
        def progress(event, data):
            if event == "stage" and data["kind"] == "dense":
                names = [t.name for t in threading.enumerate()]
                seen["warming"] = "ragindex-warmup" in names or "onnxruntime" in sys.modules
        with Engine(Settings(data_dir=Path({str(tmp_path / "data")!r}))) as engine:
            report = engine.ingest([{str(corpus)!r}], progress=progress)
            hits = engine.search("lighthouse keepers", user_id=1, set_id=1, top_k=3).hits
        print(json.dumps({{"warming": seen.get("warming"), "embedded": report.chunks["embedded"],
                           "hits": len(hits), "torch": "torch" in sys.modules}}))
        """,
        onnx_cache_dir,
    )
    assert out == {"warming": True, "embedded": 6, "hits": 3, "torch": False}


class Exploding:
    """An encoder whose model cannot load."""

    fingerprint = cache_key = "exploding"
    languages = frozenset()

    @property
    def dimension(self) -> int:
        raise RuntimeError("no model here")

    def encode_documents(self, texts: object) -> np.ndarray:
        raise RuntimeError("no model here")

    encode_queries = encode_documents


def test_a_failed_warm_up_is_left_for_the_encode_to_report() -> None:
    warmup = EncoderWarmup(lambda: Exploding())  # type: ignore[arg-type, return-value]
    warmup.expect(5)
    warmup.expect(500)  # not a router: warmed once
    for thread in warmup.threads:
        thread.join(timeout=10)
    assert len(warmup.threads) == 1 and not warmup.threads[0].is_alive()
    warmup.expect(0)
    assert len(warmup.threads) == 1


def test_a_threaded_engine_searches_without_importing_torch(tmp_path: Path, onnx_cache_dir: Path) -> None:
    """The batching query thread limits torch's threads only where torch is loaded: it never imports it itself."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "keepers.txt").write_text("Lighthouse keepers trimmed the wicks and wound the clockwork every night.")
    out = run_python(
        f"""
        import json, sys
        from pathlib import Path
        from ragindex.config.settings import Settings
        from ragindex.threads import ThreadedEngine

        with ThreadedEngine(Settings(data_dir=Path({str(tmp_path / "data")!r}))) as engine:
            engine.ingest([{str(corpus)!r}])
            hits = engine.search("who wound the clockwork", user_id=1, set_id=1, top_k=3).hits
        print(json.dumps({{"hits": len(hits), "torch": "torch" in sys.modules}}))
        """,
        onnx_cache_dir,
    )
    assert out == {"hits": 1, "torch": False}


@pytest.mark.parametrize(
    ("warm", "enabled", "expected"),
    [
        (True, None, {"thread": True, "onnx": True, "torch": False, "hits": 1}),
        (False, None, {"thread": False, "onnx": False, "torch": False, "hits": 1}),
        (True, "bm25", {"thread": False, "onnx": False, "torch": False, "hits": 1}),
    ],
    ids=["warmed", "not-asked", "dense-not-recalled"],
)
def test_a_one_shot_search_builds_its_query_session_while_the_store_opens(
    tmp_path: Path, onnx_cache_dir: Path, warm: bool, enabled: str | None, expected: dict[str, object]
) -> None:
    """``Engine(warm_queries=True)`` (``ragindex search``) starts the ONNX Runtime session before the store opens.

    Checked before any search: the warm-up thread ran and imported ONNX Runtime; with dense not a recall source,
    or not asked, nothing is loaded ahead. The search afterwards uses what was built (and torch stays out).
    """
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "keepers.txt").write_text("Lighthouse keepers trimmed the wicks and wound the clockwork every night.")
    data = tmp_path / "data"
    run_python(
        f"""
        from pathlib import Path
        from ragindex import Engine
        from ragindex.config.settings import Settings
        with Engine(Settings(data_dir=Path({str(data)!r}))) as engine:
            engine.ingest([{str(corpus)!r}])
        print("{{}}")
        """,
        onnx_cache_dir,
    )
    settings = f"data_dir=Path({str(data)!r})" + (f", recall_enabled_sources={enabled!r}" if enabled else "")
    out = run_python(
        f"""
        import json, sys
        from pathlib import Path
        from ragindex import Engine
        from ragindex.config.settings import Settings

        with Engine(Settings({settings}), warm_queries={warm!r}) as engine:
            warming = engine.query_warm_up
            if warming is not None:
                warming.join(timeout=120)
            onnx = "onnxruntime" in sys.modules
            hits = engine.search("who wound the clockwork", user_id=1, set_id=1, top_k=3).hits
        print(json.dumps({{"thread": warming is not None, "onnx": onnx, "torch": "torch" in sys.modules,
                           "hits": len(hits)}}))
        """,
        onnx_cache_dir,
    )
    assert out == expected


def test_closing_an_engine_waits_for_its_query_warm_up(tmp_path: Path, onnx_cache_dir: Path) -> None:
    """A warm-up still in ONNX Runtime's C++ when the interpreter exits aborts it (SIGABRT, not exit code 0).

    Here the warm-up quantizes the int8 query copy (~2.5 s; the cache lacks it) for a search that is answered without
    the encoder (a blank query): ``Engine.close`` waits for it.
    """
    cache = tmp_path / "onnx"
    shutil.copytree(onnx_cache_dir, cache, ignore=shutil.ignore_patterns("*int8*"))
    out = run_python(
        f"""
        import json
        from pathlib import Path
        from ragindex import Engine
        from ragindex.config.settings import Settings

        engine = Engine(Settings(data_dir=Path({str(tmp_path / "data")!r})), warm_queries=True)
        assert engine.search("   ", user_id=1, set_id=1).hits == ()
        engine.close()
        print(json.dumps({{"alive": engine.query_warm_up.thread.is_alive()}}))
        """,
        cache,
    )
    assert out == {"alive": False}
    assert any("int8" in path.name for path in cache.rglob("*"))  # it did quantize, and finished
