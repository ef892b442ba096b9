"""ragindex.chunking layer: Document -> ordered ChunkDraft pieces (fixed, recursive, structure-aware).

Importing this package is cheap: its names are re-exported lazily (a search that only resolves the model's folder
through :mod:`ragindex.chunking.tokens` loads no chunker), and the ``tokenizers`` library is loaded only when a
tokenizer is.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragindex.chunking.factory import CHUNKER_NAMES, build_chunker, chunker_from_settings
    from ragindex.chunking.fixed import FixedChunker
    from ragindex.chunking.protocol import BatchTokenizer, Chunker, Tokenizer
    from ragindex.chunking.recursive import RecursiveChunker
    from ragindex.chunking.structure import StructureChunker
    from ragindex.chunking.tokens import HfTokenizer, resolve_model_dir, tokenizer_for_model

_MODULES = {
    "CHUNKER_NAMES": "factory",
    "build_chunker": "factory",
    "chunker_from_settings": "factory",
    "FixedChunker": "fixed",
    "BatchTokenizer": "protocol",
    "Chunker": "protocol",
    "Tokenizer": "protocol",
    "RecursiveChunker": "recursive",
    "StructureChunker": "structure",
    "HfTokenizer": "tokens",
    "resolve_model_dir": "tokens",
    "tokenizer_for_model": "tokens",
}

__all__ = [
    "CHUNKER_NAMES",
    "BatchTokenizer",
    "Chunker",
    "FixedChunker",
    "HfTokenizer",
    "RecursiveChunker",
    "StructureChunker",
    "Tokenizer",
    "build_chunker",
    "chunker_from_settings",
    "resolve_model_dir",
    "tokenizer_for_model",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
