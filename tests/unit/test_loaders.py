"""Loaders on real files built in tmp_path (reportlab pdfs, python-docx documents, html, json/jsonl)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ragindex.errors import DocumentLoadError, InputError, UnsupportedFormatError
from ragindex.loaders import (
    DocxLoader,
    HtmlLoader,
    LoaderRegistry,
    MarkdownLoader,
    PdfLoader,
    RecordsLoader,
    TextLoader,
    build_registry,
)
from ragindex.types import Document


def _load(loader, path: Path, data: bytes) -> list[Document]:
    path.write_bytes(data)
    return loader.load(path, path.read_bytes())


def _page_of(doc: Document, offset: int) -> int:
    page = None
    for span in doc.pages:
        if span.start <= offset:
            page = span.page
    assert page is not None
    return page


def _pdf(pages: list[list[str]]) -> bytes:
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, invariant=1)
    pdf.setTitle("Loader test")
    for lines in pages:
        y = 720
        for line in lines:
            pdf.drawString(72, y, line)
            y -= 18
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


# --- text ------------------------------------------------------------------------------------------


def test_text_utf8_with_bom_and_crlf(tmp_path):
    path = tmp_path / "note.txt"
    (doc,) = _load(TextLoader(), path, "\ufeffFirst line\r\nZweite Zeile: größer\r\n\r\nlast\r".encode())
    assert doc.text == "First line\nZweite Zeile: größer\n\nlast\n"
    assert doc.source_uri == str(path)
    assert doc.parser == "text"
    assert doc.warnings == ()


def test_text_in_latin1_or_cp1252_is_read_as_windows_1252_with_a_warning(tmp_path):
    data = "Un café crème, s'il vous plaît: “déjà vu” — 5 €".encode("cp1252") + b" ok \xff\xfe \x81 end"
    (doc,) = _load(TextLoader(), tmp_path / "latin.txt", data)
    assert doc.text == "Un café crème, s'il vous plaît: “déjà vu” — 5 € ok ÿþ \x81 end"
    assert doc.warnings == ("not valid UTF-8: read as Windows-1252 (Latin-1); save the file as UTF-8 to silence this",)


def test_utf8_text_with_a_few_corrupt_bytes_keeps_its_text(tmp_path):
    data = "Zweite Zeile: größer".encode() + b" ok \xff\xfe end"
    (doc,) = _load(TextLoader(), tmp_path / "utf8.txt", data)
    assert doc.text == "Zweite Zeile: größer ok \ufffd\ufffd end"
    assert doc.warnings == ("not valid UTF-8: 2 bytes replaced with U+FFFD",)


@pytest.mark.parametrize("encoding", ["gbk", "big5", "shift_jis"])
def test_text_in_a_double_byte_legacy_encoding_is_refused_naming_the_fix(tmp_path, encoding):
    dense = {"gbk": "数据治理流程是企业数据管理的核心。\n", "big5": "資料治理流程是企業資料管理的核心。\n"}.get(
        encoding, "データ管理の中心です。\n"
    )
    sparse = "An English report that quotes one phrase, " + dense.strip() + ", and goes on in English.\n"
    for text in (dense * 20, sparse * 5):
        with pytest.raises(DocumentLoadError, match=r"double-byte legacy encoding .*iconv -f GBK -t UTF-8"):
            _load(TextLoader(), tmp_path / "legacy.txt", text.encode(encoding))


def test_text_utf16_with_bom(tmp_path):
    (doc,) = _load(TextLoader(), tmp_path / "w.txt", "数据治理\r\nline".encode("utf-16"))
    assert doc.text == "数据治理\nline"
    assert doc.warnings == ()


def test_text_whitespace_only_gives_empty_document(tmp_path):
    (doc,) = _load(TextLoader(), tmp_path / "blank.txt", b"  \n\t\n")
    assert doc.text.strip() == ""


# --- markdown --------------------------------------------------------------------------------------


def test_markdown_kept_verbatim_with_title(tmp_path):
    source = "Intro line\n\n```\n# not a heading\n```\n\n# Real Title #\n\n## Section\n\nBody.\n"
    (doc,) = _load(MarkdownLoader(), tmp_path / "guide.md", source.encode())
    assert doc.text == source
    assert doc.title == "Real Title"
    assert doc.parser == "markdown"


def test_markdown_setext_title_and_no_title(tmp_path):
    (doc,) = _load(MarkdownLoader(), tmp_path / "a.markdown", b"Setext Title\n============\n\ntext\n")
    assert doc.title == "Setext Title"
    (doc,) = _load(MarkdownLoader(), tmp_path / "b.md", b"## only a subsection\n\ntext\n")
    assert doc.title is None


# --- pdf -------------------------------------------------------------------------------------------


def test_pdf_page_spans_map_text_to_pages(tmp_path):
    data = _pdf(
        [
            ["Alpha page talks about apples.", "Apples grow on trees."],
            ["Bravo page talks about bicycles."],
            ["Charlie page talks about canyons."],
        ]
    )
    path = tmp_path / "three.pdf"
    (doc,) = _load(PdfLoader(), path, data)
    assert doc.parser == "pdf"
    assert doc.source_uri == str(path)
    assert doc.metadata["page_count"] == 3
    assert [span.page for span in doc.pages] == [1, 2, 3]
    assert doc.pages[0].start == 0
    for word, page in (("apples", 1), ("Apples grow", 1), ("bicycles", 2), ("canyons", 3)):
        assert _page_of(doc, doc.text.index(word)) == page
    for span in doc.pages:
        assert doc.text[span.start :].startswith(("Alpha", "Bravo", "Charlie")[span.page - 1])
    assert "\n\nBravo page" in doc.text
    assert doc.title == "Loader test"
    assert doc.warnings == ()


def test_pdf_blank_page_is_counted_but_has_no_span(tmp_path):
    (doc,) = _load(PdfLoader(), tmp_path / "gap.pdf", _pdf([["first words"], [], ["third words"]]))
    assert doc.metadata["page_count"] == 3
    assert [span.page for span in doc.pages] == [1, 3]
    assert _page_of(doc, doc.text.index("third")) == 3
    assert doc.warnings == ()


def test_pdf_without_text_warns(tmp_path):
    (doc,) = _load(PdfLoader(), tmp_path / "scan.pdf", _pdf([[], []]))
    assert doc.text == ""
    assert doc.pages == ()
    assert doc.metadata["page_count"] == 2
    assert doc.warnings == ("no extractable text (scanned pdf?)",)


def test_corrupt_pdf_raises_document_load_error(tmp_path):
    import random

    noise = random.Random(7).randbytes(4000)
    with pytest.raises(DocumentLoadError) as info:
        _load(PdfLoader(), tmp_path / "broken.pdf", b"%PDF-1.4\n" + noise)
    assert "broken.pdf" in str(info.value)
    assert info.value.__cause__ is not None
    assert isinstance(info.value, InputError)


# --- html ------------------------------------------------------------------------------------------

_HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>  Brewing   Guide </title>
<style>body { color: red; }</style><script>var secret = "do not index";</script></head>
<body>
<!-- a comment that must vanish -->
<noscript>enable javascript</noscript><template><p>template text</p></template>
<h1>Pour over</h1>
<p>Use <b>fresh</b>
   beans.</p>
<div>Grind medium-fine.<br>Rinse the filter.</div>
<h3>Ratios</h3>
<ul><li>15 g coffee</li><li>250 g water</li></ul>
<table><tr><th>Method</th><th>Time</th></tr><tr><td>V60</td><td>3 min</td></tr></table>
<p>Enjoy – café au lait.</p>
</body></html>
"""


