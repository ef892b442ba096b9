"""Read a BEIR-layout dataset: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

Only a query's ``text`` is read, never its ``metadata`` (SciFact's query metadata holds the evidence, i.e. the
answers). The corpus is ingested as the jsonl file itself through the records loader, so each record becomes a
document whose ``source_uri`` is ``<absolute path of corpus.jsonl>#<_id>``; :func:`corpus_id` maps a hit back.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

from ragindex.errors import ValidationError

__all__ = ["BeirDataset", "corpus_id", "load_dataset", "load_qrels", "load_queries"]


@dataclass(frozen=True, slots=True)
class BeirDataset:
    """A BEIR dataset's paths, test queries (id -> text) and qrels (query id -> doc id -> grade)."""

    root: Path
    corpus: Path
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def corpus_id(source_uri: str) -> str:
    """The corpus ``_id`` of a hit whose source is ``<corpus path>#<_id>``."""
    return source_uri.rsplit("#", 1)[1]


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Qrels from a BEIR tsv (``query-id corpus-id score``, header line, CRLF or LF line ends)."""
    qrels: dict[str, dict[str, int]] = {}
    text = path.read_text(encoding="utf-8")
    for number, row in enumerate(csv.reader(io.StringIO(text), delimiter="\t"), start=1):
        if not row or not "".join(row).strip():
            continue
        if number == 1 and row[0].strip().lower() in {"query-id", "query_id", "qid"}:
            continue
        if len(row) < 3:
            raise ValidationError("qrels", f"{path}: line {number}: expected 3 tab-separated columns, got {row!r}")
        qid, did, score = row[0].strip(), row[1].strip(), row[2].strip()
        try:
            qrels.setdefault(qid, {})[did] = int(float(score))
        except ValueError:
            raise ValidationError("qrels", f"{path}: line {number}: score {score!r} is not a number") from None
    return qrels


def load_queries(path: Path, wanted: set[str] | None = None) -> dict[str, str]:
    """Query id -> text (only the ``text`` field; ``metadata`` is never read), optionally only ``wanted`` ids."""
    queries: dict[str, str] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValidationError("queries", f"{path}: line {number}: invalid JSON ({exc.msg})") from None
            qid = str(record.get("_id", ""))
            if wanted is not None and qid not in wanted:
                continue
            queries[qid] = str(record.get("text", ""))
    return queries


def load_dataset(root: str | Path, split: str = "test") -> BeirDataset:
    """Load a BEIR dataset directory: the corpus path, the split's qrels and the queries judged in it.

    Raises:
        ValidationError: A missing file, or a judged query missing from ``queries.jsonl``.
    """
    base = Path(root).expanduser().resolve()
    corpus, queries_path, qrels_path = base / "corpus.jsonl", base / "queries.jsonl", base / "qrels" / f"{split}.tsv"
    for path in (corpus, queries_path, qrels_path):
        if not path.is_file():
            raise ValidationError(
                "dataset",
                f"{path} not found; expected the BEIR layout (corpus.jsonl, queries.jsonl, qrels/{split}.tsv)",
            )
    qrels = load_qrels(qrels_path)
    queries = load_queries(queries_path, set(qrels))
    missing = sorted(set(qrels) - set(queries))
    if missing:
        raise ValidationError(
            "queries", f"{len(missing)} judged query id(s) missing from {queries_path}: {missing[:5]}"
        )
    ordered = {qid: queries[qid] for qid in qrels}
    return BeirDataset(root=base, corpus=corpus, queries=ordered, qrels=qrels)
