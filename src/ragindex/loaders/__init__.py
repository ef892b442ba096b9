"""ragindex.loaders layer: a file's bytes -> :class:`~ragindex.types.Document` objects.

Importing this package is cheap: pdfplumber, pypdfium2, Pillow, BeautifulSoup, python-docx, python-pptx and
openpyxl are imported by the loader that needs them, when it loads a file.
"""

from ragindex.loaders.docx import DocxLoader
from ragindex.loaders.html import HtmlLoader
from ragindex.loaders.markdown import MarkdownLoader
from ragindex.loaders.pdf import PdfLoader
from ragindex.loaders.pptx import PptxLoader
from ragindex.loaders.protocol import Loader
from ragindex.loaders.records import RecordsLoader
from ragindex.loaders.registry import LoaderRegistry, build_registry
from ragindex.loaders.text import TextLoader
from ragindex.loaders.xlsx import XlsxLoader

__all__ = [
    "DocxLoader",
    "HtmlLoader",
    "Loader",
    "LoaderRegistry",
    "MarkdownLoader",
    "PdfLoader",
    "PptxLoader",
    "RecordsLoader",
    "TextLoader",
    "XlsxLoader",
    "build_registry",
]
