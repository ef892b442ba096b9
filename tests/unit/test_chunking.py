"""Chunkers: fixed (seed 001), recursive (chars), structure (tokens, real tokenizer), positions, factory."""

from __future__ import annotations

import json
import logging
import random
import re
import shutil
from pathlib import Path

import pytest

from ragindex.chunking import (
    CHUNKER_NAMES,
    FixedChunker,
    HfTokenizer,
    RecursiveChunker,
    StructureChunker,
    build_chunker,
    resolve_model_dir,
    tokenizer_for_model,
)
from ragindex.chunking.headings import find_headings
from ragindex.chunking.layout import LayoutChunker
from ragindex.chunking.positions import make_drafts
from ragindex.chunking.sections import context_line
from ragindex.errors import ConfigurationError
from ragindex.types import ChunkDraft, Document, PageSpan

MODEL = "sentence-transformers/all-MiniLM-L6-v2"

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "vector",
    "index",
    "shard",
    "tenant",
    "chunk",
    "token",
    "retrieval",
    "fusion",
    "rerank",
    "dense",
    "sparse",
    "query",
    "document",
    "paragraph",
    "sentence",
    "encoder",
    "model",
    "pipeline",
    "state",
    "repair",
]
CHINESE = "数据治理流程需要明确的责任划分与标准规范向量检索系统依赖高质量的文本切分策略以及稳定的编码模型"


def split_fixed(text: str, chunk_size: int = 512, chunk_overlap: int = 64) -> list[str]:
    """Seed 001's split_fixed, verbatim apart from the metadata."""
    chunks, start = [], 0
    while start < len(text):
        snippet = text[start : start + chunk_size]
        if snippet.strip():
            chunks.append(snippet)
        start += chunk_size - chunk_overlap
    return chunks


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(3, 14))]
    return " ".join(words).capitalize() + rng.choice([".", "!", "?", ",", ";"])


def paragraph(rng: random.Random) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(1, 6)))


def chinese_text(rng: random.Random, sentences: int) -> str:
    out = []
    for _ in range(sentences):
        start = rng.randrange(len(CHINESE) - 30)
        out.append(CHINESE[start : start + rng.randint(8, 30)] + rng.choice("。！？，"))
    return "".join(out)


def random_text(rng: random.Random) -> str:
    parts: list[str] = []
    for _ in range(rng.randint(1, 12)):
        kind = rng.random()
        if kind < 0.55:
            parts.append(paragraph(rng))
        elif kind < 0.7:
            parts.append("\n".join(sentence(rng) for _ in range(rng.randint(2, 5))))
        elif kind < 0.8:
            parts.append(chinese_text(rng, rng.randint(2, 20)))
        elif kind < 0.87:
            parts.append("x" * rng.randint(50, 900))  # no separator at all: hard cuts
        elif kind < 0.94:
            parts.append(f"{'#' * rng.randint(1, 3)} {sentence(rng)}")
        else:
            parts.append(" \t " * rng.randint(1, 40))
    return rng.choice(["", "\n", "  "]) + rng.choice(["\n\n", "\n", "\n\n\n", " "]).join(parts)


def markdown_doc(rng: random.Random, sections: int, big: bool = False) -> str:
    out = ["Opening words before any heading."]
    for i in range(sections):
        out.append(f"{'#' * rng.randint(1, 3)} Section {i}")
        body_paragraphs = rng.randint(12, 20) if big and i == sections // 2 else rng.randint(0, 3)
        out.extend(paragraph(rng) for _ in range(body_paragraphs))
    return "\n\n".join(out) + "\n"


def doc(text: str, pages: tuple[PageSpan, ...] = ()) -> Document:
    return Document(source_uri="mem://doc", text=text, parser="markdown", pages=pages)


def expected_line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def check_drafts(document: Document, drafts: list[ChunkDraft]) -> None:
    text = document.text
    assert [d.index for d in drafts] == list(range(len(drafts)))
    for d in drafts:
        assert d.text == text[d.start_char : d.end_char]
        assert d.text.strip()
        assert d.start_line == expected_line(text, d.start_char)
        assert d.end_line == expected_line(text, d.end_char - 1)


