#!/usr/bin/env bash
# The comparison-only venv of `python -m bench.run ocr-quality`: RapidOCR (PP-OCR models inside its wheel), kept out of
# ragindex's own venv (onnxruntime + opencv + ~1 GB per page). Idempotent: does nothing when the venv is there.
set -eu
VENV=${OCR_BENCH_VENV:-/work/venvs/ocr}
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import rapidocr_onnxruntime" 2>/dev/null; then
  exit 0
fi
python3.11 -m venv "$VENV" 2>/dev/null || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q "rapidocr-onnxruntime==1.4.4" "pillow>=10" "numpy<3"
