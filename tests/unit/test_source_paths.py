"""``SourcePaths``: what the HTTP answers say a document came from (never a path on the server)."""

from __future__ import annotations

from pathlib import Path

from ragindex.service.sources import SourcePaths


def test_uploads_roots_and_the_rest(tmp_path: Path) -> None:
    blobs = tmp_path / "blobs"
    handbook = tmp_path / "srv" / "handbook"
    ops = handbook / "ops"
    ops.mkdir(parents=True)
    single = tmp_path / "srv" / "single.md"
    single.write_text("x")
    paths = SourcePaths(blobs, [handbook, ops, single])
    assert paths.public(f"{blobs}/7/1/notes.md", user_id=7, set_id=1) == "notes.md"
    assert paths.public(f"{blobs}/7/1/faq.jsonl#12", user_id=7, set_id=1) == "faq.jsonl#12"
    # another tenant's or set's upload folder is not this document's root: the name only
    assert paths.public(f"{blobs}/8/1/notes.md", user_id=7, set_id=1) == "notes.md"
    assert paths.public(f"{blobs}/7/2/a/b.md", user_id=7, set_id=1) == "b.md"
    assert paths.public(f"{ops}/pager.md", user_id=7, set_id=1) == "pager.md"  # the deepest root wins
    assert paths.public(f"{handbook}/guides/setup.md", user_id=7, set_id=1) == "guides/setup.md"
    assert paths.public(f"{single}", user_id=7, set_id=1) == "single.md"  # a file root stands for its folder
    assert paths.public("/etc/elsewhere/x.txt#3", user_id=7, set_id=1) == "x.txt#3"
    assert paths.public("relative/already.md", user_id=7, set_id=1) == "relative/already.md"
    assert paths.public(f"{tmp_path}/srv-old/x.md", user_id=7, set_id=1) == "x.md"  # a prefix is not a parent


def test_hits_documents_and_reports(tmp_path: Path) -> None:
    blobs = tmp_path / "blobs"
    paths = SourcePaths(blobs)
    upload = f"{blobs}/7/1/a.md"
    result = {"hits": [{"set_id": 1, "source": upload}], "mode": "hybrid"}
    assert paths.hits(result, user_id=7)["hits"][0]["source"] == "a.md"
    docs = [{"user_id": 7, "set_id": 1, "source": upload, "file": upload}]
    paths.documents(docs, keys=("source", "file"))
    assert docs[0]["source"] == docs[0]["file"] == "a.md"
    stored = {"files": [{"path": upload, "status": "failed"}], "failures": [{"source": upload, "path": upload}]}
    shown = paths.report(stored, user_id=7, set_id=1)
    assert shown == {"files": [{"path": "a.md", "status": "failed"}], "failures": [{"source": "a.md", "path": "a.md"}]}
    assert stored["files"][0]["path"] == upload  # the stored report is not changed
    assert paths.report(None, user_id=7, set_id=1) is None
