"""``with_sections``: how a document's chunks are grouped into sections (the lexical unit), with the real chunkers."""

from __future__ import annotations

import re

import pytest

from ragindex.chunking.factory import build_chunker
from ragindex.chunking.sections import with_sections
from ragindex.types import ChunkDraft, Document, Unit

SENTENCE = "The {i}th survey of the northern hives counted {i} colonies and weighed their winter stores."
LONG_SECTION = "\n\n".join(  # one heading's section of ~9,000 characters: 12 paragraphs of 8 sentences
    " ".join(SENTENCE.format(i=p * 8 + s) for s in range(8)) for p in range(12)
)
GUIDE = f"# Apiary survey\n\n## Counts\n\n{LONG_SECTION}\n\n## Equipment\n\nSmokers, hive tools and veils.\n"
NO_BREAKS = " ".join(SENTENCE.format(i=i) for i in range(100))  # ~9,000 characters, no paragraph, no heading


def drafts_of(text: str, *, max_chars: int, parser: str = "markdown") -> tuple[Document, list[ChunkDraft]]:
    document = Document(source_uri="mem://guide", text=text, parser=parser, title="Apiary survey")
    chunks = build_chunker("recursive", chunk_size=512, chunk_overlap=64).chunk(document)
    return document, with_sections(document, chunks, max_chars=max_chars, contextual=True)


def split(drafts: list[ChunkDraft]) -> tuple[list[ChunkDraft], list[ChunkDraft]]:
    return [d for d in drafts if d.unit == Unit.SECTION], [d for d in drafts if d.unit == Unit.CHUNK]


@pytest.mark.parametrize("max_chars", [1000, 2000, 4000])
def test_an_oversize_section_is_cut_at_chunk_boundaries_that_end_paragraphs_or_sentences(max_chars: int) -> None:
    document, drafts = drafts_of(GUIDE, max_chars=max_chars)
    sections, chunks = split(drafts)
    counts = [s for s in sections if s.section == "Counts"]
    assert len(counts) >= len(LONG_SECTION) // max_chars  # the heading's section was divided by size
    for section in sections:
        assert len(section.text) <= max_chars
        assert section.text == document.text[section.start_char : section.end_char]  # document text, no overlap
    for section in counts[:-1]:  # every cut inside the heading falls after a full sentence
        assert re.search(r"\.\s*$", section.text), section.text[-80:]
    # the sections tile the heading's text in order, and a new heading starts a new section
    assert [s.index for s in sections] == list(range(len(sections)))
    assert all(a.end_char <= b.start_char + 64 for a, b in zip(sections, sections[1:], strict=False))
    assert sections[-1].section == "Equipment" and "Smokers" in sections[-1].text
    # each chunk points at the section it lies in
    for chunk in chunks:
        owner = sections[chunk.section_index] if chunk.section_index is not None else None
        assert owner is not None and owner.start_char <= chunk.start_char and chunk.end_char <= owner.end_char
        assert owner.section == chunk.section


def test_a_document_without_headings_or_paragraphs_still_gets_sections_by_size() -> None:
    _, drafts = drafts_of(NO_BREAKS, max_chars=4000, parser="text")
    sections, chunks = split(drafts)
    assert len(sections) >= 3 and all(len(s.text) <= 4000 for s in sections)
    assert all(re.search(r"\.\s*$", s.text) for s in sections[:-1])  # cut after sentences
    assert {c.section_index for c in chunks} == set(range(len(sections)))


def test_context_lines_name_title_and_heading_but_not_what_the_text_opens_with() -> None:
    _, drafts = drafts_of(GUIDE, max_chars=4000)
    sections, chunks = split(drafts)
    # the title's heading has no body: it opens the first chunk, whose text names both title and heading
    assert sections[0].text.startswith("# Apiary survey\n\n## Counts\n\nThe 0th survey")
    assert sections[0].context is None and chunks[0].context is None
    assert sections[-1].context == "Apiary survey"  # "## Equipment ..." names its heading, not the title
    assert {s.context for s in sections[1:] if s.section == "Counts"} == {"Apiary survey > Counts"}
    assert {c.context for c in chunks[1:] if c.section == "Counts"} == {"Apiary survey > Counts"}


def test_zero_max_chars_gives_the_chunks_alone() -> None:
    _, drafts = drafts_of(GUIDE, max_chars=0)
    assert drafts and all(d.unit == Unit.CHUNK and d.section_index is None for d in drafts)