def check_coverage(text: str, drafts: list[ChunkDraft]) -> None:
    covered = bytearray(len(text))
    for d in drafts:
        covered[d.start_char : d.end_char] = b"\x01" * (d.end_char - d.start_char)
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert not missing, f"uncovered characters at {missing[:10]}"


@pytest.fixture(scope="module")
def tokenizer() -> HfTokenizer:
    directory = resolve_model_dir(MODEL)
    assert directory is not None, "the bundled all-MiniLM-L6-v2 model must be installed"
    return HfTokenizer.from_model_dir(directory)


# --- fixed -------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize(("size", "overlap"), [(512, 64), (100, 0), (37, 11), (16, 15)])
def test_fixed_reproduces_seed_split_fixed(seed: int, size: int, overlap: int) -> None:
    text = random_text(random.Random(seed))
    document = doc(text)
    drafts = FixedChunker(size, overlap).chunk(document)
    assert [d.text for d in drafts] == split_fixed(text, size, overlap)
    check_drafts(document, drafts)
    step = size - overlap
    assert all(d.start_char % step == 0 and d.end_char == min(d.start_char + size, len(text)) for d in drafts)


def test_fixed_drops_whitespace_only_windows_before_numbering() -> None:
    text = "a" * 10 + " " * 30 + "b" * 10
    drafts = FixedChunker(10, 0).chunk(doc(text))
    assert [d.text for d in drafts] == ["a" * 10, "b" * 10]
    assert [d.index for d in drafts] == [0, 1]
    assert [d.start_char for d in drafts] == [0, 40]


def test_fixed_section_is_last_heading_before_start() -> None:
    text = "# One\n" + "x" * 20 + "\n## Two\n" + "y" * 20
    drafts = FixedChunker(10, 0).chunk(doc(text))
    sections = {d.start_char: d.section for d in drafts}
    assert sections[0] == "One"
    assert sections[20] == "One"
    two = text.index("## Two")
    assert all(s == "Two" for start, s in sections.items() if start >= two)


@pytest.mark.parametrize("chunker", [FixedChunker(), RecursiveChunker()])
def test_empty_and_blank_documents_give_no_chunks(chunker: FixedChunker | RecursiveChunker) -> None:
    assert chunker.chunk(doc("")) == []
    assert chunker.chunk(doc(" \n\t \n")) == []


# --- recursive ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize(("size", "overlap"), [(512, 64), (200, 50), (64, 0), (40, 30)])
def test_recursive_invariants(seed: int, size: int, overlap: int) -> None:
    document = doc(random_text(random.Random(seed)))
    drafts = RecursiveChunker(size, overlap).chunk(document)
    check_drafts(document, drafts)
    check_coverage(document.text, drafts)
    for d in drafts:
        assert len(d.text) <= size
        assert d.text == d.text.strip()
    starts = [d.start_char for d in drafts]
    assert starts == sorted(starts)


def test_recursive_overlaps_whole_trailing_pieces() -> None:
    rng = random.Random(7)
    text = " ".join(sentence(rng) for _ in range(60))
    drafts = RecursiveChunker(200, 60).chunk(doc(text))
    overlaps = [prev.end_char - d.start_char for prev, d in zip(drafts, drafts[1:], strict=False)]
    assert any(o > 0 for o in overlaps)
    assert all(o <= 60 for o in overlaps)
    for prev, d in zip(drafts, drafts[1:], strict=False):
        if prev.end_char > d.start_char:  # the overlap starts at a sentence boundary
            assert text[d.start_char - 2 : d.start_char - 1] in ".!?,;"


def test_recursive_prefers_paragraphs_then_sentences() -> None:
    paragraphs = ["First paragraph is short.", "Second one. It has two sentences.", "Third!"]
    text = "\n\n".join(paragraphs)
    drafts = RecursiveChunker(40, 0).chunk(doc(text))
    assert [d.text for d in drafts] == paragraphs
    drafts = RecursiveChunker(20, 0).chunk(doc("Alpha beta gamma. Delta epsilon zeta."))
    assert [d.text for d in drafts] == ["Alpha beta gamma.", "Delta epsilon zeta."]


