"""eval: BEIR-style retrieval quality (nDCG@10, recall@10/100, MRR@10) and query latency per mode; pinned queries.

``ragindex eval --reference FILE [--pin QUERIES]`` pins a set of queries with their current hits, or re-checks them
(:mod:`ragindex.eval.reference`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ragindex.cli.app import app, console, emit_json, engine_for, err, guarded
from ragindex.cli.render import clean
from ragindex.errors import EXIT_MISMATCH, InputError

if TYPE_CHECKING:
    from ragindex.pipeline.sync import IngestReport


@app.command("eval")
def eval_command(
    dataset_dir: Annotated[
        Path | None,
        typer.Argument(help="BEIR dataset: corpus.jsonl, queries.jsonl, qrels/test.tsv (not with --reference)."),
    ] = None,
    modes: Annotated[
        str | None,
        typer.Option(
            "--modes",
            help="Comma-separated: dense, bm25, sparse, hybrid, hybrid:<fusion>, <source>:<unit> (bm25:section, "
            "dense:chunk), each optionally +rerank (default dense,bm25,hybrid; with --pin one mode, default hybrid).",
        ),
    ] = None,
    top_k: Annotated[
        int | None,
        typer.Option(
            "--top-k",
            help="Documents kept per query (default 100: recall@100 needs 100); with --pin, hits pinned per query "
            "(default RAGINDEX_DEFAULT_TOP_K).",
        ),
    ] = None,
    user_id: Annotated[int, typer.Option("--user-id", help="Tenant of the eval set (or of the pinned queries).")] = 1,
    set_id: Annotated[
        int | None,
        typer.Option("--set-id", help="The eval's own document set (default 9001); with --pin, the set searched (1)."),
    ] = None,
    limit_queries: Annotated[
        int | None, typer.Option("--limit-queries", help="Evaluate only the first N test queries.")
    ] = None,
    reference: Annotated[
        Path | None,
        typer.Option(
            "--reference",
            help="A reference file of pinned queries: search them again and compare with the pinned hits (exit 1 "
            "below --min-overlap or above --max-score-shift); with --pin, write it.",
        ),
    ] = None,
    pin: Annotated[
        Path | None,
        typer.Option(
            "--pin",
            help="With --reference: pin these queries (one a line, or JSON lines with `text` or `query`): write "
            "their current top-k chunk ids and scores, and the search options, to the --reference file.",
        ),
    ] = None,
    min_overlap: Annotated[
        float | None,
        typer.Option("--min-overlap", min=0, max=1, help="Default: RAGINDEX_DRIFT_MIN_OVERLAP (0.8)."),
    ] = None,
    max_score_shift: Annotated[
        float | None,
        typer.Option("--max-score-shift", min=0, help="Default: RAGINDEX_DRIFT_MAX_SCORE_SHIFT (0.1)."),
    ] = None,
    baseline: Annotated[
        bool,
        typer.Option(
            "--baseline",
            help="Also run the whole-document baseline (the same dense model and BM25 with k1 1.5 on whole "
            "documents, fused by RRF k=60) on the same queries and print each mode's difference from it.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Ingest a BEIR corpus into its own set (incremental: a rerun embeds nothing) and score every test query.

    With --reference FILE --pin QUERIES, pin the queries' current top-k hits into FILE; with --reference FILE alone,
    search them again and report overlap@k and score shift per query: exit code 1 when the mean overlap is under
    --min-overlap or the mean score shift over --max-score-shift.
    """
    if reference is not None:
        if dataset_dir is not None or limit_queries is not None or baseline:
            guarded(_refuse("a dataset directory, --limit-queries and --baseline do not go with --reference"))
        _reference(reference, pin, modes, top_k, user_id, set_id, min_overlap, max_score_shift, as_json)
        return
    if dataset_dir is None or pin is not None:
        guarded(_refuse("give a BEIR dataset directory, or --reference FILE (with --pin QUERIES to write it)"))
    assert dataset_dir is not None  # _refuse exited otherwise
    _beir(
        dataset_dir,
        modes or "dense,bm25,hybrid",
        top_k or 100,
        user_id,
        set_id or 9001,
        limit_queries,
        as_json,
        baseline=baseline,
    )


