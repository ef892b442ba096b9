"""Text formats refuse binary bytes ("binary content"): known magic numbers, NUL bytes, mostly control bytes."""

from __future__ import annotations

import codecs
import gzip
import io
import zipfile
from pathlib import Path

import pytest

from ragindex.errors import DocumentLoadError
from ragindex.loaders._decode import binary_reason
from ragindex.loaders.registry import LoaderRegistry


def zipped() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("word/document.xml", "<w:document/>")
    return buffer.getvalue()


BINARY = {
    "pdf.md": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n",
    "zip.txt": zipped(),
    "png.json": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    "elf.txt": Path("/bin/ls").read_bytes()[:4096] if Path("/bin/ls").exists() else b"\x7fELF\x02\x01\x01\x00",
    "gz.jsonl": gzip.compress(b"text inside gzip"),
    "nul.md": b"# Title\n\nA paragraph\x00 with a NUL byte in the middle.",
    "escapes.txt": bytes(range(1, 32)) * 40 + b"\x1b[2J\x1b]0;title\x07",
    "utf16-no-bom.txt": "plain words".encode("utf-16-le"),
    "nul.html": b"<html><body><p>text</p>\x00\x00</body></html>",
}
TEXT = {
    "utf8.md": "# Café\n\n数据治理流程 and emoji 🚲, tabs\tand\r\nCRLF.".encode(),
    "utf16.txt": codecs.BOM_UTF16_LE + "UTF-16 with a byte-order mark".encode("utf-16-le"),
    "latin1.txt": "Un café crème à la française, s'il vous plaît, près de l'église.".encode("latin-1"),
    "escape-in-text.md": b"A terminal escape \x1b[2J inside an otherwise normal paragraph of text.",
    "gbk.html": '<html><head><meta charset="gbk"></head><body><p>数据治理流程</p></body></html>'.encode("gbk"),
    "records.jsonl": b'{"_id": "1", "text": "a record"}\n',
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_bytes_in_a_text_format_fail_with_binary_content(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(BINARY[name])
    with pytest.raises(DocumentLoadError, match=rf"{name}: binary content \(") as caught:
        LoaderRegistry().for_path(path).load(path, BINARY[name])
    assert "convert it to UTF-8" in caught.value.message


@pytest.mark.parametrize("name", sorted(TEXT))
def test_text_in_any_supported_encoding_loads(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(TEXT[name])
    documents = LoaderRegistry().for_path(path).load(path, TEXT[name])
    assert documents and documents[0].text.strip()


def test_the_reason_names_what_the_bytes_are() -> None:
    assert binary_reason(BINARY["pdf.md"]) == "the bytes of a PDF"
    assert binary_reason(BINARY["nul.md"]) == "NUL bytes"
    reason = binary_reason(BINARY["escapes.txt"])
    assert reason is not None and "control characters or invalid UTF-8" in reason
    assert binary_reason(TEXT["latin1.txt"]) is None, "a few undecodable bytes are replaced, not refused"
    assert binary_reason(TEXT["gbk.html"], utf8=False) is None, "html declares its own encoding"
    gbk = "数据治理流程是企业数据管理的核心。".encode("gbk")
    assert binary_reason(gbk) is not None, "a .txt in GBK read as UTF-8 is noise: the message says to convert it"
    assert binary_reason(b"") is None
