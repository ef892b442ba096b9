"""``ragindex eval`` on a tiny BEIR dataset: JSON shape, metrics equal to pytrec_eval's, cached second run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragindex.cli import commands  # noqa: F401 - registers the commands
from ragindex.cli import eval as _eval  # noqa: F401 - registers eval
from ragindex.cli.app import app
from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.errors import SourceUnavailableError, ValidationError
from ragindex.eval.beir import load_dataset
from ragindex.eval.runner import parse_modes, percentile, run_eval

pytestmark = pytest.mark.integration

DOCS = {
    "d1": ("Volcanoes", "A volcano is an opening in the crust where molten rock, ash and gases escape."),
    "d2": ("Eruptions", "Explosive eruptions happen when gas-rich viscous magma fragments into ash."),
    "d3": ("Espresso", "Espresso is brewed by forcing hot water at nine bars through finely ground coffee."),
    "d4": ("Crema", "Crema, the golden foam on an espresso shot, comes from emulsified oils and carbon dioxide."),
    "d5": ("Tides", "Ocean tides are caused by the gravitational pull of the Moon and the Sun."),
    "d6": ("Spring tides", "Spring tides with the largest range occur at new and full moon."),
    "d7": ("Photosynthesis", "Plants turn sunlight, water and carbon dioxide into glucose and oxygen."),
    "d8": ("Chlorophyll", "Chlorophyll absorbs red and blue light and reflects green light."),
    "d9": ("Black holes", "A black hole is a region of spacetime where gravity prevents light from escaping."),
    "d10": ("Neutron stars", "Neutron stars are collapsed cores of massive stars, extremely dense."),
    "d11": ("Bread", "Yeast ferments sugars in dough, producing carbon dioxide that makes bread rise."),
    "d12": ("Sourdough", "Sourdough uses a starter of wild yeast and lactic acid bacteria."),
}
QUERIES = {
    "q1": ("what causes volcanic eruptions", {"d1": 1, "d2": 1}),
    "q2": ("how is espresso made", {"d3": 1, "d4": 1}),
    "q3": ("why do tides happen", {"d5": 1, "d6": 1}),
    "q4": ("how do plants make sugar from light", {"d7": 1}),
}


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "tiny-beir"
    (root / "qrels").mkdir(parents=True)
    with (root / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for doc_id, (title, text) in DOCS.items():
            handle.write(json.dumps({"_id": doc_id, "title": title, "text": text, "metadata": {}}) + "\n")
    with (root / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for qid, (text, grades) in QUERIES.items():
            # the metadata holds the answers (as in SciFact): the eval must never read it
            handle.write(json.dumps({"_id": qid, "text": text, "metadata": {"answers": list(grades)}}) + "\n")
        handle.write(json.dumps({"_id": "train-only", "text": "not judged in the test split"}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"]
    lines += [f"{qid}\t{doc}\t{grade}" for qid, (_, grades) in QUERIES.items() for doc, grade in grades.items()]
    (root / "qrels" / "test.tsv").write_bytes(("\r\n".join(lines) + "\r\n").encode())
    return root


def test_load_dataset_reads_test_split_and_only_query_text(dataset: Path) -> None:
    loaded = load_dataset(dataset)
    assert loaded.corpus == (dataset / "corpus.jsonl").resolve()
    assert loaded.queries == {qid: text for qid, (text, _) in QUERIES.items()}
    assert loaded.qrels == {qid: grades for qid, (_, grades) in QUERIES.items()}


def test_parse_modes() -> None:
    specs = parse_modes("dense, bm25,hybrid,hybrid:dbsf,dense,bm25:section,dense:chunk")
    assert [(s.name, s.mode, s.fusion, s.unit) for s in specs] == [
        ("dense", "dense", None, None),
        ("bm25", "bm25", None, None),
        ("hybrid", "hybrid", None, None),
        ("hybrid:dbsf", "hybrid", "dbsf", None),
        ("bm25:section", "bm25", None, "section"),
        ("dense:chunk", "dense", None, "chunk"),
    ]
    for bad in ("lexical", "dense:rrf", "hybrid:max", "hybrid:section", "bm25:page", "hybrid+boost", ""):
        with pytest.raises(ValidationError):
            parse_modes(bad)


def test_percentile_matches_linear_interpolation() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([10.0], 95) == 10.0
    assert percentile(list(map(float, range(1, 101))), 95) == pytest.approx(95.05)


def test_cli_eval_json_shape(dataset: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["--data-dir", str(tmp_path / "d"), "eval", str(dataset), "--modes", "dense,bm25,hybrid:dbsf", "--json"],
    )
    assert result.exit_code == 0, result.output
    payload: list[dict[str, Any]] = json.loads(result.stdout)
    assert [entry["mode"] for entry in payload] == ["dense", "bm25", "hybrid:dbsf"]
    for entry in payload:
        assert set(entry) >= {"mode", "ndcg@10", "recall@10", "recall@100", "mrr@10", "latency_ms"}
        assert set(entry["latency_ms"]) == {"p50", "p95"}
        assert 0.0 <= entry["latency_ms"]["p50"] <= entry["latency_ms"]["p95"]
        for name in ("ndcg@10", "recall@10", "recall@100", "mrr@10"):
            assert 0.0 <= entry[name] <= 1.0
        assert entry["queries"] == len(QUERIES)
        if entry["mode"] != "bm25":  # bm25 only scores documents sharing a term with the query
            assert entry["recall@100"] == 1.0  # 12 documents, top 100: every relevant one is retrieved
    table = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "d"), "eval", str(dataset), "--modes", "bm25"])
    assert table.exit_code == 0, table.output
    assert "nDCG@10" in table.stdout
    bad = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "d"), "eval", str(dataset), "--modes", "lexical"])
    assert bad.exit_code == 2


def test_eval_reports_the_unit_of_each_source_and_refuses_one_the_index_does_not_give(
    dataset: Path, tmp_path: Path
) -> None:
    data_dir = str(tmp_path / "d")
    modes = "dense:chunk,bm25:section,hybrid"
    result = CliRunner().invoke(app, ["--data-dir", data_dir, "eval", str(dataset), "--modes", modes, "--json"])
    assert result.exit_code == 0, result.output
    payload: list[dict[str, Any]] = json.loads(result.stdout)
    assert [(entry["mode"], entry["units"]) for entry in payload] == [
        ("dense:chunk", {"dense": "chunk"}),
        ("bm25:section", {"bm25": "section"}),
        ("hybrid", {"dense": "chunk", "bm25": "section"}),
    ]
    wide = {"COLUMNS": "160"}
    table = CliRunner().invoke(app, ["--data-dir", data_dir, "eval", str(dataset), "--modes", "bm25"], env=wide)
    assert table.exit_code == 0, table.output
    assert "bm25:section" in table.stdout

    for mode, fix in (("bm25:chunk", "RAGINDEX_SECTION_MAX_CHARS=0"), ("dense:section", "dense always scores chunks")):
        refused = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "e"), "eval", str(dataset), "--modes", mode])
        assert refused.exit_code == 2
        assert f"{mode.split(':')[0]} scores" in refused.output and fix in refused.output
    ingested: list[Any] = []
    with Engine(Settings(data_dir=tmp_path / "e")) as engine:
        with pytest.raises(ValidationError, match="bm25 scores sections"):
            run_eval(engine, dataset, "bm25:chunk", on_ingest=ingested.append)
        with pytest.raises(SourceUnavailableError, match="configure a sparse provider"):
            run_eval(engine, dataset, "dense,sparse", on_ingest=ingested.append)
    assert ingested == []  # both refused before the ingest

    with Engine(Settings(data_dir=tmp_path / "bm25-only", recall_enabled_sources="bm25")) as engine:
        (hybrid,) = run_eval(engine, dataset, "hybrid", top_k=10)
    assert hybrid.units == {"bm25": "section"}  # the sources hybrid ran, not every configured one

    with Engine(Settings(data_dir=tmp_path / "chunks", section_max_chars=0)) as engine:
        (only,) = run_eval(engine, dataset, "bm25:chunk", top_k=10)
    assert only.units == {"bm25": "chunk"} and only.metrics["ndcg@10"] > 0


def test_metrics_equal_pytrec_eval_and_second_eval_embeds_nothing(dataset: Path, tmp_path: Path) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    settings = Settings(data_dir=tmp_path / "engine")
    reports: list[Any] = []
    with Engine(settings) as engine:
        results = run_eval(engine, dataset, "dense,bm25,hybrid", top_k=100, on_ingest=reports.append)
    assert reports[0].chunks["embedded"] == reports[0].chunks["total"] > 0

    qrels = {qid: grades for qid, (_, grades) in QUERIES.items()}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_10", "recall_100", "recip_rank"})
    for result in results:
        assert set(result.run) == set(QUERIES)
        assert all(0 < len(docs) <= 100 for docs in result.run.values())
        per_query = evaluator.evaluate(result.run)
        ten = {
            qid: dict(sorted(docs.items(), key=lambda d: (d[1], d[0]), reverse=True)[:10])
            for qid, docs in result.run.items()
        }
        rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(ten)

        def mean(measure: str, values: dict[str, dict[str, float]] = per_query) -> float:
            return sum(v[measure] for v in values.values()) / len(values)

        assert result.metrics["ndcg@10"] == pytest.approx(mean("ndcg_cut_10"), abs=1e-12)
        assert result.metrics["recall@10"] == pytest.approx(mean("recall_10"), abs=1e-12)
        assert result.metrics["recall@100"] == pytest.approx(mean("recall_100"), abs=1e-12)
        assert result.metrics["mrr@10"] == pytest.approx(mean("recip_rank", rr), abs=1e-12)

    with Engine(settings) as engine:  # same data dir, same corpus and settings: nothing is re-embedded
        again = run_eval(engine, dataset, "hybrid", on_ingest=reports.append)
    assert reports[1].chunks["embedded"] == 0
    assert reports[1].documents["added"] == reports[1].documents["changed"] == 0
    assert again[0].metrics == results[2].metrics


def test_cli_eval_baseline_runs_the_whole_document_baseline_and_prints_the_deltas(
    dataset: Path, tmp_path: Path
) -> None:
    data_dir = str(tmp_path / "d")
    args = ["--data-dir", data_dir, "eval", str(dataset), "--modes", "dense,bm25,hybrid,hybrid:rrf", "--baseline"]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    payload: list[dict[str, Any]] = json.loads(result.stdout)
    modes = [entry["mode"] for entry in payload]
    assert modes == ["dense", "bm25", "hybrid", "hybrid:rrf", "baseline:dense", "baseline:bm25", "baseline:rrf"]
    rows = {entry["mode"]: entry for entry in payload}
    counterpart = {"dense": "baseline:dense", "bm25": "baseline:bm25", "hybrid": "baseline:rrf"}
    for mode in ("dense", "bm25", "hybrid", "hybrid:rrf"):
        vs = rows[mode]["vs_baseline"]
        assert vs["mode"] == counterpart[mode.split(":")[0]]
        for name in ("ndcg@10", "recall@10", "recall@100", "mrr@10"):
            assert vs[name] == pytest.approx(rows[mode][name] - rows[vs["mode"]][name], abs=2e-4)
    for name in ("baseline:dense", "baseline:bm25", "baseline:rrf"):
        assert rows[name]["latency_ms"] == {} and "vs_baseline" not in rows[name]
        assert rows[name]["queries"] == len(QUERIES) and 0 < rows[name]["ndcg@10"] <= 1
    # every document here is one chunk whose text is the whole record: the same model on the same text ranks alike
    assert rows["baseline:dense"]["ndcg@10"] == pytest.approx(rows["dense"]["ndcg@10"], abs=1e-4)

    table = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert "baseline:rrf" in table.stdout and "against the whole-document baseline" in table.stdout
    assert "Δ nDCG@10" in table.stdout
    refused = CliRunner().invoke(app, ["--data-dir", data_dir, "eval", "--reference", "x.json", "--baseline"])
    assert refused.exit_code == 2 and "--baseline" in refused.output


def test_baseline_bm25_counts_terms_and_ranks_by_whole_document_bm25(dataset: Path) -> None:
    from ragindex.eval.baseline import bm25_ranking, documents, term_frequencies

    (counts,) = term_frequencies(["lantern lantern lantern harbor"])
    assert sorted(counts.values()) == [1.0, 3.0]
    loaded = load_dataset(dataset)
    docs = documents(loaded)
    assert [d for d, _ in docs] == list(DOCS) and docs[0][1] == f"{DOCS['d1'][0]}\n\n{DOCS['d1'][1]}"
    ranking = bm25_ranking(docs, {"q": "espresso crema"}, 5)
    assert [d for d, _ in ranking["q"]][:2] == ["d4", "d3"]  # d4 has both terms
    assert all(score > 0 for _, score in ranking["q"])  # documents without a query term are not ranked


def test_cli_eval_baseline_on_a_small_real_corpus(tmp_path: Path) -> None:
    """60 answers of the Python FAQ and 40 of its questions (tests/fixtures/pyfaq): the whole CLI path."""
    pyfaq = Path(__file__).resolve().parents[1] / "fixtures" / "pyfaq"
    args = ["--data-dir", str(tmp_path / "d"), "eval", str(pyfaq), "--modes", "dense,bm25,hybrid", "--baseline"]
    result = CliRunner().invoke(app, [*args, "--top-k", "10", "--json"])
    assert result.exit_code == 0, result.output
    rows = {entry["mode"]: entry for entry in json.loads(result.stdout)}
    assert list(rows) == ["dense", "bm25", "hybrid", "baseline:dense", "baseline:bm25", "baseline:rrf"]
    assert all(entry["queries"] == 40 for entry in rows.values())
    for mode, other in (("dense", "baseline:dense"), ("bm25", "baseline:bm25"), ("hybrid", "baseline:rrf")):
        delta = rows[mode]["vs_baseline"]
        assert delta["mode"] == other
        assert delta["ndcg@10"] == pytest.approx(rows[mode]["ndcg@10"] - rows[other]["ndcg@10"], abs=2e-4)
    assert min(rows[m]["ndcg@10"] for m in rows) > 0.3  # a real corpus the models understand: no near-zero row