def _refuse(message: str) -> Callable[[], None]:
    def body() -> None:
        raise InputError(message)

    return body


def _beir(
    dataset_dir: Path,
    modes: str,
    top_k: int,
    user_id: int,
    set_id: int,
    limit_queries: int | None,
    as_json: bool,
    *,
    baseline: bool = False,
) -> None:
    from ragindex.eval.report import delta_table, eval_json, eval_table
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
                baseline=baseline,
                on_ingest=on_ingest,
            )
        if as_json:
            emit_json(eval_json(results))
        else:
            console.print(eval_table(results, title=clean(f"eval {dataset_dir.name}")))
            deltas = delta_table(results)
            if deltas is not None:
                console.print(deltas)

    guarded(body)


def _reference(
    file: Path,
    pin: Path | None,
    modes: str | None,
    top_k: int | None,
    user_id: int,
    set_id: int | None,
    min_overlap: float | None,
    max_score_shift: float | None,
    as_json: bool,
) -> None:
    from ragindex.eval import reference as ref
    from ragindex.eval.report import recheck_table
    from ragindex.eval.runner import parse_modes

    def pin_body() -> None:
        assert pin is not None  # only called with --pin
        specs = parse_modes(modes or "hybrid")
        if len(specs) != 1:
            raise InputError(f"--pin searches with one mode; got {len(specs)} ({modes})")
        spec = specs[0]
        queries = ref.read_queries(pin)
        with engine_for() as engine:
            pinned = ref.pin(
                engine,
                queries,
                mode=spec.mode,
                top_k=top_k,
                user_id=user_id,
                set_id=set_id or 1,
                fusion=spec.fusion,
                rerank=spec.rerank or None,
            )
        pinned.save(file)
        hits = sum(len(q.hits) for q in pinned.queries)
        summary = {"pinned": len(pinned.queries), "hits": hits, "reference": str(file), "mode": pinned.mode}
        if as_json:
            emit_json(summary)
        else:
            err.print(clean(f"pinned {len(pinned.queries)} queries ({hits} hits, {pinned.mode}) in {file}"))

    def check_body() -> bool:
        if modes is not None or top_k is not None or set_id is not None:
            raise InputError("--modes, --top-k and --set-id are read from the reference file when re-checking it")
        pinned = ref.ReferenceSet.load(file)
        with engine_for() as engine:
            report = ref.recheck(engine, pinned, min_overlap=min_overlap, max_score_shift=max_score_shift)
        if as_json:
            emit_json(report.to_dict())
        else:
            console.print(recheck_table(report, title=clean(f"reference {file.name}")))
        return report.ok

    if pin is not None:
        guarded(pin_body)
    elif not guarded(check_body):
        raise typer.Exit(EXIT_MISMATCH)


@app.command("calibrate")
def calibrate_command(
    user_id: Annotated[int, typer.Option("--user-id", help="Tenant of the set.")] = 1,
    set_id: Annotated[int, typer.Option("--set-id", help="The set to calibrate.")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """Measure the set's fusion weights on pseudo-queries drawn from its own documents, and record them.

    An ingest does this by itself when the set (of 200+ documents) has no calibration or changed by half since
    (RAGINDEX_FUSION_CALIBRATION); a hybrid search with the default fusion uses the weights and shows them in
    each hit's scores.
    """

    def body() -> None:
        with engine_for() as engine:
            calibration = engine.calibrate_fusion(user_id=user_id, set_id=set_id, force=True)
        if calibration is None:
            raise InputError(f"set {set_id} of user {user_id} has no documents to calibrate on; ingest some first")
        summary = {
            "user_id": user_id,
            "set_id": set_id,
            "fusion": calibration.fusion,
            "weights": dict(calibration.weights),
            "documents": calibration.documents,
            **dict(calibration.report),
        }
        if as_json:
            emit_json(summary)
        else:
            weights = ", ".join(f"{k} {v:g}" for k, v in calibration.weights.items())
            mrr = ", ".join(f"{k} {v:.3f}" for k, v in calibration.report.get("mrr@10", {}).items())
            err.print(
                clean(
                    f"set {set_id}: {calibration.fusion} weights {weights} "
                    f"({calibration.report.get('queries', 0)} pseudo-queries; MRR@10 alone: {mrr})"
                )
            )

    guarded(body)
