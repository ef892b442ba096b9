"""Picks the loader for a file by its suffix."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ragindex.errors import UnsupportedFormatError
from ragindex.loaders.docx import DocxLoader
from ragindex.loaders.html import HtmlLoader
from ragindex.loaders.image import ImageLoader
from ragindex.loaders.markdown import MarkdownLoader
from ragindex.loaders.ocr import TesseractOcr
from ragindex.loaders.pdf import PdfLoader
from ragindex.loaders.pptx import PptxLoader
from ragindex.loaders.protocol import Loader
from ragindex.loaders.records import RecordsLoader
from ragindex.loaders.text import TextLoader
from ragindex.loaders.xlsx import XlsxLoader

if TYPE_CHECKING:
    from ragindex.config.sections import LoadingSettings


class LoaderRegistry:
    """Maps lower-cased file suffixes to loaders: text, markdown, pdf, images, html, docx/pptx/xlsx, json/jsonl.

    Args:
        text_fields: Record fields that form a record's text (see :class:`RecordsLoader`).
        id_field: Record field holding the record id.
        metadata_fields: Record fields kept as metadata (empty: every non-text field).
        extra: Further loaders; a suffix they claim replaces the built-in loader for it.
    """

    def __init__(
        self,
        text_fields: Sequence[str] = ("title", "text"),
        id_field: str = "_id",
        metadata_fields: Sequence[str] = (),
        extra: Iterable[Loader] = (),
    ) -> None:
        self._by_suffix: dict[str, Loader] = {}
        builtin: list[Loader] = [
            TextLoader(),
            MarkdownLoader(),
            PdfLoader(ocr=TesseractOcr),
            ImageLoader(ocr=TesseractOcr),
            HtmlLoader(),
            DocxLoader(),
            PptxLoader(),
            XlsxLoader(),
            RecordsLoader(text_fields=text_fields, id_field=id_field, metadata_fields=metadata_fields),
        ]
        for loader in (*builtin, *extra):
            self.register(loader)

    def register(self, loader: Loader) -> None:
        """Route every suffix of ``loader`` to it (replacing any loader registered for that suffix)."""
        for suffix in loader.suffixes:
            self._by_suffix[suffix.lower()] = loader

    @property
    def supported_suffixes(self) -> tuple[str, ...]:
        """The suffixes with a loader, sorted (``.docx``, ``.htm``, ...)."""
        return tuple(sorted(self._by_suffix))

    def supports(self, path: Path) -> bool:
        """Whether a loader handles ``path`` (by its lower-cased suffix)."""
        return path.suffix.lower() in self._by_suffix

    def for_path(self, path: Path) -> Loader:
        """The loader for ``path``, chosen by its lower-cased suffix.

        Args:
            path: The file to load.

        Returns:
            The loader registered for the suffix.

        Raises:
            UnsupportedFormatError: No loader handles the suffix; the message lists the supported ones.
        """
        suffix = path.suffix.lower()
        loader = self._by_suffix.get(suffix)
        if loader is None:
            what = f"no loader reads the suffix {suffix!r}" if suffix else "a file without a suffix has no loader"
            raise UnsupportedFormatError(
                f"{path.name}: {what}; supported: {', '.join(self.supported_suffixes)} (rename the file, e.g. to .txt)",
                path=str(path),
                suffix=suffix or None,
            )
        return loader


def build_registry(loading: LoadingSettings) -> LoaderRegistry:
    """The registry configured by ``loading`` (record fields, OCR, page and cell limits).

    Args:
        loading: The loading section of the settings (``settings.loading``).

    Returns:
        A registry with every built-in loader.
    """
    ocr = functools.partial(TesseractOcr, loading.ocr_language_codes) if loading.ocr else None
    return LoaderRegistry(
        text_fields=loading.json_text_fields,
        id_field=loading.json_id_field,
        metadata_fields=loading.json_metadata_fields,
        extra=[
            PdfLoader(ocr=ocr, max_pages=loading.max_pdf_pages),
            ImageLoader(ocr=ocr, max_pages=loading.max_pdf_pages),
            XlsxLoader(max_cells=loading.max_spreadsheet_cells),
        ],
    )
