#!/usr/bin/env bash
# The lean install, as a user gets it: build the wheel, install it with NO extra into a fresh venv, then
# ingest and search a sample on the embedded default (SQLite, Qdrant Edge, the shipped MiniLM model), and check
# that what needs an extra says which one. Run by .ci/run after `make test`; `make wheel-smoke` runs it alone.
#
# torch is installed first, pinned: 2.13.0 is the CPU build in the local wheel dir; any other spec would pull a
# multi-GB CUDA build. Everything else comes from the package index (pip's cache makes a second run fast).
# The wheel is built in an isolated build env (setuptools>=77 from the index), so any python3 with pip can build it.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
BUILD_PYTHON=${BUILD_PYTHON:-$REPO/.venv/bin/python}
[ -x "$BUILD_PYTHON" ] || BUILD_PYTHON=python3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ragindex-wheel-smoke.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
unset PYTHONPATH
for name in $(env | grep -o '^RAGINDEX_[A-Z0-9_]*'); do unset "$name"; done
started=$SECONDS
step() { printf '[wheel-smoke %4ds] %s\n' $((SECONDS - started)) "$*"; }
fail() { echo "wheel-smoke FAILED: $*" >&2; exit 1; }

step "building the wheel"
"$BUILD_PYTHON" -m pip wheel -q --no-deps -w "$WORK/dist" "$REPO"
wheel=$(ls "$WORK"/dist/ragindex-*.whl)
"$BUILD_PYTHON" - "$wheel" <<'EOF_PY' || fail "the wheel lacks package data or LICENSE"
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
for wanted in ("ragindex/service/page/docs.js", "ragindex/py.typed", ".dist-info/licenses/LICENSE"):
    assert any(n.endswith(wanted) for n in names), wanted
EOF_PY

step "fresh venv: torch==2.13.0, then the wheel with no extra"
python3 -m venv "$WORK/venv"
pip_install() {  # quiet, minus the warnings of index locations this machine's pip.conf names but lacks
  "$WORK/venv/bin/pip" install -q --disable-pip-version-check "$@" 2> >(grep -v 'is ignored: it is neither' >&2)
}
pip_install torch==2.13.0
pip_install "$wheel"
BIN=$WORK/venv/bin
for module in fastapi uvicorn qdrant_client pymysql psycopg dramatiq docx pptx openpyxl bs4 pytrec_eval; do
  if "$BIN/python" -c "import $module" 2>/dev/null; then fail "$module is installed without its extra"; fi
done

step "ragindex --version"
"$BIN/ragindex" --version

SAMPLE=$WORK/sample
mkdir -p "$SAMPLE"
cp examples/solar_system.pdf examples/photosynthesis.md examples/history_of_printing.txt examples/faq.jsonl "$SAMPLE/"
export RAGINDEX_DATA_DIR=$WORK/data RAGINDEX_ONNX_CACHE_DIR=$WORK/onnx OPENBLAS_NUM_THREADS=1

step "ragindex ingest (pdf, md, txt, jsonl)"
"$BIN/ragindex" ingest "$SAMPLE"

step "ragindex search"
out=$("$BIN/ragindex" search "which moon is the largest" --top-k 3 --json)
echo "$out" | "$BIN/python" -c '
import json, sys
hits = json.load(sys.stdin)["hits"]
assert hits and hits[0]["filename"] == "solar_system.pdf", hits[:1]
print("top hit:", hits[0]["filename"], "page", hits[0]["page"], round(hits[0]["score"], 4))
'

step "what needs an extra names it"
set +e
docx_out=$("$BIN/ragindex" ingest examples/bicycle_maintenance.docx 2>&1); docx_rc=$?
serve_out=$("$BIN/ragindex" serve --port 0 2>&1); serve_rc=$?
set -e
[ "$docx_rc" -eq 8 ] && grep -q "pip install 'ragindex\[parsing\]'" <<<"$docx_out" || fail "docx: exit $docx_rc: $docx_out"
[ "$serve_rc" -eq 3 ] && grep -q "pip install 'ragindex\[service\]'" <<<"$serve_out" || fail "serve: exit $serve_rc: $serve_out"
echo "docx: $(grep -o "needs the 'parsing' extra.*" <<<"$docx_out" | head -n1)"
echo "serve: $serve_out"

step "ok"
