"""The floor of a one-shot search: Python, ONNX Runtime, the tokenizer and one query encode, nothing else.

``python bench/floor.py ONNX_FILE MODEL_DIR QUERY`` (run as a script, not ``-m``: the ``bench`` package is not
imported). A one-shot ``ragindex search`` cannot beat this: it has to start Python, load the same ONNX graph and
tokenizer and encode the query the same way (``OnnxDenseEncoder``'s session options) before it searches.
"""

import sys

import numpy as np
import onnxruntime
from tokenizers import Tokenizer


def main(onnx_file: str, model_dir: str, query: str) -> None:
    tokenizer = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tokenizer.enable_truncation(256)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(onnx_file, options, providers=["CPUExecutionProvider"])
    encoding = tokenizer.encode(query.lower())
    feed = {
        "input_ids": np.array([encoding.ids], dtype=np.int64),
        "attention_mask": np.array([encoding.attention_mask], dtype=np.int64),
        "token_type_ids": np.array([encoding.type_ids], dtype=np.int64),
    }
    vector = session.run(None, feed)[0][0]
    sys.stdout.write(f"{float(np.linalg.norm(vector)):.4f}\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
