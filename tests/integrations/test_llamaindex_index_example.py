"""examples_code/integrations/llamaindex_index.py runs end to end as a user runs it (a subprocess, no OpenAI key)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ragindex

pytestmark = pytest.mark.integration

SRC = Path(ragindex.__file__).parents[1]
SCRIPT = SRC.parent / "examples_code" / "integrations" / "llamaindex_index.py"


def test_llamaindex_index_example(tmp_path: Path, onnx_cache_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGINDEX_", "OPENAI_"))}
    env.update(PYTHONPATH=str(SRC), OPENBLAS_NUM_THREADS="1", RAGINDEX_ONNX_CACHE_DIR=str(onnx_cache_dir))
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "nodes of 2025 about bees:",
        "  note-1 of field-notes: Bees dance to tell the hive where the flowers are.",
        "  note-2 of field-notes: A queen bee lays up to two thousand eggs a day.",
        "history: history_of_printing.txt {'topic': 'history', 'year': 2024}",
        "answered from: ['photosynthesis.md']",
        "after delete_ref_doc: ['history_of_printing.txt', 'honeybee_colonies.txt', 'photosynthesis.md']",
    ]
