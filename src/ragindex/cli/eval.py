"""eval: BEIR-style retrieval quality (nDCG@10, recall@10/100, MRR@10) and query latency per mode."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ragindex.cli.app import app, console, emit_json, engine_for, err, guarded
from ragindex.cli.render import clean

if TYPE_CHECKING:
    from ragindex.pipeline.sync import IngestReport


@app.command("eval")
def eval_command(
    dataset_dir: Annotated[Path, typer.Argument(help="BEIR dataset: corpus.jsonl, queries.jsonl, qrels/test.tsv.")],
    modes: Annotated[
        str, typer.Option("--modes", help="Comma-separated: dense, bm25, sparse, hybrid, hybrid:<fusion>.")
    ] = "dense,bm25,hybrid",
    top_k: Annotated[int, typer.Option("--top-k", help="Documents kept per query (recall@100 needs 100).")] = 100,
    user_id: Annotated[int, typer.Option("--user-id", help="Tenant of the eval set.")] = 1,
    set_id: Annotated[int, typer.Option("--set-id", help="The eval's own document set.")] = 9001,
    limit_queries: Annotated[
        int | None, typer.Option("--limit-queries", help="Evaluate only the first N test queries.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Ingest a BEIR corpus into its own set (incremental: a rerun embeds nothing) and score every test query."""
    from ragindex.eval.report import eval_json, eval_table
    from ragindex.eval.runner import run_eval

    def on_ingest(report: IngestReport) -> None:
        docs, chunks = report.documents, report.chunks
        err.print(
            f"corpus: {docs['added']} added, {docs['changed']} changed, {docs['unchanged']} unchanged documents; "
            f"{chunks['total']} chunks, {chunks['embedded']} embedded ({report.duration_ms / 1000:.1f} s)",
            markup=False,
            highlight=False,
        )

    def body() -> None:
        with engine_for(json_text_fields=["title", "text"], json_id_field="_id") as engine:
            results = run_eval(
                engine,
                dataset_dir,
                modes,
                top_k=top_k,
                user_id=user_id,
                set_id=set_id,
                limit_queries=limit_queries,
                on_ingest=on_ingest,
            )
        if as_json:
            emit_json(eval_json(results))
        else:
            console.print(eval_table(results, title=clean(f"eval {dataset_dir.name}")))

    guarded(body)