def test_recursive_chinese_without_spaces_cuts_at_sentence_ends() -> None:
    rng = random.Random(3)
    sentences = [CHINESE[rng.randrange(20) :][: rng.randint(10, 25)] + "。" for _ in range(30)]
    text = "".join(sentences)
    assert " " not in text
    drafts = RecursiveChunker(60, 0).chunk(doc(text))
    check_drafts(doc(text), drafts)
    check_coverage(text, drafts)
    assert len(drafts) > 1
    assert all(len(d.text) <= 60 and d.text.endswith("。") for d in drafts)
    assert "".join(d.text for d in drafts) == text


def test_recursive_hard_cuts_separator_free_text() -> None:
    text = "z" * 1000
    drafts = RecursiveChunker(100, 20).chunk(doc(text))
    assert [d.start_char for d in drafts] == list(range(0, 961, 80))
    assert drafts[-1].end_char == 1000
    assert all(len(d.text) <= 100 for d in drafts)
    check_coverage(text, drafts)


def test_recursive_section_and_heading_boundaries() -> None:
    text = "Intro line of the text.\n# Alpha\nalpha body text.\n## Beta\nbeta body text here."
    drafts = RecursiveChunker(40, 0).chunk(doc(text))
    assert [(d.text, d.section) for d in drafts] == [
        ("Intro line of the text.", None),
        ("# Alpha\nalpha body text.", "Alpha"),
        ("## Beta\nbeta body text here.", "Beta"),
    ]


def test_recursive_never_leaves_a_bodiless_heading_alone() -> None:
    body = " ".join(f"Sentence {i} of the counts explains the survey of hive {i}." for i in range(30))  # > 512
    text = f"# Apiary survey\n\n## Counts\n\n{body}\n\n## Notes\n\nShort.\n\n## Tools\n\n### Smokers\n\n{body}"
    drafts = RecursiveChunker(512, 64).chunk(doc(text))
    check_drafts(doc(text), drafts)
    check_coverage(text, drafts)
    assert not [d.text for d in drafts if re.fullmatch(r"(\s*#+ [^\n]*)+\s*", d.text)]  # no heading-only chunk
    assert drafts[0].text.startswith("# Apiary survey\n\n## Counts\n\nSentence 0") and drafts[0].section == "Counts"
    smokers = next(d for d in drafts if "### Smokers" in d.text)
    assert smokers.text.startswith("## Tools\n\n### Smokers\n\nSentence 0") and smokers.section == "Smokers"
    assert all(len(d.text) <= 512 for d in drafts)
    # a heading that has a body keeps it, and a fitting section is still one chunk under its own heading
    assert ("## Notes\n\nShort.", "Notes") in [(d.text, d.section) for d in drafts]


def test_recursive_heading_checks_stay_linear_on_hostile_lines() -> None:
    # "# x # x ..." could be cut into headings at every "# " by a looser pattern: exponential backtracking, a hang
    hostile = "# " + "x # " * 3000 + "\n" + "# x " * 3000 + "\nnot a heading\n\n"
    body = "Plain words follow here. " * 100
    text = hostile + body + "\n\n## End\n\n" + body
    drafts = RecursiveChunker(512, 64).chunk(doc(text))
    check_coverage(text, drafts)
    assert context_line("Title", "Other", text) == "Title > Other"


# --- headings ----------------------------------------------------------------------------------


def test_headings_skip_code_fences_and_strip_markers() -> None:
    text = "# Top #\n```bash\n# not a heading\n```\n  ## Second ##\n#no space\n####### seven\n### Third"
    assert [(h.level, h.title) for h in find_headings(text)] == [(1, "Top"), (2, "Second"), (3, "Third")]


# --- positions ---------------------------------------------------------------------------------


