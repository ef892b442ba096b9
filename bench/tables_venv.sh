#!/usr/bin/env bash
# The comparison venv of `python -m bench.run parse-quality` (issue 26): camelot (stream, network), img2table and pdfplumber's
# text strategy, judged against ragindex's own table finder. Never installed into the project's venv.
set -euo pipefail
VENV="${1:-/work/venvs/tables}"
PYTHON="${PYTHON:-python3.11}"
if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --upgrade pip
"$VENV/bin/pip" install --quiet "camelot-py==2.0.0" "pdfplumber==0.11.10" "opencv-python-headless" "img2table==2.0.0"
"$VENV/bin/python" -c "import camelot, pdfplumber, img2table; print('camelot', camelot.__version__, 'pdfplumber', pdfplumber.__version__)"
