"""A document that fits the dense model's window stays one chunk (``RAGINDEX_CHUNK_WHOLE_IF_FITS``).

Real tokenizer of the shipped all-MiniLM-L6-v2 (256 tokens), real chunkers, real settings.
"""

from __future__ import annotations

import pickle

import pytest

from ragindex import factory
from ragindex.chunking import HfTokenizer, build_chunker, resolve_model_dir
from ragindex.chunking.protocol import Chunker
from ragindex.chunking.whole import CONTEXT_RESERVE, SPECIAL_TOKENS, WholeIfFits
from ragindex.config.settings import Settings
from ragindex.loaders.layout import LayoutBuilder
from ragindex.types import Document

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
ABSTRACT = (
    "Python bindings for the Qt cross-platform toolkit. This package provides the modules for widgets, "
    "networking and SQL access, so that a desktop application can be written in Python alone. It also brings "
    "the designer's user-interface compiler and the resource compiler, and examples that show how the parts "
    "work together. The bindings follow the toolkit's release cycle and keep its names, so that its own "
    "documentation applies. Threads, signals and slots map onto Python objects, and the event loop can run "
    "beside asyncio. This is the version for Python 3; the documentation and the examples are in separate "
    "packages, as are the bindings of the optional web engine."
)  # ~700 characters, ~130 tokens: more than one recursive chunk of 512 characters


@pytest.fixture(scope="module")
def tokenizer() -> HfTokenizer:
    directory = resolve_model_dir(MODEL)
    assert directory is not None
    return HfTokenizer.from_model_dir(directory)


def _chunker(tokenizer: HfTokenizer, whole: bool = True) -> Chunker:
    return build_chunker(
        "recursive", chunk_size=512, chunk_overlap=64, tokenizer_factory=lambda: tokenizer, whole_if_fits=whole
    )


def test_a_document_that_fits_the_window_is_one_chunk_and_a_longer_one_is_cut_as_before(
    tokenizer: HfTokenizer,
) -> None:
    whole, cut = _chunker(tokenizer), _chunker(tokenizer, whole=False)
    short = Document("/d/pyqt.txt", "PyQt\n\n" + ABSTRACT, "text")
    # recursive: the title alone, then the abstract in two (each read without the rest)
    assert [c.text[:12] for c in cut.chunk(short)] == ["PyQt", "Python bindi", "Threads, sig"]
    (one,) = whole.chunk(short)
    assert one.text == short.text and (one.start_char, one.end_char) == (0, len(short.text))
    assert (one.start_line, one.end_line) == (1, 3)
    # three times as long (~390 tokens) does not fit: the recursive chunks, unchanged
    long = Document("/d/long.txt", "\n\n".join([ABSTRACT] * 3), "text")
    assert whole.chunk(long) == cut.chunk(long) and len(whole.chunk(long)) > 3


def test_the_window_leaves_room_for_the_context_line(tokenizer: HfTokenizer) -> None:
    chunker = WholeIfFits(_chunker(tokenizer, whole=False), tokenizer, cuts_above=512)
    assert chunker.capacity == 256 - SPECIAL_TOKENS - CONTEXT_RESERVE
    words = ["alpha", "beta", "gamma", "delta"]
    at_capacity = " ".join(words[i % 4] for i in range(chunker.capacity))
    assert tokenizer.count(at_capacity) == chunker.capacity and chunker.fits(at_capacity)
    assert not chunker.fits(at_capacity + " epsilon")
    assert not chunker.fits("x" * (chunker.capacity * 16 + 1))  # not even tokenized
    # Han script: a token a character, so 300 characters do not fit where 200 do
    assert chunker.fits("数据治理" * 50) and not chunker.fits("数据治理" * 75)


def test_a_markdown_document_that_fits_keeps_its_first_heading_as_section(tokenizer: HfTokenizer) -> None:
    text = "# Install\n\nRun the installer.\n\n## Upgrade\n\n" + ABSTRACT
    (one,) = _chunker(tokenizer).chunk(Document("/d/guide.md", text, "markdown"))
    assert one.text == text and one.section == "Install"


def test_documents_with_layout_are_left_to_the_layout_chunker(tokenizer: HfTokenizer) -> None:
    builder = LayoutBuilder("/d/r.pdf", "pdf")
    builder.start_page(1)
    builder.paragraph(ABSTRACT[:400])
    builder.start_page(2)
    builder.paragraph(ABSTRACT[400:])
    doc = builder.build(title="Report")
    chunks = _chunker(tokenizer).chunk(doc)
    assert chunks == _chunker(tokenizer, whole=False).chunk(doc)
    assert [c.page for c in chunks] == [1, 2]


def test_settings_turn_it_on_for_a_local_model_only_and_fingerprint_it(monkeypatch: pytest.MonkeyPatch) -> None:
    default = Settings(_env_file=None)
    assert not isinstance(factory.build_chunker(default), WholeIfFits)  # off by default (docs/evaluation.md)
    on = Settings(_env_file=None, chunk_whole_if_fits=True)
    chunker = factory.build_chunker(on)
    assert isinstance(chunker, WholeIfFits) and chunker.config()["whole_if_fits"] == 238
    assert on.chunking_fingerprint != default.chunking_fingerprint  # turning it on re-chunks the set
    remote = Settings(
        _env_file=None, chunk_whole_if_fits=True, dense_provider="openai", dense_url="http://127.0.0.1:9/v1"
    )
    assert not isinstance(factory.build_chunker(remote), WholeIfFits)
    monkeypatch.setenv("RAGINDEX_CHUNK_WHOLE_IF_FITS", "true")
    assert Settings(_env_file=None).chunk_whole_if_fits is True


def test_the_chunker_pickles_for_the_parse_child(tokenizer: HfTokenizer) -> None:
    chunker = factory.build_chunker(Settings(_env_file=None, chunk_whole_if_fits=True))
    doc = Document("/d/pyqt.txt", "PyQt\n\n" + ABSTRACT, "text")
    assert pickle.loads(pickle.dumps(chunker)).chunk(doc) == chunker.chunk(doc)