def test_positions_lines_and_pages() -> None:
    page1 = "line one\nline two\n"
    page2 = "line three\nline four\n"
    text = page1 + page2
    document = doc(text, pages=(PageSpan(page=2, start=len(page1)), PageSpan(page=1, start=0)))
    spans = [(0, 8, None), (9, 17, "s"), (len(page1) + 2, len(text), None), (17, 18, None)]
    drafts = make_drafts(document, spans, token_counts=[1, 2, 3, 4])
    assert [(d.index, d.start_line, d.end_line, d.page, d.section, d.token_count) for d in drafts] == [
        (0, 1, 1, 1, None, 1),
        (1, 2, 2, 1, "s", 2),
        (2, 3, 4, 2, None, 3),
    ]
    assert drafts[2].text == "ne three\nline four\n"


def test_positions_without_pages_and_bad_spans() -> None:
    document = doc("abc")
    assert make_drafts(document, [(0, 3, None)])[0].page is None
    with pytest.raises(ValueError, match="outside"):
        make_drafts(document, [(0, 4, None)])


@pytest.mark.parametrize("name", ["fixed", "recursive", "structure"])
def test_every_chunker_positions_pages(name: str, tokenizer: HfTokenizer) -> None:
    rng = random.Random(11)
    pages_text = [markdown_doc(rng, 3) for _ in range(3)]
    starts = [sum(len(p) for p in pages_text[:i]) for i in range(3)]
    text = "".join(pages_text)
    document = doc(text, pages=tuple(PageSpan(page=i + 1, start=s) for i, s in enumerate(starts)))
    chunker = build_chunker(
        name, chunk_size=300, chunk_overlap=30, chunk_tokens=64, tokenizer_factory=lambda: tokenizer
    )
    drafts = chunker.chunk(document)
    check_drafts(document, drafts)
    for d in drafts:
        assert d.page == 1 + sum(1 for s in starts[1:] if s <= d.start_char)
    assert any(d.page == 2 for d in drafts)
    assert any(d.page == 3 for d in drafts)


# --- structure ---------------------------------------------------------------------------------


def section_spans(text: str) -> list[tuple[int, int, str]]:
    heads = find_headings(text)
    bounds = [h.start for h in heads] + [len(text)]
    return [(h.start, bounds[i + 1], h.title) for i, h in enumerate(heads)]


@pytest.mark.parametrize("seed", range(12))
def test_structure_never_splits_a_fitting_section_and_respects_the_limit(seed: int, tokenizer: HfTokenizer) -> None:
    rng = random.Random(seed)
    text = markdown_doc(rng, rng.randint(3, 12), big=seed % 2 == 0)
    document = doc(text)
    chunker = StructureChunker(tokenizer, max_tokens=120)
    drafts = chunker.chunk(document)
    check_drafts(document, drafts)
    check_coverage(text, drafts)
    for d in drafts:
        assert d.token_count == tokenizer.count(d.text) <= 120
        assert d.section == ([None] + [t for s, _, t in section_spans(text) if s <= d.start_char])[-1]
    split_any = False
    for start, end, title in section_spans(text):
        body = text[start:end].strip()
        s0 = start
        e0 = s0 + len(body)
        holders = [d for d in drafts if d.start_char <= s0 and e0 <= d.end_char]
        if tokenizer.count(body) <= 120:
            assert len(holders) == 1, f"section {title!r} was split"
        else:
            split_any = True
            pieces = [d for d in drafts if d.start_char < e0 and s0 < d.end_char]
            assert len(pieces) > 1
            assert all(p.section == title for p in pieces if p.start_char >= s0)
    assert split_any or seed % 2 == 1


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize(("limit", "overlap"), [(32, 0), (100, 20)])
def test_structure_invariants_on_mixed_text(seed: int, limit: int, overlap: int, tokenizer: HfTokenizer) -> None:
    text = random_text(random.Random(seed)).replace("\n", "\r\n" if seed % 5 == 0 else "\n")
    document = doc(text)
    drafts = StructureChunker(tokenizer, max_tokens=limit, overlap_tokens=overlap).chunk(document)
    check_drafts(document, drafts)
    check_coverage(text, drafts)
    for d in drafts:
        assert d.token_count == tokenizer.count(d.text) <= limit