def test_html_text_headings_and_dropped_elements(tmp_path):
    (doc,) = _load(HtmlLoader(), tmp_path / "brew.html", _HTML.encode())
    assert doc.text == (
        "# Pour over\n\n"
        "Use fresh beans.\n\n"
        "Grind medium-fine.\nRinse the filter.\n\n"
        "### Ratios\n\n"
        "- 15 g coffee\n- 250 g water\n\n"
        "Method | Time\nV60 | 3 min\n\n"
        "Enjoy – café au lait."
    )
    assert doc.title == "Brewing Guide"
    assert doc.parser == "html"
    for hidden in ("secret", "color", "comment", "javascript", "template text"):
        assert hidden not in doc.text


def test_html_declared_charset_and_title_fallback(tmp_path):
    page = '<html><head><meta charset="iso-8859-1"></head><body><h1>Caf\xe9</h1><p>cr\xe8me</p></body></html>'
    (doc,) = _load(HtmlLoader(), tmp_path / "latin.htm", page.encode("latin-1"))
    assert doc.text == "# Café\n\ncrème"
    assert doc.title == "Café"
    assert doc.warnings == ()


def test_html_without_visible_text_is_empty(tmp_path):
    (doc,) = _load(HtmlLoader(), tmp_path / "empty.html", b"<html><script>x()</script></html>")
    assert doc.text == ""


