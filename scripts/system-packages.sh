#!/usr/bin/env bash
# The Debian packages ragindex reads files with: Tesseract and its English and Simplified Chinese language packs
# (OCR of scanned pdf pages and images), and the fonts the OCR tests and `bench/ocr_quality.py` draw their scans
# with (DejaVu, Noto Sans CJK SC). Installed when missing, so `make run` and `make test` set them up on a fresh
# machine; nothing is downloaded at run time.
set -u
missing=()
command -v tesseract >/dev/null 2>&1 || missing+=(tesseract-ocr)
# chi_sim_vert and HanS: only `python -m bench.run ocr-quality` compares them (docs/parsing.md)
for pack in eng:tesseract-ocr-eng chi_sim:tesseract-ocr-chi-sim chi_sim_vert:tesseract-ocr-chi-sim-vert \
  HanS:tesseract-ocr-script-hans; do
  lang=${pack%%:*}
  if ! tesseract --list-langs 2>/dev/null | grep -qx "$lang"; then
    missing+=("${pack#*:}")
  fi
done
fc-list 2>/dev/null | grep -q DejaVuSerif || missing+=(fonts-dejavu-core)
fc-list 2>/dev/null | grep -q NotoSansCJK || missing+=(fonts-noto-cjk)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing ${missing[*]} (OCR and its test fonts)"
if [ "$(id -u)" -eq 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
elif command -v sudo >/dev/null 2>&1; then
  sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
else
  echo "cannot install ${missing[*]} without root: install them (apt-get install ${missing[*]}) or set RAGINDEX_OCR=false" >&2
  exit 1
fi