def test_structure_packs_consecutive_sections_greedily(tokenizer: HfTokenizer) -> None:
    text = "# A\n\nalpha alpha.\n\n## B\n\nbeta beta.\n\n# C\n\ngamma gamma.\n"
    drafts = StructureChunker(tokenizer, max_tokens=480).chunk(doc(text))
    assert len(drafts) == 1
    assert drafts[0].section == "A"
    assert drafts[0].text == text.strip()
    section_tokens = [tokenizer.count(text[s:e]) for s, e, _ in section_spans(text)]
    limit = section_tokens[0] + section_tokens[1]
    drafts = StructureChunker(tokenizer, max_tokens=limit).chunk(doc(text))
    assert [(d.section, d.text) for d in drafts] == [
        ("A", "# A\n\nalpha alpha.\n\n## B\n\nbeta beta."),
        ("C", "# C\n\ngamma gamma."),
    ]


def test_structure_heading_without_body_travels_with_next_section(tokenizer: HfTokenizer) -> None:
    rng = random.Random(5)
    body = " ".join(sentence(rng) for _ in range(8))
    text = f"# Guide\n\n## Install\n\n{body}\n\n## Use\n\n{body}\n"
    limit = tokenizer.count(f"## Install\n\n{body}") + 3
    drafts = StructureChunker(tokenizer, max_tokens=limit).chunk(doc(text))
    assert drafts[0].text.startswith("# Guide\n\n## Install")
    assert drafts[0].section == "Guide"
    assert drafts[1].section == "Use"


def test_structure_splits_an_oversize_section_with_overlap(tokenizer: HfTokenizer) -> None:
    rng = random.Random(9)
    body = " ".join(sentence(rng) for _ in range(80))
    text = f"# Small\n\nshort text.\n\n# Huge\n\n{body}\n\n# Tail\n\nend.\n"
    chunker = StructureChunker(tokenizer, max_tokens=64, overlap_tokens=16)
    drafts = chunker.chunk(doc(text))
    check_coverage(text, drafts)
    huge = [d for d in drafts if d.section == "Huge"]
    assert len(huge) > 3
    assert all(d.token_count is not None and d.token_count <= 64 for d in drafts)
    assert any(prev.end_char > d.start_char for prev, d in zip(huge, huge[1:], strict=False))
    assert [d.text for d in drafts if d.section == "Small"] == ["# Small\n\nshort text."]
    assert [d.text for d in drafts if d.section == "Tail"] == ["# Tail\n\nend."]


def test_structure_hard_cuts_at_token_boundaries(tokenizer: HfTokenizer) -> None:
    rng = random.Random(1)
    text = "# Blob\n\n" + "-".join(rng.choice(WORDS) for _ in range(1000))
    assert " " not in text[8:]
    drafts = StructureChunker(tokenizer, max_tokens=100, overlap_tokens=10).chunk(doc(text))
    check_coverage(text, drafts)
    assert len(drafts) > 5
    for d in drafts:
        assert d.token_count == tokenizer.count(d.text) <= 100


def test_structure_plain_text_uses_paragraphs(tokenizer: HfTokenizer) -> None:
    rng = random.Random(4)
    paragraphs = [paragraph(rng) for _ in range(30)]
    text = "\n\n".join(paragraphs)
    drafts = StructureChunker(tokenizer, max_tokens=100).chunk(doc(text))
    assert all(d.section is None for d in drafts)
    for p in paragraphs:
        start = text.index(p)
        assert any(d.start_char <= start and start + len(p) <= d.end_char for d in drafts)
    assert all(d.token_count is not None and d.token_count <= 100 for d in drafts)


def test_structure_chinese(tokenizer: HfTokenizer) -> None:
    text = "# 标题\n\n" + chinese_text(random.Random(2), 200)
    drafts = StructureChunker(tokenizer, max_tokens=50).chunk(doc(text))
    check_coverage(text, drafts)
    for d in drafts:
        assert d.token_count == tokenizer.count(d.text) <= 50
        assert d.section == "标题"


