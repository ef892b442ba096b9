"""examples_code/integrations/langchain_store.py runs end to end as a user runs it (a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ragindex

pytestmark = pytest.mark.integration

SRC = Path(ragindex.__file__).parents[1]
SCRIPT = SRC.parent / "examples_code" / "integrations" / "langchain_store.py"


def test_langchain_store_example(tmp_path: Path, onnx_cache_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGINDEX_")}
    env.update(PYTHONPATH=str(SRC), OPENBLAS_NUM_THREADS="1", RAGINDEX_ONNX_CACHE_DIR=str(onnx_cache_dir))
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0] == "added: ganymede, titan, europa, bees"
    assert out[1].startswith("moon: ganymede {'planet': 'jupiter'}")
    assert out[3] == "saturn only: titan Titan, largest moon of Saturn, has methane lakes."
    assert out[4] == "by id: ['A honeybee colony has one queen.']"
    assert out[5].startswith("after deleting titan: [") and "'titan'" not in out[5]
    assert out[6] == "retriever: bees A honeybee colony has one queen."
