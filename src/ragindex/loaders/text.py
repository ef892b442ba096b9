"""Plain text files."""

from __future__ import annotations

from pathlib import Path

from ragindex.loaders._decode import decode_text, refuse_binary
from ragindex.types import Document


class TextLoader:
    """Loads ``.txt``/``.text`` files as UTF-8 text; undecodable bytes become U+FFFD plus a warning."""

    name: str = "text"
    suffixes: tuple[str, ...] = (".txt", ".text")

    def load(self, path: Path, data: bytes) -> list[Document]:
        """Decode ``data`` into one document whose ``source_uri`` is ``str(path)``.

        Returns:
            A single document; its text is empty when the file holds only whitespace.

        Raises:
            DocumentLoadError: The bytes are binary (see :func:`ragindex.loaders._decode.binary_reason`).
        """
        refuse_binary(path, data)
        text, warnings = decode_text(data, path)
        return [Document(source_uri=str(path), text=text, parser=self.name, title=self.title(text), warnings=warnings)]

    def title(self, text: str) -> str | None:
        """The document title found in ``text`` (plain text has none)."""
        return None
