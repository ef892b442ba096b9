"""The examples under examples_code/integrations run end to end as a user runs them (a subprocess each)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ragindex

pytestmark = pytest.mark.integration

SRC = Path(ragindex.__file__).parents[1]
EXAMPLES = SRC.parent / "examples_code" / "integrations"


def _run(script: str, tmp_path: Path, onnx_cache_dir: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGINDEX_")}
    env.update(PYTHONPATH=str(SRC), OPENBLAS_NUM_THREADS="1", RAGINDEX_ONNX_CACHE_DIR=str(onnx_cache_dir))
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_langchain_example(tmp_path: Path, onnx_cache_dir: Path) -> None:
    out = _run("langchain_retriever.py", tmp_path, onnx_cache_dir).splitlines()
    assert out[0].startswith("1. honeybee_colonies.txt (section: ") and "dense " in out[0] and "bm25 " in out[0]
    assert len([line for line in out if line[:1].isdigit()]) == 3


def test_llamaindex_example(tmp_path: Path, onnx_cache_dir: Path) -> None:
    out = _run("llamaindex_retriever.py", tmp_path, onnx_cache_dir)
    lines = out.splitlines()
    assert lines[0].startswith("1. score ") and lines[0].split()[3] == "photosynthesis.md"
    tail = out.split("what an LLM is given for the best node:\n")[1]
    assert tail.startswith("filename: photosynthesis.md\nsection: Overview\n") and "chunk_id" not in tail
