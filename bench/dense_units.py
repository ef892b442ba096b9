"""What a dense unit sized to the model costs at ingest: units and encoder tokens per chunking (issue 28).

The encoder's work at ingest grows with the tokens it reads (all-MiniLM-L6-v2 at up to 256 tokens: about linear),
so the tokens of every dense unit, counted with the model's own tokenizer, compare two chunkings' encoding cost
independently of the machine's load. Each corpus is cut exactly as an ingest cuts it (records loader, the chunker
the settings give, sections and context lines; the indexed text of each chunk), once per chunking given as
``NAME=ENV,ENV``.

Usage::

    .venv/bin/python -m bench.dense_units /work/shared/data/beir/scifact /tmp/ragindex-deb-en --chunking \\
        recursive= structure=RAGINDEX_CHUNKER=structure,RAGINDEX_CHUNK_TOKENS=0,RAGINDEX_CHUNK_TOKEN_OVERLAP=32
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from ragindex.chunking.sections import with_sections
from ragindex.chunking.tokens import tokenizer_for_model
from ragindex.config import Settings
from ragindex.eval.beir import corpus_id
from ragindex.factory import build_chunker
from ragindex.loaders.records import RecordsLoader
from ragindex.store.records import indexed_text
from ragindex.types import Unit


def units(corpus: Path, settings: Settings) -> list[str]:
    """The indexed text of every dense unit (chunk) of ``corpus`` as the ingest would cut it."""
    return [text for _, text in units_with_ids(corpus, settings)]


def units_with_ids(corpus: Path, settings: Settings) -> list[tuple[str, str]]:
    """``(corpus id, indexed text)`` of every dense unit (chunk) of ``corpus`` as the ingest would cut it."""
    chunker = build_chunker(settings)
    out: list[tuple[str, str]] = []
    for doc in RecordsLoader().load(corpus, corpus.read_bytes()):
        if doc.error is not None:
            continue
        drafts = with_sections(
            doc, chunker.chunk(doc), max_chars=settings.section_max_chars, contextual=settings.contextual_chunks
        )
        did = corpus_id(doc.source_uri)
        out += [(did, indexed_text(d.text, d.context)) for d in drafts if d.unit == Unit.CHUNK]
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", nargs="+", type=Path)
    parser.add_argument("--chunking", nargs="+", default=["recursive="])
    args = parser.parse_args(argv)
    print("| collection | chunking | documents | dense units | encoder tokens | tokens per unit |")
    print("|---|---|---:|---:|---:|---:|")
    for data in args.data:
        corpus = data / "corpus.jsonl"
        documents = sum(1 for line in corpus.open(encoding="utf-8") if line.strip())
        for spec in args.chunking:
            name, _, env = spec.partition("=")
            saved = dict(os.environ)
            os.environ.update(dict(item.split("=", 1) for item in env.split(",") if item))
            try:
                settings = Settings(_env_file=None)
                texts = units(corpus, settings)
                tokenizer = tokenizer_for_model(settings.dense_model)
                window = tokenizer.max_length - 2
                tokens = sum(min(tokenizer.count(t), window) + 2 for t in texts)  # the encoder truncates
            finally:
                os.environ.clear()
                os.environ.update(saved)
            print(
                f"| {data.name} | {name} | {documents} | {len(texts)} | {tokens} | {tokens / max(len(texts), 1):.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
