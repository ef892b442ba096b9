"""The loader seam: a file on disk -> one or more :class:`~ragindex.types.Document`."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ragindex.types import Document


class Loader(Protocol):
    """Turns the bytes of one file into documents.

    Implementations raise :class:`ragindex.errors.DocumentLoadError` for a corrupt file;
    non-fatal problems (e.g. undecodable bytes replaced) go into ``Document.warnings``.
    """

    name: str
    suffixes: tuple[str, ...]

    def load(self, path: Path, data: bytes) -> list[Document]:
        """Parse ``data`` (the bytes of ``path``) into documents; ``source_uri`` of each is set by the loader.

        Args:
            path: The (absolute, resolved) path of the file.
            data: The bytes of the file.
        """
        ...
