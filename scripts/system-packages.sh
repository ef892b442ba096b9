#!/usr/bin/env bash
# The Debian packages ragindex reads files with: Tesseract and its English and Simplified Chinese language packs
# (OCR of scanned pdf pages and images). Installed when missing, so `make run` and `make test` set them up on a
# fresh machine; nothing is downloaded at run time.
set -u
missing=()
command -v tesseract >/dev/null 2>&1 || missing+=(tesseract-ocr)
for pack in eng:tesseract-ocr-eng chi_sim:tesseract-ocr-chi-sim; do
  lang=${pack%%:*}
  if ! tesseract --list-langs 2>/dev/null | grep -qx "$lang"; then
    missing+=("${pack#*:}")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing ${missing[*]} (OCR)"
if [ "$(id -u)" -eq 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
elif command -v sudo >/dev/null 2>&1; then
  sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
else
  echo "cannot install ${missing[*]} without root: install them (apt-get install ${missing[*]}) or set RAGINDEX_OCR=false" >&2
  exit 1
fi
