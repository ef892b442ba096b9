"""The drift check of a section against its chunks (pure), over what the real chunkers cut."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragindex import factory
from ragindex.chunking.sections import with_sections
from ragindex.config.settings import Settings
from ragindex.pipeline.section_text import drifted
from ragindex.retrieval.context import join_chunks
from ragindex.store.records import ChunkText
from ragindex.types import ChunkDraft, Document, Unit

PARAGRAPHS = [
    f"Paragraph {i}: the lock keeper of weir {i} opens the sluice at {i % 12} o'clock when the river rises."
    for i in range(60)
]
MARKDOWN = (
    "# River works\n\n## Locks\n\n"
    + "\n\n".join(PARAGRAPHS[:30])
    + "\n\n## Levels\n\n| weir | level |\n| --- | --- |\n"
    + "\n".join(f"| {i} | {i * 3} cm |" for i in range(80))
    + "\n\n----------------------------------------\n\n"
    + "\n\n".join(PARAGRAPHS[30:])
)


def cut(chunker: str, **settings: object) -> list[tuple[str, list[ChunkDraft]]]:
    """Each section's text with its chunks, as an ingest cuts MARKDOWN with ``chunker``."""
    config = Settings(data_dir=Path("unused"), chunker=chunker, **settings)  # type: ignore[arg-type]
    document = Document(source_uri="river.md", text=MARKDOWN, parser="markdown", title="River works")
    chunks = factory.build_chunker(config).chunk(document)
    drafts = with_sections(document, chunks, max_chars=config.section_max_chars, contextual=True)
    sections = [d for d in drafts if d.unit == Unit.SECTION]
    return [
        (s.text, [d for d in drafts if d.unit == Unit.CHUNK and d.section_index == i]) for i, s in enumerate(sections)
    ]


CHUNKINGS = [
    ("recursive", {}),
    ("recursive", {"chunk_size": 120, "chunk_overlap": 60}),
    ("fixed", {}),
    ("fixed", {"chunk_size": 100, "chunk_overlap": 90}),
]


@pytest.mark.parametrize(("chunker", "settings"), CHUNKINGS, ids=[f"{c}-{s}" for c, s in CHUNKINGS])
def test_what_ingest_cuts_has_not_drifted_and_an_edit_has(chunker: str, settings: dict[str, object]) -> None:
    sections = cut(chunker, **settings)
    assert len(sections) > 2
    for text, chunks in sections:
        texts = [c.text for c in chunks]
        assert not drifted(text, texts)
        middle = len(texts) // 2
        assert drifted(text, [*texts[:middle], "Octopuses have three hearts.", *texts[middle + 1 :]])
        assert drifted(text, [*texts[:middle], texts[middle] + " And a new sentence.", *texts[middle + 1 :]])
        # the text a re-derivation writes (the chunks joined, overlaps once) has not drifted either
        joined, _ = join_chunks([ChunkText(str(i), c.text, c.start_line, c.end_line) for i, c in enumerate(chunks)])
        assert not drifted(joined, texts)


def test_a_deleted_chunk_is_drift_unless_its_neighbours_hold_its_text() -> None:
    section = "Alpha one.\n\nBravo two.\n\nCharlie three."
    assert not drifted(section, ["Alpha one.", "Bravo two.", "Charlie three."])
    assert drifted(section, ["Alpha one.", "Charlie three."])
    assert not drifted("abcdefgh", ["abcde", "cdef", "defgh"])  # "cdef" lies in its overlapping neighbours


def test_no_chunk_at_all_is_drift() -> None:
    assert drifted("Some text.", [])
    assert drifted("Some text.", ["", "  \n"])


def test_whitespace_between_chunks_and_repeated_text_are_not_drift() -> None:
    assert not drifted("one two\n\n\n   three", ["one", "two", "three"])
    rule = "─" * 64
    assert not drifted(f"# A {rule}\n{rule}x", [f"# A {rule}", rule, "─" * 18 + "x"])  # a run of one character
    assert not drifted("yes. no. yes.", ["yes. no.", "yes."])  # the second "yes." found first further up


def test_a_table_piece_that_repeats_its_header_is_not_drift() -> None:
    header = "| a | b |\n| --- | --- |"
    section = f"{header}\n| 1 | 2 |\n| 3 | 4 |"
    assert not drifted(section, [f"{header}\n| 1 | 2 |", f"{header}\n| 3 | 4 |"])
    # a later section of the same table holds only its rows; its pieces still start with the header
    assert not drifted("| 5 | 6 |\n| 7 | 8 |", [f"{header}\n| 5 | 6 |", f"{header}\n| 7 | 8 |"])
    assert drifted("| 5 | 6 |\n| 7 | 8 |", [f"{header}\n| 5 | 6 |", f"{header}\n| 7 | 9 |"])
