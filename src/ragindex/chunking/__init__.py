"""ragindex.chunking layer: Document -> ordered ChunkDraft pieces (fixed, recursive, structure-aware).

Importing this package is cheap: the ``tokenizers`` library is loaded only when a tokenizer is.
"""

from ragindex.chunking.factory import CHUNKER_NAMES, build_chunker, chunker_from_settings
from ragindex.chunking.fixed import FixedChunker
from ragindex.chunking.protocol import BatchTokenizer, Chunker, Tokenizer
from ragindex.chunking.recursive import RecursiveChunker
from ragindex.chunking.structure import StructureChunker
from ragindex.chunking.tokens import HfTokenizer, resolve_model_dir, tokenizer_for_model

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
