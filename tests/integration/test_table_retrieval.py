"""Tables that retrieve (issue 26): a question naming a column and a row label finds the row, through a real
ingest and hybrid search; a table continued on the next page answers from the right page, its header and
caption indexed with every piece."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ragindex.engine import Engine
from tablekit import continued_table_pdf, stacked_table_pdf


def _hits(engine: Engine, query: str, top: int = 5) -> list[dict[str, object]]:
    return [h.to_dict() for h in engine.search(query, user_id=1, set_id=1, top_k=top, group_by="none").hits]


def test_a_column_and_a_row_label_find_the_row(make_engine: Callable[..., Engine], tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "costs.pdf").write_bytes(continued_table_pdf()[0])
    (folder / "results.pdf").write_bytes(stacked_table_pdf()[0])
    with make_engine() as engine:
        report = engine.ingest([folder])
        assert report.documents["added"] == 2 and report.documents["failed"] == 0

        hits = _hits(engine, "Year 2 cost of vehicle maintenance")
        found = [h for h in hits if "| Vehicle maintenance | $38,900 | $40,070 |" in str(h["text"])]
        assert found, [h["text"] for h in hits]
        assert found[0]["filename"] == "costs.pdf" and found[0]["page"] == 2 and found[0]["chunk_type"] == "table"
        assert str(found[0]["text"]).startswith("| Cost item | Year 1 | Year 2 |")  # the header, again

        hits = _hits(engine, "TEDS all of HTML with 6 encoder layers")
        assert any("| 6 | HTML | 0.969 | 0.927 | 0.955 |" in str(h["text"]) for h in hits), [h["text"] for h in hits]
        assert engine.verify().ok
