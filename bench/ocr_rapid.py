"""RapidOCR on page images, run by ``bench/ocr_quality.py`` with the comparison venv's python (never ragindex's).

``python bench/ocr_rapid.py PAGE.png ...`` prints ``{"load_s": s, "pages": [{"text": ..., "seconds": s}, ...]}``;
lines are joined top to bottom, left to right (RapidOCR returns line boxes without a layout).
"""

from __future__ import annotations

import json
import sys
import time

started = time.perf_counter()
from rapidocr_onnxruntime import RapidOCR  # noqa: E402

engine = RapidOCR()
load_s = time.perf_counter() - started
pages = []
for path in sys.argv[1:]:
    began = time.perf_counter()
    result, _ = engine(path)
    seconds = time.perf_counter() - began
    boxes = sorted(result or [], key=lambda r: (round(r[0][0][1] / 10), r[0][0][0]))
    pages.append({"text": "\n".join(r[1] for r in boxes), "seconds": seconds})
print(json.dumps({"load_s": load_s, "pages": pages}, ensure_ascii=False))
