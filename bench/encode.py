"""Child process: the raw ``SentenceTransformer.encode`` of given texts, the baseline of the ingest benchmarks.

``python -m bench.encode TEXTS.json PRECISION`` prints JSON: texts, model load seconds, encode seconds (one
``encode`` call over all texts, batch 64, normalised; bf16 runs under ``torch.autocast`` as ragindex does) and the
process's peak RSS.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(texts_path: str, precision: str) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    from bench.common import torch_threads, vm_hwm_mb
    from ragindex.config.settings import DEFAULT_DENSE_MODEL
    from ragindex.encoders.dense.sentence_transformers import resolve_model_source

    texts = json.loads(Path(texts_path).read_text())
    if torch_threads():
        torch.set_num_threads(torch_threads() or 1)
    started = time.perf_counter()
    model = SentenceTransformer(resolve_model_source(DEFAULT_DENSE_MODEL), device="cpu", local_files_only=True)
    model.eval()
    load_s = time.perf_counter() - started

    def encode(batch: list[str]) -> object:
        with torch.inference_mode():
            if precision == "bfloat16":
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    return model.encode(batch, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
            return model.encode(batch, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)

    encode(texts[:8])  # warm-up
    started = time.perf_counter()
    encode(texts)
    encode_s = time.perf_counter() - started
    out = {
        "texts": len(texts),
        "precision": precision,
        "load_s": load_s,
        "encode_s": encode_s,
        "threads": torch.get_num_threads(),
        "peak_rss_mb": vm_hwm_mb(),
    }
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