# --- docx ------------------------------------------------------------------------------------------


def _docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Quarterly Report", level=0)
    document.add_paragraph("Revenue grew in every region.")
    document.add_heading("Regional results", level=1)
    table = document.add_table(rows=3, cols=2)
    for row, values in zip(table.rows, [("Region", "Growth"), ("North", "12%"), ("South", "9%")], strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_heading("Outlook", level=2)
    document.add_paragraph("Hiring continues.", style="List Bullet")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_docx_headings_paragraphs_and_table_in_order(tmp_path):
    path = tmp_path / "report.docx"
    (doc,) = _load(DocxLoader(), path, _docx())
    assert doc.text == (
        "# Quarterly Report\n\n"
        "Revenue grew in every region.\n\n"
        "# Regional results\n\n"
        "| Region | Growth |\n| --- | --- |\n| North | 12% |\n| South | 9% |\n\n"
        "## Outlook\n\n"
        "- Hiring continues."
    )
    assert doc.title == "Quarterly Report"
    assert doc.parser == "docx"
    assert doc.source_uri == str(path)


def test_docx_merged_cells_are_not_repeated(tmp_path):
    import docx

    document = docx.Document()
    table = document.add_table(rows=2, cols=3)
    merged = table.cell(0, 0).merge(table.cell(0, 1))
    merged.text = "Wide"
    table.cell(0, 2).text = "Right"
    for cell, value in zip(table.rows[1].cells, "abc", strict=True):
        cell.text = value
    buffer = io.BytesIO()
    document.save(buffer)
    (doc,) = _load(DocxLoader(), tmp_path / "merged.docx", buffer.getvalue())
    # the merged cell's text once, in its first grid column: the columns stay aligned
    assert doc.text == "| Wide |  | Right |\n| --- | --- | --- |\n| a | b | c |"


def test_corrupt_docx_raises_document_load_error(tmp_path):
    with pytest.raises(DocumentLoadError) as info:
        _load(DocxLoader(), tmp_path / "bad.docx", b"PK\x03\x04 this is not a zip archive")
    assert "bad.docx" in str(info.value)
    assert info.value.__cause__ is not None


# --- records ---------------------------------------------------------------------------------------


def _jsonl(*records: object) -> bytes:
    return "\n".join(json.dumps(r) if not isinstance(r, str) else r for r in records).encode()


def test_jsonl_records_beir_style(tmp_path):
    path = tmp_path / "corpus.jsonl"
    data = _jsonl(
        {"_id": "4983", "title": "Microstructural development", "text": "Alterations of the brain.", "metadata": {}},
        "",
        {"_id": 7, "title": "", "text": "Only text here.", "year": 2001},
    )
    docs = _load(RecordsLoader(), path, data)
    assert [d.source_uri for d in docs] == [f"{path}#4983", f"{path}#7"]
    assert docs[0].text == "Microstructural development\n\nAlterations of the brain."
    assert docs[0].title == "Microstructural development"
    assert docs[0].metadata == {"_id": "4983", "metadata": {}, "record_id": "4983"}
    assert docs[1].text == "Only text here."
    assert docs[1].title is None
    assert docs[1].metadata == {"_id": 7, "year": 2001, "record_id": "7"}
    assert all(d.parser == "records" for d in docs)
    assert docs[0].warnings == ()


def test_records_without_id_field_use_position_and_selected_metadata(tmp_path):
    loader = RecordsLoader(text_fields=["body", "tags"], id_field="uid", metadata_fields=["lang", "absent"])
    data = json.dumps([{"body": "first", "tags": ["x", "y"], "lang": "en", "n": 1}, {"body": "second", "lang": "de"}])
    path = tmp_path / "items.json"
    docs = _load(loader, path, data.encode())
    assert [d.source_uri for d in docs] == [f"{path}#0", f"{path}#1"]
    assert docs[0].text == 'first\n\n["x", "y"]'
    assert docs[0].metadata == {"lang": "en", "record_id": "0"}
    assert docs[1].metadata == {"lang": "de", "record_id": "1"}


def test_single_object_json(tmp_path):
    (doc,) = _load(RecordsLoader(), tmp_path / "one.json", b'{"_id": "a", "text": "hello"}')
    assert doc.text == "hello"
    assert doc.source_uri.endswith("one.json#a")


def test_records_missing_text_are_skipped_with_warning_on_first(tmp_path):
    data = _jsonl({"_id": "a", "other": 1}, {"_id": "b", "text": "kept"}, {"_id": "c", "text": "  "})
    docs = _load(RecordsLoader(), tmp_path / "mixed.ndjson", data)
    assert [d.metadata["record_id"] for d in docs] == ["b"]
    assert len(docs[0].warnings) == 1
    assert "2 record(s) skipped" in docs[0].warnings[0]
    assert "'a', 'c'" in docs[0].warnings[0]


def test_records_with_no_text_field_at_all_raise(tmp_path):
    with pytest.raises(DocumentLoadError, match=r"text fields \['title', 'text'\]"):
        _load(RecordsLoader(), tmp_path / "none.jsonl", _jsonl({"_id": "a", "body": "x"}, {"_id": "b"}))


def test_jsonl_invalid_line_fails_alone_and_names_the_line(tmp_path):
    data = _jsonl({"_id": "a", "text": "ok"}, "", '{"_id": "b", "text": ')
    good, bad = _load(RecordsLoader(), tmp_path / "bad.jsonl", data)
    assert (good.error, good.text) == (None, "ok")
    assert bad.source_uri == f"{tmp_path / 'bad.jsonl'}#line 3"
    assert bad.error is not None and bad.error.startswith("bad.jsonl: line 3: invalid JSON (Expecting value at column")


def test_jsonl_non_object_line_fails_alone(tmp_path):
    good, bad = _load(RecordsLoader(), tmp_path / "list.jsonl", _jsonl({"text": "a"}, [1, 2]))
    assert good.error is None
    assert bad.error == "list.jsonl: line 2: expected a JSON object, got list"


def test_a_file_where_no_record_can_be_read_fails_as_a_whole(tmp_path):
    with pytest.raises(DocumentLoadError, match="line 1: invalid JSON"):
        _load(RecordsLoader(), tmp_path / "junk.jsonl", b"not json\n[1]\n")


def test_json_decoder_messages_ending_in_at_are_not_doubled(tmp_path):
    (_good, bad) = _load(RecordsLoader(), tmp_path / "ctl.jsonl", b'{"text": "a"}\n{"text": "x\x01y"}\n')
    assert bad.error is not None and "Invalid control character at column" in bad.error and "at at" not in bad.error


def test_invalid_json_document(tmp_path):
    with pytest.raises(DocumentLoadError, match="invalid JSON"):
        _load(RecordsLoader(), tmp_path / "bad.json", b'[{"text": "a"},')
    with pytest.raises(DocumentLoadError, match="expected a JSON object or a list"):
        _load(RecordsLoader(), tmp_path / "num.json", b"42")


def test_a_duplicate_record_id_fails_alone(tmp_path):
    data = _jsonl({"_id": "x", "text": "one"}, {"_id": "y", "text": "two"}, {"_id": "x", "text": "three"})
    docs = _load(RecordsLoader(), tmp_path / "dup.jsonl", data)
    assert [d.text for d in docs if d.error is None] == ["one", "two"]
    (dup,) = [d for d in docs if d.error]
    assert dup.error is not None and "line 3: duplicate record id 'x' (first at line 1)" in dup.error


def test_position_id_colliding_with_explicit_id_is_a_duplicate(tmp_path):
    data = _jsonl({"_id": "1", "text": "explicit"}, {"text": "positional"})
    docs = _load(RecordsLoader(), tmp_path / "clash.jsonl", data)
    assert [d.error is None for d in docs] == [True, False]
    assert "duplicate record id '1'" in (docs[1].error or "")


def test_records_file_without_records_gives_empty_document(tmp_path):
    (doc,) = _load(RecordsLoader(), tmp_path / "empty.json", b"[]")
    assert doc.text == ""
    assert doc.warnings == ("no records",)


# --- registry --------------------------------------------------------------------------------------


def test_registry_picks_loader_by_lowercased_suffix():
    registry = LoaderRegistry()
    assert isinstance(registry.for_path(Path("A.PDF")), PdfLoader)
    assert isinstance(registry.for_path(Path("x.Md")), MarkdownLoader)
    assert isinstance(registry.for_path(Path("x.htm")), HtmlLoader)
    assert isinstance(registry.for_path(Path("x.ndjson")), RecordsLoader)
    assert isinstance(registry.for_path(Path("x.docx")), DocxLoader)
    assert isinstance(registry.for_path(Path("x.txt")), TextLoader)
    assert registry.supported_suffixes == tuple(sorted(registry.supported_suffixes))
    assert {".pdf", ".md", ".txt", ".html", ".json", ".jsonl", ".docx"} <= set(registry.supported_suffixes)


def test_registry_unsupported_suffix_lists_supported():
    registry = LoaderRegistry()
    with pytest.raises(UnsupportedFormatError) as info:
        registry.for_path(Path("/data/sheet.ods"))
    message = str(info.value)
    assert "'.ods'" in message
    assert ".xlsx" in message
    assert ".pdf" in message
    assert ".jsonl" in message
    with pytest.raises(UnsupportedFormatError, match="a file without a suffix has no loader; supported: "):
        registry.for_path(Path("Makefile"))


def test_build_registry_passes_record_settings(tmp_path):
    from ragindex.config import LoadingSettings, Settings

    settings = Settings(json_text_fields=["body"], json_id_field="key", json_metadata_fields=["lang"])
    assert settings.loading == LoadingSettings(
        json_text_fields=["body"], json_id_field="key", json_metadata_fields=["lang"]
    )
    loader = build_registry(settings.loading).for_path(Path("x.jsonl"))
    path = tmp_path / "x.jsonl"
    (doc,) = _load(loader, path, _jsonl({"key": "k1", "body": "text", "lang": "fr", "drop": 1}))
    assert doc.source_uri == f"{path}#k1"
    assert doc.metadata == {"lang": "fr", "record_id": "k1"}


def test_importing_loaders_does_not_import_heavy_libraries():
    heavy = ("pdfplumber", "pypdfium2", "PIL", "bs4", "docx", "pptx", "openpyxl")
    code = f"import sys, ragindex.loaders; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- the bundled sample corpus ---------------------------------------------------------------------

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_sample_corpus_loads_cleanly():
    registry = LoaderRegistry()
    files = sorted(p for p in EXAMPLES.iterdir() if p.is_file())
    assert len(files) >= 8
    assert sum(p.stat().st_size for p in files) < 200_000
    loaded = {p.name: registry.for_path(p).load(p, p.read_bytes()) for p in files}
    for name, docs in loaded.items():
        for doc in docs:
            assert doc.text.strip(), name
            assert doc.warnings == (), name
    (pdf,) = loaded["solar_system.pdf"]
    assert [span.page for span in pdf.pages] == [1, 2, 3]
    assert _page_of(pdf, pdf.text.index("Galilean moons")) == 2
    assert _page_of(pdf, pdf.text.index("Kuiper belt")) == 3
    assert "| Ganymede | Jupiter | 5,268 | 1610 |" in pdf.text  # the ruled table of the largest moons
    assert _page_of(pdf, pdf.text.index("| Ganymede |")) == 2
    (scan,) = loaded["lighthouse_log_scan.png"]  # no text layer: read by OCR
    assert "fog horn was sounded every thirty seconds" in " ".join(scan.text.split())
    assert scan.metadata["ocr_pages"]["1"] > 0.8
    assert len(loaded["faq.jsonl"]) == 8
    assert "数据质量" in loaded["数据治理.txt"][0].text
    (docx_doc,) = loaded["bicycle_maintenance.docx"]
    assert "| Check brake pads | Monthly |" in docx_doc.text
    (html_doc,) = loaded["coffee_brewing.html"]
    assert "pageViews" not in html_doc.text
    assert "## Grind size" in html_doc.text
