"""The dense unit sized to the model: the structure chunker with ``chunk_tokens=0`` cuts by the encoder's window.

With the shipped model's own tokenizer (all-MiniLM-L6-v2, 256 tokens with [CLS] and [SEP]): a document that fits
the window is one chunk, its whole text; a longer one is cut near the window at sentence boundaries, each piece
overlapping the one before by about ``chunk_token_overlap`` tokens.
"""

from __future__ import annotations

import pytest

from ragindex.chunking.factory import chunker_from_settings
from ragindex.chunking.structure import StructureChunker
from ragindex.chunking.tokens import HfTokenizer, tokenizer_for_model
from ragindex.config import Settings
from ragindex.types import Document

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
SENTENCE = "The pdb module is a simple but adequate console-mode debugger for Python, part of the standard library. "


@pytest.fixture(scope="module")
def tokenizer() -> HfTokenizer:
    return tokenizer_for_model(MODEL)


def _doc(text: str) -> Document:
    return Document(source_uri="mem://doc", text=text, parser="text")


def test_zero_means_the_encoders_window_without_a_warning(tokenizer: HfTokenizer) -> None:
    chunker = StructureChunker(tokenizer, 0, 32)
    assert tokenizer.max_length == 256
    assert chunker.limit == chunker.max_tokens == 254
    assert chunker.warnings == [] and chunker.truncation_warning is None
    settings = Settings(_env_file=None, chunker="structure", chunk_tokens=0, chunk_token_overlap=32)
    built = chunker_from_settings(settings.chunking, tokenizer_model=MODEL)
    assert built.config()["limit"] == 254


def test_a_document_that_fits_the_window_is_one_unit(tokenizer: HfTokenizer) -> None:
    text = "Title of a short abstract\n\n" + SENTENCE * 9
    assert tokenizer.count(text) <= 254
    (only,) = StructureChunker(tokenizer, 0, 32).chunk(_doc(text))
    assert only.text == text.strip() and only.token_count == tokenizer.count(text.strip())


def test_a_longer_document_is_cut_near_the_window_with_overlap(tokenizer: HfTokenizer) -> None:
    text = "".join(f"Sentence {i}: {SENTENCE}" for i in range(30))
    chunks = StructureChunker(tokenizer, 0, 32).chunk(_doc(text))
    assert len(chunks) == 4  # 30 sentences of 27 tokens: 810 tokens in windows of 254, overlapping
    for chunk in chunks:
        assert chunk.token_count is not None and tokenizer.count(chunk.text) == chunk.token_count <= 254
        assert text[chunk.start_char : chunk.end_char] == chunk.text
    assert all(c.token_count is not None and c.token_count >= 254 - 32 for c in chunks[:-1])  # near the window
    for before, after in zip(chunks, chunks[1:], strict=False):
        assert after.start_char < before.end_char  # they overlap ...
        overlap = tokenizer.count(text[after.start_char : before.end_char])
        assert 0 < overlap <= 32 + 8  # ... by about chunk_token_overlap (cut at a sentence boundary)
    assert chunks[0].start_char == 0 and chunks[-1].end_char == len(text.rstrip())