def test_structure_clamps_to_the_encoder_limit(tokenizer: HfTokenizer, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ragindex.chunking.structure"):
        chunker = StructureChunker(tokenizer, max_tokens=480)
    assert tokenizer.max_length == 256
    assert chunker.limit == 254
    assert chunker.truncation_warning is not None
    for number in ("480", "256", "254"):
        assert number in chunker.truncation_warning
    assert chunker.warnings == [chunker.truncation_warning]
    assert [r.getMessage() for r in caplog.records] == [chunker.truncation_warning]
    config = chunker.config()
    assert config["limit"] == 254
    assert config["max_tokens"] == 480
    assert config["tokenizer"] == "model"
    rng = random.Random(0)
    text = markdown_doc(rng, 6, big=True)
    assert all(d.token_count is not None and d.token_count <= 254 for d in chunker.chunk(doc(text)))
    fits = StructureChunker(tokenizer, max_tokens=200)
    assert fits.limit == 200
    assert fits.truncation_warning is None
    assert fits.warnings == []


def test_structure_rejects_overlap_not_below_limit(tokenizer: HfTokenizer) -> None:
    with pytest.raises(ConfigurationError, match="254"):
        StructureChunker(tokenizer, max_tokens=480, overlap_tokens=300)


def test_structure_chunk_many_equals_chunk(tokenizer: HfTokenizer) -> None:
    rng = random.Random(8)
    docs = [doc(markdown_doc(rng, rng.randint(0, 8), big=i % 3 == 0)) for i in range(20)] + [doc(""), doc("  \n")]
    chunker = StructureChunker(tokenizer, max_tokens=128, overlap_tokens=8)
    assert chunker.chunk_many(docs) == [chunker.chunk(d) for d in docs]
    assert chunker.chunk(doc("")) == []


def test_structure_long_document_tokenized_in_blocks(tokenizer: HfTokenizer) -> None:
    rng = random.Random(12)
    text = markdown_doc(rng, 400)
    assert len(text) > 100_000
    drafts = StructureChunker(tokenizer, max_tokens=200).chunk(doc(text))
    check_coverage(text, drafts)
    sample = drafts[:: max(1, len(drafts) // 40)]
    assert all(d.token_count == tokenizer.count(d.text) <= 200 for d in sample)


# --- determinism -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CHUNKER_NAMES)
def test_deterministic(name: str, tokenizer: HfTokenizer) -> None:
    rng = random.Random(21)
    document = doc(markdown_doc(rng, 10, big=True))
    first = build_chunker(name, tokenizer_factory=lambda: tokenizer).chunk(document)
    second = build_chunker(name, tokenizer_factory=lambda: tokenizer).chunk(document)
    assert first == second
    assert first


# --- tokenizer ---------------------------------------------------------------------------------


def test_hf_tokenizer_counts_without_special_tokens_and_never_truncates(tokenizer: HfTokenizer) -> None:
    assert tokenizer.count("hello world") == 2
    assert tokenizer.offsets("hello world") == [(0, 5), (6, 11)]
    long = "word " * 1000
    assert tokenizer.count(long) == 1000
    texts = ["a b c", "", long]
    assert tokenizer.count_many(texts) == [tokenizer.count(t) for t in texts]
    assert tokenizer.offsets_many(texts) == [tokenizer.offsets(t) for t in texts]
    assert tokenizer.count_many([]) == []


def test_hf_tokenizer_max_length_sources(tmp_path: Path, tokenizer: HfTokenizer) -> None:
    source = resolve_model_dir(MODEL)
    assert source is not None
    shutil.copy(source / "tokenizer.json", tmp_path / "tokenizer.json")
    assert HfTokenizer.from_model_dir(tmp_path).max_length == 512
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 384}))
    assert HfTokenizer.from_model_dir(tmp_path).max_length == 384
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"model_max_length": int(1e30)}))
    assert HfTokenizer.from_model_dir(tmp_path).max_length == 512
    (tmp_path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128}))
    assert HfTokenizer.from_model_dir(tmp_path).max_length == 128
    assert HfTokenizer.from_model_dir(tmp_path, max_length=64).max_length == 64
    assert HfTokenizer.from_model_dir(source).max_length == 256


