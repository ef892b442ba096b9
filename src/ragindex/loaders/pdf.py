"""PDF files via pypdf (imported when a pdf is loaded, never at package import)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from ragindex.errors import DocumentLoadError
from ragindex.loaders._decode import normalise_newlines
from ragindex.types import Document, PageSpan

if TYPE_CHECKING:
    from pypdf import PdfReader

PAGE_SEPARATOR = "\n\n"


class PdfLoader:
    """Loads ``.pdf`` files: page texts joined by a blank line, with a :class:`PageSpan` per page that has text.

    Pages without extractable text add no characters and no span, but are counted in the
    ``page_count`` metadata; a pdf without any text gets the warning "no extractable text (scanned pdf?)".
    """

    name: str = "pdf"
    suffixes: tuple[str, ...] = (".pdf",)

    def load(self, path: Path, data: bytes) -> list[Document]:
        """Extract the text of every page of ``data`` into one document whose ``source_uri`` is ``str(path)``.

        Returns:
            A single document with ``pages`` mapping character offsets to 1-based page numbers.

        Raises:
            DocumentLoadError: The pdf is corrupt, or encrypted with a password.
        """
        reader, page_count = self._open(path, data)
        texts: list[str] = []
        spans: list[PageSpan] = []
        warnings: list[str] = []
        offset = 0
        for number in range(1, page_count + 1):
            try:
                page_text = normalise_newlines(reader.pages[number - 1].extract_text()).strip()
            # pypdf raises many exception types on damaged content streams; one bad page must not sink the file.
            except Exception as exc:
                warnings.append(f"page {number}: text extraction failed ({type(exc).__name__}: {exc})")
                continue
            if not page_text:
                continue
            if texts:
                offset += len(PAGE_SEPARATOR)
            spans.append(PageSpan(page=number, start=offset))
            texts.append(page_text)
            offset += len(page_text)
        if not texts:
            warnings.append("no extractable text (scanned pdf?)")
        return [
            Document(
                source_uri=str(path),
                text=PAGE_SEPARATOR.join(texts),
                parser=self.name,
                metadata={"page_count": page_count},
                pages=tuple(spans),
                title=_title(reader),
                warnings=tuple(warnings),
            )
        ]

    @staticmethod
    def _open(path: Path, data: bytes) -> tuple[PdfReader, int]:
        from pypdf import PasswordType, PdfReader

        try:
            reader = PdfReader(io.BytesIO(data))
            locked = reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED
            page_count = 0 if locked else len(reader.pages)
        # pypdf signals a corrupt file with PdfReadError but also with ValueError, KeyError, TypeError, ...
        except Exception as exc:
            raise DocumentLoadError(
                f"{path.name}: not a readable pdf ({type(exc).__name__}: {exc})", path=str(path)
            ) from exc
        if locked:
            raise DocumentLoadError(
                f"{path.name}: the pdf is encrypted with a password; decrypt it and ingest it again", path=str(path)
            )
        return reader, page_count


def _title(reader: PdfReader) -> str | None:
    try:
        metadata = reader.metadata
        title = metadata.title if metadata is not None else None
    except Exception:  # a damaged info dictionary only costs the title
        return None
    if not isinstance(title, str) or title.strip().lower() in ("", "untitled"):
        return None
    return title.strip()
