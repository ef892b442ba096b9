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


def _generated_note(i: int) -> str:
    words = (
        "river",
        "copper",
        "violin",
        "orbit",
        "glacier",
        "harbor",
        "lantern",
        "meadow",
        "quartz",
        "falcon",
        "ember",
    )
    sentences = [
        f"Note {i} line {j}: the {words[(i + j) % 11]} and the {words[(i * 3 + j) % 11]} met near "
        f"the {words[(i * 7 + j * 5) % 11]} at mile {i * 100 + j}, where the {words[(j * 2 + 1) % 11]} ends."
        for j in range(12)
    ]
    return " ".join(sentences)


# eighty generated documents of about 1,200 characters, three chunks each at the default chunk size: with the
# default batch of 64 the dense stage runs several batches, so an ingest is still embedding after its first one
MANY_DOCS = {f"note{i:03}.txt": _generated_note(i) for i in range(80)}