def test_hf_tokenizer_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"tokenizer\.json"):
        HfTokenizer.from_model_dir(tmp_path)


def test_resolve_model_dir(tmp_path: Path) -> None:
    bundled = resolve_model_dir(MODEL)
    assert bundled is not None
    assert (bundled / "tokenizer.json").is_file()
    assert resolve_model_dir("all-MiniLM-L6-v2") == bundled
    assert resolve_model_dir(str(tmp_path)) == tmp_path
    assert resolve_model_dir("ragindex-test/definitely-not-a-cached-model") is None
    with pytest.raises(ConfigurationError, match="not available locally"):
        tokenizer_for_model("ragindex-test/definitely-not-a-cached-model")
    assert tokenizer_for_model(MODEL).max_length == 256


# --- factory -----------------------------------------------------------------------------------


def test_build_chunker_selects_by_name_and_calls_the_tokenizer_factory_only_for_structure(
    tokenizer: HfTokenizer,
) -> None:
    calls: list[int] = []

    def factory() -> HfTokenizer:
        calls.append(1)
        return tokenizer

    fixed = build_chunker("fixed", chunk_size=100, chunk_overlap=10, tokenizer_factory=factory)
    recursive = build_chunker("recursive", chunk_size=200, chunk_overlap=20, tokenizer_factory=factory)
    assert isinstance(fixed, LayoutChunker) and isinstance(fixed.inner, FixedChunker)
    assert isinstance(recursive, LayoutChunker) and isinstance(recursive.inner, RecursiveChunker)
    assert fixed.config() == {"name": "fixed", "size": 100, "overlap": 10}
    assert recursive.config() == {"name": "recursive", "size": 200, "overlap": 20}
    assert calls == []
    structure = build_chunker("structure", chunk_tokens=100, chunk_token_overlap=5, tokenizer_factory=factory)
    assert calls == [1]
    assert isinstance(structure, LayoutChunker) and isinstance(structure.inner, StructureChunker)
    assert structure.name == "structure"
    assert structure.config() == {
        "name": "structure",
        "max_tokens": 100,
        "overlap_tokens": 5,
        "limit": 100,
        "tokenizer": "model",
        "tokenizer_max_length": 256,
    }


def test_build_chunker_errors() -> None:
    with pytest.raises(ConfigurationError, match="fixed, recursive, structure"):
        build_chunker("semantic")
    with pytest.raises(ConfigurationError, match="tokenizer"):
        build_chunker("structure")
    with pytest.raises(ConfigurationError, match="smaller than the chunk size"):
        build_chunker("recursive", chunk_size=64, chunk_overlap=64)
    with pytest.raises(ConfigurationError):
        build_chunker("fixed", chunk_size=0)


def test_chunker_from_settings() -> None:
    from ragindex.chunking import chunker_from_settings
    from ragindex.config import ChunkingSettings, Settings

    structure = chunker_from_settings(
        ChunkingSettings(chunker="structure", chunk_tokens=100, chunk_token_overlap=10), tokenizer_model=MODEL
    )
    assert structure.config()["limit"] == 100
    assert structure.config()["tokenizer"] == MODEL
    settings = Settings.model_validate({"chunker": "recursive", "chunk_size": 300, "chunk_overlap": 30})
    recursive = chunker_from_settings(settings.chunking, tokenizer_model=settings.dense_model)
    assert recursive.config() == {"name": "recursive", "size": 300, "overlap": 30}
    whole = settings.chunking.model_copy(update={"chunk_whole_if_fits": True})
    assert chunker_from_settings(whole, tokenizer_model=MODEL).config()["whole_if_fits"] == 238
    remote = chunker_from_settings(whole, tokenizer_model="text-embedding-3-small", local_model=False)
    assert remote.config() == {"name": "recursive", "size": 300, "overlap": 30}
    missing = ChunkingSettings(chunker="structure")
    with pytest.raises(ConfigurationError, match="not available locally"):
        chunker_from_settings(missing, tokenizer_model="ragindex-test/definitely-not-a-cached-model")
