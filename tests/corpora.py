"""Small corpora shared by the engine tests, and the helper that writes one to a folder.

The root ``conftest.py`` turns them into the ``corpus_files`` / ``corpus`` fixtures; a module that
needs other files overrides ``corpus_files``. Tests count on these exact texts (one chunk per
document, the queries they search for), so extend a corpus only with a new constant.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

# three one-chunk documents on unrelated topics
THREE_DOCS = {
    "bees.txt": "Honeybee colonies have one queen, thousands of female workers and a few male drones.",
    "photosynthesis.txt": "Photosynthesis in chloroplasts turns light, water and carbon dioxide into sugar.",
    "tcp.txt": "TCP congestion control grows the window by slow start, then by additive increase.",
}

# the same three plus a Markdown document (another loader, a heading)
FOUR_DOCS = {
    **THREE_DOCS,
    "bread.md": "# Sourdough\n\nA sourdough starter is flour and water fermented by wild yeast and lactobacilli.",
}


def write_files(folder: Path, files: Mapping[str, str]) -> Path:
    """Write ``files`` (name -> text, UTF-8) into ``folder``, creating it; return the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder
