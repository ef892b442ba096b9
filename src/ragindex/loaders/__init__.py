"""ragindex.loaders layer: a file's bytes -> :class:`~ragindex.types.Document` objects.

Importing this package is cheap: pdfplumber, pypdfium2, Pillow, BeautifulSoup and python-docx are imported by the
loader that needs them, when it loads a file.
"""

from ragindex.loaders.docx import DocxLoader
from ragindex.loaders.html import HtmlLoader
from ragindex.loaders.markdown import MarkdownLoader
from ragindex.loaders.pdf import PdfLoader
from ragindex.loaders.protocol import Loader
from ragindex.loaders.records import RecordsLoader
from ragindex.loaders.registry import LoaderRegistry, build_registry
from ragindex.loaders.text import TextLoader

__all__ = [
    "DocxLoader",
    "HtmlLoader",
    "Loader",
    "LoaderRegistry",
    "MarkdownLoader",
    "PdfLoader",
    "RecordsLoader",
    "TextLoader",
    "build_registry",
]
